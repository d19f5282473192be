package canonjson

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// TestDecodeSharesKeys: the objects of one input share the memory of their
// equal keys, and keys that are not shared (escaped, long) read the same.
func TestDecodeSharesKeys(t *testing.T) {
	long := strings.Repeat("k", maxKeyLen+1)
	in := `[{"id":1,"a\u00e9":2,"` + long + `":3},{"id":4,"aé":5,"` + long + `":6}]`
	v, err := Decode([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	objs := v.([]any)
	keyData := func(m any, want string) *byte {
		for k := range m.(map[string]any) {
			if k == want {
				return unsafe.StringData(k)
			}
		}
		t.Fatalf("no key %q in %v", want, m)
		return nil
	}
	if keyData(objs[0], "id") != keyData(objs[1], "id") {
		t.Error(`the two "id" keys do not share their memory`)
	}
	want := []any{
		map[string]any{"id": json.Number("1"), "aé": json.Number("2"), long: json.Number("3")},
		map[string]any{"id": json.Number("4"), "aé": json.Number("5"), long: json.Number("6")},
	}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("Decode(%q) = %v, want %v", in, v, want)
	}
}

// TestDecodeSharesShortValues: equal short string values of one input are
// one string, and every string reads as written.
func TestDecodeSharesShortValues(t *testing.T) {
	long := strings.Repeat("v", maxValLen+1)
	in := `[{"t":"tool","u":"é","l":"` + long + `","e":"a\nb","x":""},{"t":"tool","u":"é","l":"` + long + `","e":"a\nb","x":""}]`
	v, err := Decode([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	objs := v.([]any)
	a, b := objs[0].(map[string]any)["t"].(string), objs[1].(map[string]any)["t"].(string)
	if unsafe.StringData(a) != unsafe.StringData(b) {
		t.Error(`the two "tool" values do not share their memory`)
	}
	want := map[string]any{"t": "tool", "u": "é", "l": long, "e": "a\nb", "x": ""}
	if !reflect.DeepEqual(v, []any{want, want}) {
		t.Errorf("Decode(%q) = %v", in, v)
	}
}
