package jsonline

import (
	"bytes"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// checkDoc parses line with a Doc and checks that it accepts exactly what
// Valid accepts, and that every value in it reads as gjson reads it:
// the same type, raw text, string, number, Int, Bool and String, the same
// fields and elements in the same order, and the same value for each
// field looked up by name.
func checkDoc(t *testing.T, line []byte) {
	t.Helper()
	var d Doc
	ok := d.Parse(line)
	if want := Valid(line); ok != want {
		t.Fatalf("parse %q = %v, Valid %v", line, ok, want)
	}
	if !ok {
		return
	}
	g := gjson.Parse(string(line))
	g.Raw = strings.TrimRight(g.Raw, " \t\r\n")
	compareValue(t, "$", d.Root(), g, 0)
}

func compareValue(t *testing.T, path string, v Value, g gjson.Result, depth int) {
	t.Helper()
	r := v.Result()
	if r.Type != g.Type || r.Raw != g.Raw || r.Str != g.Str || !sameFloat(r.Num, g.Num) {
		t.Fatalf("%s: read %#v, gjson %#v", path, r, g)
	}
	if v.Exists() != g.Exists() || v.String() != g.String() || v.Int() != g.Int() || v.Bool() != g.Bool() ||
		!sameFloat(v.Float(), g.Float()) || v.IsObject() != g.IsObject() || v.IsArray() != g.IsArray() ||
		v.Raw() != g.Raw || v.Type() != g.Type {
		t.Fatalf("%s: read %q %d %v, gjson %q %d %v", path, v.String(), v.Int(), v.Bool(), g.String(), g.Int(), g.Bool())
	}
	if depth > 50 {
		return // deep enough: gjson recurses too
	}
	type kv struct {
		k string
		v gjson.Result
	}
	var want []kv
	g.ForEach(func(k, x gjson.Result) bool {
		want = append(want, kv{k.String(), x})
		return true
	})
	n := 0
	v.ForEach(func(k, x Value) bool {
		if !v.IsObject() && !v.IsArray() {
			if x != v || k.Exists() {
				t.Fatalf("%s: ForEach of a scalar gives another value", path)
			}
			n++
			return true
		}
		if n >= len(want) {
			t.Fatalf("%s: more values than gjson's %d", path, len(want))
		}
		if v.IsObject() && k.String() != want[n].k {
			t.Fatalf("%s: key %d is %q, gjson %q", path, n, k.String(), want[n].k)
		}
		compareValue(t, path+"."+want[n].k, x, want[n].v, depth+1)
		n++
		return true
	})
	if n != len(want) {
		t.Fatalf("%s: %d values, gjson %d", path, n, len(want))
	}
	if a, ga := v.Array(), g.Array(); len(a) != len(ga) {
		t.Fatalf("%s: Array has %d, gjson %d", path, len(a), len(ga))
	} else {
		for i := range a {
			if a[i].Raw() != ga[i].Raw {
				t.Fatalf("%s: Array[%d] is %q, gjson %q", path, i, a[i].Raw(), ga[i].Raw)
			}
		}
	}
	if !v.IsObject() {
		return
	}
	for _, w := range want {
		if !plainKey(w.k) {
			continue
		}
		got, exp := v.Get(w.k), g.Get(w.k)
		if got.Raw() != exp.Raw || got.Type() != exp.Type {
			t.Fatalf("%s: Get(%q) = %q, gjson %q", path, w.k, got.Raw(), exp.Raw)
		}
		var f [2]Value
		v.ReadFields([]string{"zz-none", w.k}, f[:])
		if f[0].Exists() || f[1].Raw() != exp.Raw {
			t.Fatalf("%s: ReadFields(%q) = %q, gjson %q", path, w.k, f[1].Raw(), exp.Raw)
		}
	}
	if got := v.Get("zz-none"); got.Exists() {
		t.Fatalf("%s: a missing field reads %q", path, got.Raw())
	}
}

// plainKey reports whether gjson reads key as a plain name in a path.
func plainKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= '0' && c <= '9' && i > 0) {
			return false
		}
	}
	return true
}

func sameFloat(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

var docLines = []string{
	`{}`, `[]`, ` { } `, `{"a":1,"a":2}`, `{"typ\u0065":"x","type":"y"}`, `{"a":"\ud83d\ude00 \ud800 \udc00x \u00e9\n\t\"\\\/"}`,
	`{"a":[1,-2.5e3,0,-0,1e400,true,false,null,"s",{},[]],"b":{"c":{"d":[{"e":"f"}]}}}`,
	`"str"`, `12`, `-0.5`, `true`, `null`, `{"a":12345678901234567890}`, `{"a":-9007199254740993}`,
	`{"a" : [ 1 , 2 ] , "b" : { } }`, `{"a":"x\u0000y"}`, `{"n":"1.5"}`, `{"n":"TRUE"}`, "{\"a\":\"\xff\xfe\"}",
	`{"a":1,}`, `{"a"}`, `[1,]`, `{"a":tru}`, `{"a":01}`, `{"a":"\x"}`, `{"a":"` + "\t" + `"}`, `{"a":1]`, `[1}`,
}

func TestJSONDocReadsAsGJSON(t *testing.T) {
	for _, l := range docLines {
		checkDoc(t, []byte(l))
	}
	for _, l := range deepLines() {
		checkDoc(t, l)
	}
	for _, f := range claudeStreams(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range bytes.Split(data, []byte("\n")) {
			checkDoc(t, l)
		}
	}
}

// FuzzJSONDoc checks on any input that a Doc accepts what Valid
// accepts and reads every value as gjson does.
func FuzzJSONDoc(f *testing.F) {
	for _, l := range docLines {
		f.Add([]byte(l))
	}
	for _, file := range claudeStreams(f) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, l := range bytes.Split(data, []byte("\n")) {
			if len(l) < 4<<10 {
				f.Add(l)
			}
		}
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		checkDoc(t, line)
	})
}
