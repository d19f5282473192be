package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/sessionindex"
)

// savePackage saves a package at dir holding the user's and the
// assistant's messages given, in turn.
func savePackage(t *testing.T, dir string, texts ...string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p, err := archive.Open(dir, archive.KindDocument, true)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range texts {
		typ := archive.TypeUser
		if i%2 == 1 {
			typ = archive.TypeAssistant
		}
		it := archive.NewItem(typ)
		it.Set("text", s)
		p.Conv.Items = append(p.Conv.Items, it)
	}
	if _, err := p.Save(true); err != nil {
		t.Fatal(err)
	}
}

// TestConversationSearchPackages searches the packages the sessions index
// keeps: ranked, with snippets and the command that shows each, a
// folder's alone with --cwd, a new turn found without a rebuild.
func TestConversationSearchPackages(t *testing.T) {
	state := t.TempDir()
	t.Setenv("SPBRIDGE_STATE_DIR", state)
	docs := t.TempDir()
	six := sessionindex.New(state)
	add := func(name, cwd string, texts ...string) string {
		pkg := filepath.Join(docs, name)
		savePackage(t, pkg, texts...)
		if err := six.Touch(pkg, cwd, nil); err != nil {
			t.Fatal(err)
		}
		if err := six.Record(pkg, cwd, texts[0]); err != nil {
			t.Fatal(err)
		}
		return pkg
	}
	poster := add("Poster.silverpoint", "/work/a", "Make the headline shorter", "The headline now reads Spring sale; the headline font is bigger.")
	add("Flyer.silverpoint", "/work/b", "Colour the background", "Done: the background is blue and the headline white.")
	// A package the index keeps that is gone is not searched.
	gone := add("Gone.silverpoint", "/work/a", "headline gone")
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := runCmd(t, "conversation", "search", "headline")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := poster + "\t"
	if !strings.HasPrefix(out, want) {
		t.Fatalf("the best is not the poster:\n%s", out)
	}
	blocks := strings.Split(strings.TrimSuffix(out, "\n"), "\n\n")
	if len(blocks) != 2 {
		t.Fatalf("%d conversations, want 2:\n%s", len(blocks), out)
	}
	lines := strings.Split(blocks[0], "\n")
	wantLines := []string{
		"  User: Make the »headline« shorter",
		"  Assistant: The »headline« now reads Spring sale; the »headline« font is bigger.",
		"  spbridge conversation show " + shellQuote(poster),
	}
	if strings.Join(lines[1:], "\n") != strings.Join(wantLines, "\n") {
		t.Errorf("the poster's lines:\n%s\nwant\n%s", strings.Join(lines[1:], "\n"), strings.Join(wantLines, "\n"))
	}
	if !strings.HasSuffix(lines[0], "\tMake the headline shorter") {
		t.Errorf("the poster's title line: %q", lines[0])
	}

	code, out, _ = runCmd(t, "conversation", "search", "--cwd", "/work/b", "headline")
	if code != exitOK || strings.Count(out, "spbridge conversation show") != 1 || !strings.Contains(out, "Flyer.silverpoint") {
		t.Errorf("--cwd /work/b: exit %d\n%s", code, out)
	}

	// A new turn, as a journal record: found at once.
	p, err := archive.Open(poster, archive.KindDocument, true)
	if err != nil {
		t.Fatal(err)
	}
	it := archive.NewItem(archive.TypeUser)
	it.Set("text", "and a wombat in the corner")
	p.Conv.Items = append(p.Conv.Items, it)
	if _, err := p.Append(p.Snapshot(true)); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCmd(t, "conversation", "search", "--json", "wombat")
	if code != exitOK || !strings.Contains(out, `"package":"`+poster+`"`) || !strings.Contains(out, `"matches":[[6,12]],"text":"and a wombat in the corner","where":"User"`) {
		t.Errorf("wombat: exit %d\n%s", code, out)
	}
	if code, _, errOut = runCmd(t, "conversation", "search", "zebra"); code != exitFailure || !strings.Contains(errOut, `no conversation matches "zebra"`) {
		t.Errorf("zebra: exit %d, %s", code, errOut)
	}
}
