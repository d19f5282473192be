package search

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseQuery(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string // the engine's query
	}{
		{"headline", `"headline"`},
		{"Make  the\tHeadline", `"make" AND "the" AND "headline"`},
		{`"spring sale" blue`, `"spring sale" AND "blue"`},
		{`test*`, `"test"*`},
		{`foo.bar(baz)`, `"foo bar baz"`},
		{`a OR b NOT c`, `"a" AND "or" AND "b" AND "not" AND "c"`},
		{`^[a-z]+$ \d{3}`, `"a z" AND "d 3"`},
		{`"unclosed quote`, `"unclosed quote"`},
		{`col:umn -neg +pos`, `"col umn" AND "neg" AND "pos"`},
		{`"a ""b`, `"a" AND "b"`},
		{`Ärger CAFÉ`, `"arger" AND "cafe"`},
		{"bad\xffbyte", `"bad" AND "byte"`},
	} {
		q, err := ParseQuery(c.in)
		if err != nil {
			t.Errorf("ParseQuery(%q): %v", c.in, err)
			continue
		}
		if got := q.fts(); got != c.want {
			t.Errorf("ParseQuery(%q).fts() = %s, want %s", c.in, got, c.want)
		}
	}
	for _, in := range []string{"", "   ", `""`, "*", "&& || !", "-- ++ ()"} {
		if _, err := ParseQuery(in); !errors.Is(err, ErrEmptyQuery) {
			t.Errorf("ParseQuery(%q) = %v, want ErrEmptyQuery", in, err)
		}
	}
	if _, err := ParseQuery(strings.Repeat("a", MaxQuery+1)); err == nil || !strings.Contains(err.Error(), "at most 1024") {
		t.Errorf("a huge query: %v", err)
	}
	if _, err := ParseQuery(strings.Repeat("w ", MaxTerms+1)); err == nil || !strings.Contains(err.Error(), "terms") {
		t.Errorf("too many terms: %v", err)
	}
}

func TestSnippets(t *testing.T) {
	q, _ := ParseQuery("colour blue*")
	segs := []Segment{
		{"User", "first line\nMake the colour bluer please\nlast line"},
		{"Assistant", "Nothing here.\nThe colour is set."},
		{"Tool Bash", strings.Repeat("pad ", 200) + "then blue " + strings.Repeat("more ", 200)},
		{"Assistant", "a Blue café"},
	}
	got := snippets(q, segs, 3)
	var marked []string
	for _, s := range got {
		marked = append(marked, s.Label+": "+s.Marked("[", "]"))
	}
	want := []string{
		"User: Make the [colour] [bluer] please",
		"Assistant: The [colour] is set.",
		"Tool Bash: …" + strings.Repeat("pad ", 13) + "then [blue] " + strings.TrimSuffix(strings.Repeat("more ", 27), " ") + "…",
	}
	if !reflect.DeepEqual(marked, want) {
		t.Errorf("snippets\n got %q\nwant %q", marked, want)
	}
	for _, s := range got {
		if len(s.Text) > snippetLen+2*len("…") {
			t.Errorf("snippet of %d bytes", len(s.Text))
		}
	}
	// Diacritics and case in another script.
	q, _ = ParseQuery("ÉTÉ")
	got = snippets(q, []Segment{{"User", "un été chaud"}}, 3)
	if len(got) != 1 || got[0].Marked("[", "]") != "un [été] chaud" {
		t.Errorf("été: %+v", got)
	}
	// A prefix that is a whole word of a phrase elsewhere, overlapping
	// matches: each word marked once.
	q, _ = ParseQuery(`"go test" go*`)
	got = snippets(q, []Segment{{"Tool Bash", "go test ./... && gofmt"}}, 3)
	if len(got) != 1 || got[0].Marked("[", "]") != "[go] [test] ./... && [gofmt]" {
		t.Errorf("overlaps: %+v", got)
	}
}

func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{"headline", `"a b" c*`, `^[a-z]+$`, "\xff", `""""`, "NOT OR AND", "a:b", strings.Repeat("x ", 40)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := ParseQuery(s)
		if err != nil {
			return
		}
		fts := q.fts()
		if !utf8.ValidString(fts) || strings.Count(fts, `"`)%2 != 0 {
			t.Fatalf("query %q gave %q", s, fts)
		}
		for _, term := range q.Terms {
			for _, w := range term.Words {
				if w == "" || strings.ContainsAny(w, "\"*:^()+-") {
					t.Fatalf("query %q: word %q", s, w)
				}
			}
		}
		snippets(q, []Segment{{"User", s}, {"Assistant", strings.ToUpper(s)}}, 3)
	})
}

func FuzzSnippets(f *testing.F) {
	f.Add("colour", "Make the colour blue\nand \xffmore")
	f.Add("été*", "un ÉTÉ chaud\n\n")
	f.Add(`"a b"`, "a b a\nb")
	f.Fuzz(func(t *testing.T, query, text string) {
		q, err := ParseQuery(query)
		if err != nil {
			return
		}
		for _, s := range snippets(q, []Segment{{"User", text}}, 3) {
			last := 0
			for _, m := range s.Matches {
				if m[0] < last || m[1] <= m[0] || m[1] > len(s.Text) {
					t.Fatalf("bad match %v in %q", m, s.Text)
				}
				last = m[1]
			}
			s.Marked("[", "]")
		}
	})
}

func FuzzDecodeSegments(f *testing.F) {
	data, _ := encodeSegments([]Segment{{"User", "hello"}, {"Assistant", "hi"}})
	f.Add(data)
	f.Add([]byte{})
	f.Add([]byte("not flate"))
	f.Fuzz(func(t *testing.T, data []byte) {
		decodeSegments(data) // no panic, bounded memory
	})
}
