package codex

import (
	"reflect"
	"slices"
	"testing"

	"github.com/tidwall/gjson"

	"spbridge/internal/backend"
)

// TestParseModels: model/list's entries become "default" (with the
// default model's efforts) and each visible model by its model name.
func TestParseModels(t *testing.T) {
	list := gjson.Parse(`[
	{"id":"gpt-a","model":"gpt-a","displayName":"GPT A","description":"fast","isDefault":true,"hidden":false,
	 "supportedReasoningEfforts":[{"reasoningEffort":"low","description":""},{"reasoningEffort":"high","description":""}],"defaultReasoningEffort":"low"},
	{"id":"gpt-h","model":"gpt-h","displayName":"Hidden","hidden":true,"supportedReasoningEfforts":[]},
	{"id":"gpt-b","model":"gpt-b","displayName":"","hidden":false,"supportedReasoningEfforts":[]}]`).Array()
	want := []backend.Model{
		{ID: "default", Name: "Default (GPT A)", Efforts: []string{"low", "high"}, DefaultEffort: "low"},
		{ID: "gpt-a", Name: "GPT A", Description: "fast", Efforts: []string{"low", "high"}, DefaultEffort: "low"},
		{ID: "gpt-b", Name: "gpt-b"},
	}
	if got := parseModels(list); !reflect.DeepEqual(got, want) {
		t.Errorf("parseModels = %+v, want %+v", got, want)
	}
}

// TestEffort: exec gets -c model_reasoning_effort; the app-server's
// turn/start gets effort once when it changes, and the model's default
// when it goes back to codex's own.
func TestEffort(t *testing.T) {
	b := New(Options{Transport: TransportExec})
	if got := b.Models(); len(got) != 1 || got[0].ID != "default" {
		t.Errorf("Models() before the app-server = %+v", got)
	}
	b.SetEffort("high")
	if a := b.args(nil); !slices.Contains(a, `model_reasoning_effort="high"`) {
		t.Errorf("args() = %q", a)
	}
	b.models = []backend.Model{{ID: "default", DefaultEffort: "medium"}, {ID: "gpt-a", DefaultEffort: "low"}}
	var got []string
	for _, e := range []string{"high", "high", "", "", "low"} {
		b.SetEffort(e)
		got = append(got, b.turnEffort())
	}
	if want := []string{"high", "", "medium", "", "low"}; !slices.Equal(got, want) {
		t.Errorf("turn efforts %q, want %q", got, want)
	}
}
