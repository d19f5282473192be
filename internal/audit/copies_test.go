package audit

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLogFor: the log a package's turn goes to: the log its conversation
// names while the package is the one that wrote its last record (also
// under another path to the same folder), or the folder that did is gone
// (moved); a new log, with the head it was copied at, when that folder
// still holds a conversation (a copy). A log the index names no package
// for (new, or written by an earlier version) goes on.
func TestLogFor(t *testing.T) {
	state := t.TempDir()
	root := t.TempDir()
	pkg := func(name string) string {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Join(p, "agent"), 0o755)
		os.WriteFile(filepath.Join(p, "agent", "conversation.json"), []byte("{}"), 0o644)
		return p
	}
	const id = "0D7E8C55-0F3A-4E7B-8D61-2B9A0C1D2E30"
	orig := pkg("a")
	if got, parent, err := LogFor(state, id, orig); got != id || parent != nil || err != nil {
		t.Fatalf("no state yet: %s %v %v", got, parent, err)
	}
	path, _ := Path(state, id)
	// An earlier version's record: no package.
	if err := Append(path, map[string]any{"user": "old"}); err != nil {
		t.Fatal(err)
	}
	if got, parent, _ := LogFor(state, id, pkg("other")); got != id || parent != nil {
		t.Errorf("a log with no package named: %s %v", got, parent)
	}
	if err := Append(path, map[string]any{"user": "one", FieldPackage: orig}); err != nil {
		t.Fatal(err)
	}
	if got, parent, _ := LogFor(state, id, orig); got != id || parent != nil {
		t.Errorf("the same package: %s %v", got, parent)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(orig, link); err == nil {
		if got, parent, _ := LogFor(state, id, link); got != id || parent != nil {
			t.Errorf("the same folder by a link: %s %v", got, parent)
		}
	}
	cp := pkg("b")
	got, parent, err := LogFor(state, id, cp)
	if err != nil || got == id || !identityRE.MatchString(got) || parent == nil || parent.ID != id || parent.Records != 2 || parent.Package != orig {
		t.Fatalf("a copy: %s %+v %v", got, parent, err)
	}
	heads, _ := Heads(state)
	if len(heads) != 1 || parent.Last != heads[0].Last {
		t.Errorf("the copy's parent head %+v, the log's %+v", parent.Head, heads)
	}
	rec := map[string]any{FieldCopiedFrom: parent.Value()}
	if back, ok := ParentOf(rec); !ok || back != *parent {
		t.Errorf("ParentOf(Value()) = %+v %v, want %+v", back, ok, *parent)
	}
	// Moved: the folder that wrote the last record is gone.
	moved := filepath.Join(root, "moved")
	if err := os.Rename(orig, moved); err != nil {
		t.Fatal(err)
	}
	if got, parent, _ := LogFor(state, id, moved); got != id || parent != nil {
		t.Errorf("a moved package: %s %v", got, parent)
	}
	for _, bad := range []map[string]any{{}, {FieldCopiedFrom: "x"}, {FieldCopiedFrom: map[string]any{"log": "../x", "records": "1"}}, {FieldCopiedFrom: map[string]any{"log": id}}} {
		if _, ok := ParentOf(bad); ok {
			t.Errorf("ParentOf(%v) ok", bad)
		}
	}
}
