package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/checkpoint"
)

// checkpointedPackage makes a package whose one turn changed files of its
// folder: a user item, a change notice, and the change set in
// agent/checkpoints keyed by the notice.
func checkpointedPackage(t *testing.T) (pkg, noticeID string) {
	t.Helper()
	work := t.TempDir()
	pkg = filepath.Join(work, "Doc.silverpoint")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(pkg, "document.json"), []byte("{}"), 0o644)
	os.WriteFile(filepath.Join(work, "notes.txt"), []byte("a\nb\n"), 0o644)
	tr, err := checkpoint.NewTracker([]string{work}, filepath.Join(t.TempDir(), "checkpoints"), checkpoint.Options{Exclude: []string{filepath.Join(pkg, "agent")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Begin(); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(work, "notes.txt"), []byte("a\nB\nc\n"), 0o644)
	os.WriteFile(filepath.Join(work, "pic.bin"), []byte{0, 1, 2}, 0o644)
	cs, err := tr.End()
	if err != nil {
		t.Fatal(err)
	}
	p, err := archive.Open(pkg, archive.KindDocument, true)
	if err != nil {
		t.Fatal(err)
	}
	user := archive.NewItem(archive.TypeUser)
	user.Set("text", "change them")
	notice := archive.NewItem(archive.TypeNotice)
	notice.Set("text", cs.Summary(work))
	p.Conv.Items = append(p.Conv.Items, user, notice)
	if _, err := p.Save(true); err != nil {
		t.Fatal(err)
	}
	st, err := checkpoint.Open(pkg, checkpoint.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Record(notice.ID(), user.ID(), cs); err != nil {
		t.Fatal(err)
	}
	return pkg, notice.ID()
}

func runOut(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out, errw bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &out, &errw)
	return out.String() + errw.String(), code
}

func TestConversationShowChanges(t *testing.T) {
	pkg, _ := checkpointedPackage(t)
	out, code := runOut(t, "conversation", "show", pkg)
	want := "Notice: Changed 2 files: notes.txt (+2 −1), pic.bin (created, binary).\n  modified notes.txt +2 −1\n  created pic.bin (binary)\n"
	if code != 0 || !strings.Contains(out, want) {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	out, code = runOut(t, "conversation", "show", "--json", pkg)
	if code != 0 || !strings.Contains(out, `"changes" : {`) || !strings.Contains(out, `"path" : "notes.txt"`) {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	// What --json prints is only shown: the saved conversation holds no
	// change set.
	data, _ := os.ReadFile(filepath.Join(pkg, "agent", "conversation.json"))
	if strings.Contains(string(data), `"changes"`) {
		t.Fatal("the saved conversation was changed")
	}
}

func TestFsckCheckpoints(t *testing.T) {
	pkg, _ := checkpointedPackage(t)
	out, code := runOut(t, "fsck", pkg)
	if code != 0 || !strings.HasPrefix(out, "agent/checkpoints: 1 turn and 0 rewinds kept, 0 dropped; 1 stored contents, 4 bytes\nok\n") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	blobs, _ := os.ReadDir(filepath.Join(pkg, "agent", "checkpoints", "blobs"))
	os.WriteFile(filepath.Join(pkg, "agent", "checkpoints", "blobs", blobs[0].Name()), []byte("x"), 0o600)
	out, code = runOut(t, "fsck", pkg)
	if code != 1 || !strings.Contains(out, blobs[0].Name()+": damaged") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	os.Remove(filepath.Join(pkg, "agent", "checkpoints", "blobs", blobs[0].Name()))
	out, code = runOut(t, "fsck", pkg)
	if code != 1 || !strings.Contains(out, blobs[0].Name()+": missing") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}
