package history

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// TestSkimmer: a line skimmed keeps its structure and every short string,
// cuts the long ones at a whole character or escape, and stays valid
// JSON and UTF-8, whatever the cut falls on.
func TestSkimmer(t *testing.T) {
	long := strings.Repeat("a", skimString)
	for _, tail := range []string{"é", "😀", `\"`, `\\`, `\u00e9`, `\ud83d\ude00`, "ab"} {
		for pad := range 4 {
			s := long[:skimString-pad] + strings.Repeat(tail, 3) + "end"
			line := `{"short":"x\"y","long":"` + s + `","list":[1,{"k":"` + s + `"}],"after":"é"}`
			var sk skimmer
			sk.write([]byte(line)[:len(line)/2])
			sk.write([]byte(line)[len(line)/2:])
			if !gjson.ValidBytes(sk.out) || !utf8.Valid(sk.out) {
				t.Fatalf("tail %q pad %d: not valid: ...%s", tail, pad, sk.out[len(sk.out)-80:])
			}
			v := gjson.ParseBytes(sk.out)
			if v.Get("short").String() != `x"y` || v.Get("after").String() != "é" || v.Get("list.0").Int() != 1 {
				t.Errorf("tail %q pad %d: %s", tail, pad, sk.out[:40])
			}
			for _, k := range []string{"long", "list.1.k"} {
				got := v.Get(k).String()
				if len(got) < skimString-8 || len(got) > skimString+8 || !strings.HasPrefix(got, long[:skimString-pad]) {
					t.Errorf("tail %q pad %d: %s is %d bytes", tail, pad, k, len(got))
				}
			}
		}
	}
	// Beyond skimMax, the copy is cut: bounded, whatever the line.
	var sk skimmer
	sk.write([]byte("[" + strings.Repeat(`"x",`, skimMax)))
	if len(sk.out) != skimMax {
		t.Errorf("skimmed to %d bytes", len(sk.out))
	}
}

// FuzzSkimmer: any valid JSON skims to valid JSON, whatever the strings'
// bound.
func FuzzSkimmer(f *testing.F) {
	f.Add([]byte(`{"a":"b\u00e9\"","c":[1,2,{"d":null}]}`), 3)
	f.Add([]byte(`"\ud83d\ude00😀"`), 1)
	f.Fuzz(func(t *testing.T, data []byte, limit int) {
		if !gjson.ValidBytes(data) || !utf8.Valid(data) || len(data) > 1<<16 {
			return
		}
		var sk skimmer
		sk.limit = max(1, limit%64)
		sk.write(data)
		if !gjson.ValidBytes(sk.out) || !utf8.Valid(sk.out) {
			t.Fatalf("%q skims to %q", data, sk.out)
		}
	})
}
