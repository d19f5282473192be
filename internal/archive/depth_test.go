package archive

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"spbridge/internal/canonjson"
)

// nested returns a JSON value nested levels deep, objects and arrays by
// turns: {"s":[{"s":[…"x"…]}]}.
func nested(levels int) string {
	var open, closing strings.Builder
	for i := range levels {
		if i%2 == 0 {
			open.WriteString(`{"s":`)
		} else {
			open.WriteString(`[`)
		}
	}
	for i := levels - 1; i >= 0; i-- {
		if i%2 == 0 {
			closing.WriteString(`}`)
		} else {
			closing.WriteString(`]`)
		}
	}
	return open.String() + `"x"` + closing.String()
}

// hostFieldAt is a conversation.json whose only item carries a field the
// host wrote, nested so that the file nests depth levels (the file, items
// and the item are three of them).
func hostFieldAt(depth int) []byte {
	return []byte(`{"formatVersion":1,"items":[{"id":"A","type":"skillProposal","skill":` + nested(depth-3) + `}]}`)
}

// TestDeepConversationUnreadable checks that a conversation.json nested
// deeper than MaxConversationDepth opens as unreadable with the one notice,
// is kept byte-identical (never rewritten with its indentation), and that
// fsck says why.
func TestDeepConversationUnreadable(t *testing.T) {
	for name, data := range map[string][]byte{
		"one level past the bound": hostFieldAt(MaxConversationDepth + 1),
		// The report's file: 9,990 levels in 20 KB, which a save wrote as
		// 200 MB.
		"9,990 levels": []byte(`{"formatVersion":1,"future":` + strings.Repeat("[", 9989) + strings.Repeat("]", 9989) + `}`),
	} {
		t.Run(name, func(t *testing.T) {
			var de *canonjson.DepthError
			if _, err := Decode(data); !errors.As(err, &de) || de.Max != MaxConversationDepth {
				t.Fatalf("Decode = %v, want a *canonjson.DepthError at %d levels", err, MaxConversationDepth)
			}
			pkg := newPackage(t)
			writeAgentFile(t, pkg, "conversation.json", data)
			before := snapshot(t, pkg)
			p := mustOpen(t, pkg)
			want := fmt.Sprintf("%s (nested deeper than %d levels at byte %d).", UnreadableNotice, MaxConversationDepth, de.Offset)
			if !p.Preserved() || len(p.Conv.Items) != 1 || !strings.HasPrefix(p.Conv.Items[0].String("text"), want) {
				t.Fatalf("opened with items %v, want the one notice %q", p.Conv.Items, want)
			}
			for range 3 {
				if r := mustSave(t, p); r.Changed() {
					t.Errorf("save changed %+v", r)
				}
			}
			if !reflect.DeepEqual(snapshot(t, pkg), before) {
				t.Error("the agent folder changed")
			}
			rep, err := Inspect(pkg)
			if err != nil {
				t.Fatal(err)
			}
			wantProblem := fmt.Sprintf("agent/conversation.json: nested deeper than %d levels at byte %d, deeper than spbridge reads (it opens as unreadable)",
				MaxConversationDepth, de.Offset)
			if !reflect.DeepEqual(rep.Problems, []string{wantProblem}) {
				t.Errorf("fsck: %q, want %q", rep.Problems, wantProblem)
			}
			list, err := List(filepath.Dir(pkg))
			if err != nil || len(list) != 1 || !strings.HasPrefix(list[0].Unreadable, "nested deeper than") {
				t.Errorf("List = %+v, %v, want the package as unreadable", list, err)
			}
		})
	}
}

// TestConversationAtDepthBound checks that a conversation nested exactly
// MaxConversationDepth levels loads, keeps its host's field, and saves in a
// bounded size.
func TestConversationAtDepthBound(t *testing.T) {
	data := hostFieldAt(MaxConversationDepth)
	// Exactly at the bound: one level less refuses it.
	if _, err := canonjson.DecodeDepth(data, MaxConversationDepth-1); err == nil {
		t.Fatalf("the file nests less than %d levels", MaxConversationDepth)
	}
	pkg := newPackage(t)
	writeAgentFile(t, pkg, "conversation.json", data)
	p := mustOpen(t, pkg)
	if p.Unreadable != "" || len(p.Conv.Items) != 1 || p.Conv.Items[0].Get("skill") == nil {
		t.Fatalf("opened as %q with items %v", p.Unreadable, p.Conv.Items)
	}
	if r := mustSave(t, p); !reflect.DeepEqual(r.Written, []string{"agent/conversation.json"}) {
		t.Fatalf("save into the canonical form wrote %v", r.Written)
	}
	path := filepath.Join(pkg, "agent", "conversation.json")
	saved, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Two bytes of indentation a level on each of two lines a level.
	if limit := 2*MaxConversationDepth*MaxConversationDepth + 1<<20; len(saved) > limit {
		t.Errorf("saved %d bytes, want at most %d", len(saved), limit)
	}
	p2 := mustOpen(t, pkg)
	if p2.Unreadable != "" || !reflect.DeepEqual(p2.Conv.Items[0].Get("skill"), p.Conv.Items[0].Get("skill")) {
		t.Fatalf("reopen: unreadable %q", p2.Unreadable)
	}
	if r := mustSave(t, p2); r.Changed() {
		t.Errorf("save of the reopened conversation changed %+v", r)
	}
	if rep, err := Inspect(pkg); err != nil || len(rep.Problems) != 0 {
		t.Errorf("fsck: %v, %v", rep, err)
	}
}

// TestDeepConversationSavesInProportion: a conversation of many values
// nested near the bound (the report's: 1.5 MB nested 1,095 levels saved
// as 556 MB, which spbridge then refused to read) saves at a size
// proportional to what was read, not to its depth times it, reads back
// the same, and saves again unchanged; a conversation of ordinary depth is
// pretty-printed as before.
func TestDeepConversationSavesInProportion(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"formatVersion":1,"items":[`)
	for i := range 20 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"A%d","type":"skillProposal","skill":%s}`, i, nested(MaxConversationDepth-8))
	}
	b.WriteString(`]}`)
	data := []byte(b.String())
	pkg := newPackage(t)
	writeAgentFile(t, pkg, "conversation.json", data)
	p := mustOpen(t, pkg)
	if p.Unreadable != "" || len(p.Conv.Items) != 20 {
		t.Fatalf("opened as %q with %d items", p.Unreadable, len(p.Conv.Items))
	}
	mustSave(t, p)
	saved, err := os.ReadFile(filepath.Join(pkg, "agent", "conversation.json"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d bytes read saved as %d", len(data), len(saved))
	if limit := 4*len(data) + 64<<10; len(saved) > limit {
		t.Errorf("%d bytes read saved as %d, want at most %d", len(data), len(saved), limit)
	}
	p2 := mustOpen(t, pkg)
	if p2.Unreadable != "" || !reflect.DeepEqual(p2.Conv.Items[19].Get("skill"), p.Conv.Items[19].Get("skill")) {
		t.Fatalf("reopen: unreadable %q", p2.Unreadable)
	}
	if r := mustSave(t, p2); r.Changed() {
		t.Errorf("save of the reopened conversation changed %+v", r)
	}
	// Ordinary depth: one member a line, indented, to the innermost.
	shallow := hostFieldAt(12)
	conv, err := Decode(shallow)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := conv.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if want := "\n" + strings.Repeat("  ", 12) + `"s" : "x"`; !strings.Contains(string(enc), want) {
		t.Errorf("a conversation 12 levels deep is not pretty-printed to its innermost value:\n%s", enc)
	}
}
