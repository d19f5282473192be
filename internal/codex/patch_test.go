package codex

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"spbridge/internal/itemmap"
)

// TestParsePatch: every kind of file operation, and the leniencies codex
// has (a first hunk without "@@", an empty line as context, "\r\n",
// "*** End of File").
func TestParsePatch(t *testing.T) {
	tests := []struct {
		name, patch string
		want        []patchFile
	}{
		{"update in two hunks, add, delete, move",
			"*** Begin Patch\n" +
				"*** Update File: numbers.txt\n@@\n one\n-two\n+TWO\n three\n@@ fn ten()\n ten\n-eleven\n+ELEVEN\n twelve\n" +
				"*** Add File: added.txt\n+first\n+\n+second\n" +
				"*** Delete File: gone.txt\n" +
				"*** Update File: old/name.txt\n*** Move to: new/name.txt\n@@\n alpha\n-beta\n+BETA\n*** End Patch\n",
			[]patchFile{
				{kind: patchUpdate, path: "numbers.txt", hunks: []patchHunk{
					{lines: []string{" one", "-two", "+TWO", " three"}},
					{lines: []string{" ten", "-eleven", "+ELEVEN", " twelve"}}}},
				{kind: patchAdd, path: "added.txt", text: "first\n\nsecond\n"},
				{kind: patchDelete, path: "gone.txt"},
				{kind: patchUpdate, path: "old/name.txt", moveTo: "new/name.txt", hunks: []patchHunk{
					{lines: []string{" alpha", "-beta", "+BETA"}}}},
			}},
		{"first hunk without @@, empty context line, end of file",
			"*** Begin Patch\n*** Update File: /abs/a.go\n x\n\n-y\n+z\n*** End of File\n*** End Patch",
			[]patchFile{{kind: patchUpdate, path: "/abs/a.go", hunks: []patchHunk{{lines: []string{" x", " ", "-y", "+z"}}}}}},
		{"CRLF lines",
			"*** Begin Patch\r\n*** Update File: a.txt\r\n@@\r\n-a\r\n+b\r\n*** End Patch\r\n",
			[]patchFile{{kind: patchUpdate, path: "a.txt", hunks: []patchHunk{{lines: []string{"-a", "+b"}}}}}},
		{"an empty added file, a move alone",
			"*** Begin Patch\n*** Add File: empty.txt\n*** Update File: a\n*** Move to: b\n*** End Patch\n",
			[]patchFile{{kind: patchAdd, path: "empty.txt"}, {kind: patchUpdate, path: "a", moveTo: "b"}}},
	}
	for _, tt := range tests {
		got, ok := parsePatch(tt.patch)
		if !ok || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: parsePatch = %+v, %v; want %+v", tt.name, got, ok, tt.want)
		}
	}
}

// TestParsePatchMalformed: a patch that cannot be read whole yields
// nothing.
func TestParsePatchMalformed(t *testing.T) {
	for _, patch := range []string{
		"",
		"*** Begin Patch\n*** End Patch\n", // no file
		"*** Update File: a\n@@\n-a\n+b\n*** End Patch\n",                               // no Begin
		"*** Begin Patch\n*** Update File: a\n@@\n-a\n+b\n",                             // no End
		"*** Begin Patch\n*** Update File: a\n@@\n a\n*** End Patch\n",                  // no change
		"*** Begin Patch\n*** Update File: a\n@@\n-a\n?b\n*** End Patch\n",              // a line out of place
		"*** Begin Patch\n*** Add File: a\nno mark\n*** End Patch\n",                    // an added line without "+"
		"*** Begin Patch\n*** Frobnicate File: a\n*** End Patch\n",                      // an unknown operation
		"*** Begin Patch\n*** Delete File: \n*** End Patch\n",                           // no path
		"*** Begin Patch\n*** Update File: a\n-a\n*** End of File\n+b\n*** End Patch\n", // a line after the end of the file
	} {
		if got, ok := parsePatch(patch); ok || got != nil {
			t.Errorf("parsePatch(%q) = %+v, %v; want nothing", patch, got, ok)
		}
	}
}

// TestPatchChanges: an update's hunks are placed where their new text is
// in the file after the change (a moved file at its new path), the old
// start shifted by what the hunks before added and removed; a hunk not
// found, or a file that cannot be read, keeps a bare "@@".
func TestPatchChanges(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "numbers.txt"), []byte("one\nTWO\nTHREE\nfour\nfive\nsix\nseven\neight\nnine\nten\nELEVEN\ntwelve\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, "new"), 0o755)
	os.WriteFile(filepath.Join(dir, "new", "name.txt"), []byte("alpha\nBETA\n"), 0o644)
	files, ok := parsePatch("*** Begin Patch\n" +
		"*** Update File: numbers.txt\n@@\n one\n-two\n+TWO\n+THREE\n@@\n ten\n-eleven\n+ELEVEN\n twelve\n@@\n-gone\n@@\n nowhere\n-x\n+y\n" +
		"*** Add File: added.txt\n+first\n" +
		"*** Delete File: gone.txt\n" +
		"*** Update File: old/name.txt\n*** Move to: new/name.txt\n@@\n alpha\n-beta\n+BETA\n" +
		"*** Update File: missing.txt\n@@\n-a\n+b\n*** End Patch\n")
	if !ok {
		t.Fatal("parsePatch failed")
	}
	got := patchChanges(files, dir, os.ReadFile)
	j := func(p string) string { return filepath.Join(dir, p) }
	want := []itemmap.CodexFileChange{
		{Path: j("numbers.txt"), Kind: "update", Diff: "@@ -1,2 +1,3 @@\n one\n-two\n+TWO\n+THREE\n@@ -9,3 +10,3 @@\n ten\n-eleven\n+ELEVEN\n twelve\n@@\n-gone\n@@\n nowhere\n-x\n+y\n"},
		{Path: j("added.txt"), Kind: "add", Diff: "first\n"},
		{Path: j("gone.txt"), Kind: "delete"},
		{Path: j("old/name.txt"), Kind: "update", MovePath: j("new/name.txt"), Diff: "@@ -1,2 +1,2 @@\n alpha\n-beta\n+BETA\n"},
		{Path: j("missing.txt"), Kind: "update", Diff: "@@\n-a\n+b\n"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("patchChanges =\n%+v\nwant\n%+v", got, want)
	}
	none := patchChanges(files[:1], dir, func(string) ([]byte, error) { return nil, errors.New("unreadable") })
	if len(none) != 1 || none[0].Diff != "@@\n one\n-two\n+TWO\n+THREE\n@@\n ten\n-eleven\n+ELEVEN\n twelve\n@@\n-gone\n@@\n nowhere\n-x\n+y\n" {
		t.Errorf("an unreadable file: %+v", none)
	}
}
