package codex

import (
	"reflect"
	"testing"

	"github.com/tidwall/gjson"

	"spbridge/internal/backend"
)

// TestFastSwitch: a model/list entry with the fast service tier
// ("priority", as codex 0.169.0 lists it) takes the fast switch, on when
// it is the model's default tier, and "default" takes its default
// model's; turn/start carries serviceTierForTurn only once the switch was
// chosen: "priority" on, "default" off.
func TestFastSwitch(t *testing.T) {
	list := gjson.Parse(`[
	{"model":"gpt-a","displayName":"GPT A","isDefault":true,"serviceTiers":[{"id":"priority","name":"Fast","description":"1.5x speed"}],"defaultServiceTier":null},
	{"model":"gpt-b","displayName":"GPT B","serviceTiers":[{"id":"priority","name":"Fast","description":"2x speed"}],"defaultServiceTier":"priority"},
	{"model":"gpt-c","displayName":"GPT C","serviceTiers":[]}]`).Array()
	models := parseModels(list)
	want := [][]backend.Switch{
		{{ID: SwitchFast, Name: "Fast", Description: "1.5x speed"}},
		{{ID: SwitchFast, Name: "Fast", Description: "1.5x speed"}},
		{{ID: SwitchFast, Name: "Fast", Description: "2x speed", Default: true}},
		nil,
	}
	for i, m := range models {
		if !reflect.DeepEqual(m.Switches, want[i]) {
			t.Errorf("%s: switches %+v, want %+v", m.ID, m.Switches, want[i])
		}
	}
	b := New(Options{})
	tier := func() any {
		params := map[string]any{}
		b.turnSettings(params)
		return params["serviceTierForTurn"]
	}
	if got := tier(); got != nil {
		t.Errorf("not chosen: serviceTierForTurn %v", got)
	}
	b.SetSwitch(SwitchFast, true)
	if got := tier(); got != "priority" {
		t.Errorf("on: serviceTierForTurn %v", got)
	}
	b.SetSwitch(SwitchFast, false)
	if got := tier(); got != "default" {
		t.Errorf("off: serviceTierForTurn %v", got)
	}
	b.SetSwitch("other", true)
	if got := tier(); got != "default" {
		t.Errorf("an unknown switch changed the tier: %v", got)
	}
}
