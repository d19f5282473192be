package claude

import (
	"testing"

	"github.com/tidwall/gjson"
)

// TestIsType: the type read from a line's first bytes is the one gjson
// finds.
func TestIsType(t *testing.T) {
	for _, line := range []string{
		`{"type":"system","subtype":"init"}`,
		`{"type":"system"}`,
		`{"type":"systemx"}`,
		`{"type":"syst"}`,
		`{"type":"sys\u0074em"}`,
		`{"type":"control_response","response":{}}`,
		`{"subtype":"init","type":"system"}`,
		`{ "type": "system"}`,
		`{"type":"system`,
		`{"type":"`,
		`{"type":"\"system"}`,
		`{"type":""}`,
		`{"type":1}`,
		``,
		`not json`,
	} {
		for _, typ := range []string{"system", "control_response", ""} {
			want := gjson.Get(line, "type").String() == typ
			if got := isType([]byte(line), typ); got != want {
				t.Errorf("isType(%s, %q) = %v, want %v", line, typ, got, want)
			}
		}
	}
}
