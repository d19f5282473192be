package itemmap

import (
	"strings"
	"testing"

	"spbridge/internal/archive"
)

func TestApplyCost(t *testing.T) {
	u := archive.Usage{Input: "1000000", Output: "100000"}
	tests := []struct {
		name  string
		ends  []*TurnEnd
		kind  string
		total string
	}{
		{"reported", []*TurnEnd{{Status: "completed", Usage: u, CostUSD: "0.5"}, {Status: "completed", Usage: u, CostUSD: "0.25"}}, archive.CostReported, "0.75"},
		{"estimated from the table", []*TurnEnd{{Status: "completed", Usage: u, Model: "gpt-5"}}, archive.CostEstimated, "2.25"},
		{"reported then estimated", []*TurnEnd{{Status: "completed", Usage: u, CostUSD: "0.5"}, {Status: "completed", Usage: u, Model: "gpt-5"}}, archive.CostEstimated, "2.75"},
		{"a model not in the table", []*TurnEnd{{Status: "completed", Usage: u, Model: "gpt-5.5"}}, archive.CostUnknown, ""},
		{"unknown stays unknown", []*TurnEnd{{Status: "completed", Usage: u, Model: "gpt-5.5"}, {Status: "completed", Usage: u, CostUSD: "1"}}, archive.CostUnknown, ""},
	}
	for _, tt := range tests {
		c := &archive.Conversation{}
		for _, e := range tt.ends {
			Apply(c, e, "codex")
		}
		if c.EstimatedCost.Kind != tt.kind || string(c.EstimatedCost.Dollars) != tt.total {
			t.Errorf("%s: cost %+v, want %s %s", tt.name, c.EstimatedCost, tt.kind, tt.total)
		}
	}
}

// TestApplyChange: an add appends, an update leaves the items as they
// are (the mapper changed the item in place), a removal takes out the
// last item of the id.
func TestApplyChange(t *testing.T) {
	item := func(id, text string) archive.Item {
		return archive.ItemFromMap(map[string]any{"id": id, "type": archive.TypeNotice, "text": text})
	}
	c := &archive.Conversation{}
	a, b := item("a", "one"), item("b", "two")
	ApplyChange(c, Change{Op: OpAdd, Item: a})
	ApplyChange(c, Change{Op: OpAdd, Item: b})
	ApplyChange(c, Change{Op: OpAdd, Item: item("a", "three")})
	ApplyChange(c, Change{Op: OpUpdate, Item: item("b", "changed")})
	ApplyChange(c, Change{Op: OpRemove, Item: item("a", "")})
	ApplyChange(c, Change{Op: OpRemove, Item: item("none", "")})
	var got []string
	for _, it := range c.Items {
		got = append(got, it.ID()+" "+it.String("text"))
	}
	if s := strings.Join(got, ","); s != "a one,b two" {
		t.Errorf("items %q, want %q", s, "a one,b two")
	}
}
