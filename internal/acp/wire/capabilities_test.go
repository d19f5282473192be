package wire

import (
	"encoding/json"
	"testing"
)

// TestReadCapabilities: each client capability spbridge reads is on only
// when given as ACP gives it, and one not of its type leaves the others
// read.
func TestReadCapabilities(t *testing.T) {
	type flags struct{ items, terminal, auth, notices, compaction, forms bool }
	for _, tc := range []struct {
		params string
		want   flags
	}{
		{`{"protocolVersion":1}`, flags{}},
		{`{"clientCapabilities":{"_meta":{"spbridge":{"items":true},"terminal_output":true},"auth":{"terminal":true},"session":{"notices":{},"compaction":{}},"elicitation":{"form":{}}}}`,
			flags{true, true, true, true, true, true}},
		{`{"clientCapabilities":{"session":{"notices":true,"compaction":[]},"elicitation":{"form":null,"url":{}}}}`, flags{}},
		{`{"clientCapabilities":{"_meta":{"spbridge":{"items":"yes"},"terminal_output":true},"auth":5,"session":{"notices":{}}}}`,
			flags{terminal: true, notices: true}},
		{`{"clientCapabilities":"all"}`, flags{}},
		{`{"clientCapabilities":{"_meta":{"spbridge":{"items":true}}`, flags{}}, // not JSON
	} {
		c := ReadCapabilities(json.RawMessage(tc.params))
		got := flags{c.Meta.Spbridge.Items, c.Meta.TerminalOutput, c.Auth.Terminal, IsObject(c.Session.Notices), IsObject(c.Session.Compaction),
			IsObject(c.Elicitation.Form)}
		if got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.params, got, tc.want)
		}
	}
}
