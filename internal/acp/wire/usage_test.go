package wire

import (
	"encoding/json"
	"reflect"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/itemmap"
)

// TestUsageUpdate: the tokens in context after the last request, the
// window the CLI reported (else the model's from the table) and a known
// cost; no update without a window or without tokens.
func TestUsageUpdate(t *testing.T) {
	end := &itemmap.TurnEnd{LastRound: archive.Usage{Input: "10", CacheRead: "5", CacheWrite: "-3", Output: json.Number("x")}, ContextWindow: 1000}
	asJSON := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	want := `{"cost":{"amount":0.25,"currency":"USD"},"sessionUpdate":"usage_update","size":1000,"used":15}`
	if got := asJSON(UsageUpdate(end, archive.Cost{Kind: archive.CostReported, Dollars: "0.25"})); got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	want = `{"sessionUpdate":"usage_update","size":1000,"used":15}`
	if got := asJSON(UsageUpdate(end, archive.Cost{Kind: archive.CostUnknown})); got != want {
		t.Errorf("unknown cost: got %s, want %s", got, want)
	}
	if got := UsageUpdate(&itemmap.TurnEnd{LastRound: end.LastRound, Model: "no-such-model"}, archive.Cost{}); got != nil {
		t.Errorf("no window: %v", got)
	}
	if got := UsageUpdate(&itemmap.TurnEnd{ContextWindow: 1000}, archive.Cost{}); got != nil {
		t.Errorf("no tokens: %v", got)
	}
	if got := PromptUsage(archive.Usage{Input: "7", Output: "2", CacheRead: "1"}); !reflect.DeepEqual(got,
		map[string]any{"totalTokens": int64(10), "inputTokens": int64(7), "outputTokens": int64(2), "cachedReadTokens": int64(1)}) {
		t.Errorf("prompt usage %v", got)
	}
}
