package session

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/audit"
	"spbridge/internal/backend"
	"spbridge/internal/checkpoint"
	"spbridge/internal/itemmap"
)

// filesBackend is a fake CLI whose turns change files: turns[n] is run
// by the n-th turn; started, when set, is told each turn's start and the
// turn waits for release.
type filesBackend struct {
	fakeBackend
	turns   []func()
	n       int
	started chan struct{}
	release chan struct{}
}

func (f *filesBackend) Turn(ctx context.Context, msg backend.Message, h backend.Host) *itemmap.TurnEnd {
	if f.started != nil {
		f.started <- struct{}{}
		<-f.release
	}
	if f.failOnce {
		return f.fakeBackend.Turn(ctx, msg, h) // the CLI never took it
	}
	if f.n < len(f.turns) && f.turns[f.n] != nil {
		f.turns[f.n]()
	}
	f.n++
	return f.fakeBackend.Turn(ctx, msg, h)
}

func openFiles(t *testing.T, pkg, state string, be *filesBackend, ckpt bool) *Session {
	t.Helper()
	o := Options{Dir: pkg, Keep: true, Saving: SaveByCaller, Cwd: filepath.Dir(pkg), AuditDir: state,
		Settings: Settings{CLI: "claude"}, CLIs: rows(func(string, backend.Options) backend.Backend { return be })}
	if ckpt {
		o.CheckpointDir = filepath.Join(state, "checkpoints")
	}
	s, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func writeIn(t *testing.T, dir, rel, data string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readIn(dir, rel string) string {
	data, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		return "<none>"
	}
	return string(data)
}

func TestCheckpointsOfTurns(t *testing.T) {
	pkg, state := newPackage(t)
	work := filepath.Dir(pkg)
	writeIn(t, work, "a.txt", "a0\n")
	writeIn(t, work, "c.txt", "c0\n")
	be := &filesBackend{fakeBackend: fakeBackend{name: "claude"}}
	be.turns = []func(){
		func() {
			writeIn(t, work, "a.txt", "a1\nmore\n")
			writeIn(t, work, "b.txt", "b1\n")
		},
		nil, // changes nothing
		func() { os.Remove(filepath.Join(work, "c.txt")) },
	}
	s := openFiles(t, pkg, state, be, true)
	res, err := s.Send(context.Background(), "one", nil, nopHost{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Notice == nil || res.Notice.String("text") != "Changed 2 files: a.txt (+2 −1), b.txt (created, +1)." {
		t.Fatalf("notice %v", res.Notice)
	}
	res2, err := s.Send(context.Background(), "two", nil, nopHost{})
	if err != nil {
		t.Fatal(err)
	}
	if res2.Notice != nil || !res2.Changes.Empty() {
		t.Fatalf("a turn that changed nothing: %v %+v", res2.Notice, res2.Changes)
	}
	// A turn that never started records nothing.
	be.failOnce = true
	if _, err := s.Send(context.Background(), "never", nil, nopHost{}); !errors.Is(err, ErrNotStarted) {
		t.Fatalf("a turn that did not start: %v", err)
	}
	res3, err := s.Send(context.Background(), "three", nil, nopHost{})
	if err != nil {
		t.Fatal(err)
	}
	if res3.Notice == nil || res3.Notice.String("text") != "Changed 1 file: c.txt (deleted)." {
		t.Fatalf("notice %v", res3.Notice)
	}
	if _, err := s.Save(); err != nil {
		t.Fatal(err)
	}
	// The notices are saved; the index keys their change sets.
	conv := onDisk(t, pkg)
	notices := 0
	for _, it := range conv.Items {
		if it.Type() == archive.TypeNotice && strings.HasPrefix(it.String("text"), "Changed ") {
			notices++
		}
	}
	if notices != 2 {
		t.Fatalf("%d change notices saved", notices)
	}
	e, ok := Changes(pkg, res.Notice.ID())
	if !ok || e.UserItem != res.UserItem.ID() || len(e.Files) != 2 {
		t.Fatalf("entry %+v %v", e, ok)
	}
	// The audit record carries the change set.
	path, _ := audit.Path(state, conv.Identity())
	recs, err := audit.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("%d audit records", len(recs))
	}
	ch, ok := recs[0]["changes"].(map[string]any)
	if !ok || len(ch["files"].([]any)) != 2 {
		t.Fatalf("audit changes %v", recs[0]["changes"])
	}
	if _, ok := recs[1]["changes"]; ok {
		t.Fatal("a turn that changed nothing has changes in its audit record")
	}
}

func TestRewindFiles(t *testing.T) {
	pkg, state := newPackage(t)
	work := filepath.Dir(pkg)
	writeIn(t, work, "a.txt", "a0\n")
	writeIn(t, work, "sub/c.bin", "c\x00bin")
	be := &filesBackend{fakeBackend: fakeBackend{name: "claude"}}
	be.turns = []func(){
		func() {
			writeIn(t, work, "a.txt", "a1\n")
			writeIn(t, work, "new.txt", "new\n")
		},
		func() {
			writeIn(t, work, "a.txt", "a2\n")
			os.RemoveAll(filepath.Join(work, "sub"))
			writeIn(t, work, "other.txt", "o2\n")
		},
	}
	s := openFiles(t, pkg, state, be, true)
	r1, err := s.Send(context.Background(), "one", nil, nopHost{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(context.Background(), "two", nil, nopHost{}); err != nil {
		t.Fatal(err)
	}
	writeIn(t, work, "other.txt", "the user's\n") // a conflict
	if _, err := s.RewindFiles("no-such-item", true, false); !errors.Is(err, archive.ErrNoItem) {
		t.Fatalf("unknown item: %v", err)
	}
	dry, err := s.RewindFiles(r1.UserItem.ID(), true, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(dry.Plan.Actions) != 4 || len(dry.Plan.Conflicts()) != 1 || dry.ID != "" || readIn(work, "a.txt") != "a2\n" {
		t.Fatalf("dry run %+v", dry.Plan)
	}
	res, err := s.RewindFiles(r1.UserItem.ID(), false, false)
	if err != nil {
		t.Fatal(err)
	}
	if readIn(work, "a.txt") != "a0\n" || readIn(work, "sub/c.bin") != "c\x00bin" || readIn(work, "new.txt") != "<none>" {
		t.Fatalf("after the rewind: %q %q %q", readIn(work, "a.txt"), readIn(work, "sub/c.bin"), readIn(work, "new.txt"))
	}
	if readIn(work, "other.txt") != "the user's\n" {
		t.Fatal("a conflict was rewound")
	}
	if _, err := s.UndoFileRewind(res.ID, false, false); err != nil {
		t.Fatal(err)
	}
	if readIn(work, "a.txt") != "a2\n" || readIn(work, "new.txt") != "new\n" {
		t.Fatalf("after the undo: %q %q", readIn(work, "a.txt"), readIn(work, "new.txt"))
	}
	if _, err := os.Lstat(filepath.Join(work, "sub/c.bin")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("the undo left sub/c.bin")
	}

	// Refused while a turn runs.
	be.started, be.release = make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		_, err := s.Send(context.Background(), "three", nil, nopHost{})
		done <- err
	}()
	<-be.started
	if _, err := s.RewindFiles(r1.UserItem.ID(), false, false); !errors.Is(err, ErrBusy) {
		t.Errorf("a rewind while a turn runs: %v", err)
	}
	close(be.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestRewindFilesWithoutCheckpoints(t *testing.T) {
	pkg, state := newPackage(t)
	be := &filesBackend{fakeBackend: fakeBackend{name: "claude"}}
	s := openFiles(t, pkg, state, be, false)
	r, err := s.Send(context.Background(), "one", nil, nopHost{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.RewindFiles(r.UserItem.ID(), true, false)
	if !errors.Is(err, ErrNoCheckpoints) || !errors.Is(err, checkpoint.ErrNoCheckpoints) {
		t.Fatalf("%v", err)
	}
	if !strings.Contains(err.Error(), "only its conversation can be rewound") {
		t.Fatalf("%v", err)
	}
}

// TestCheckpointsHostSaved: when the host saves the package (SaveByHost),
// a turn's checkpoints and a rewind of its files write nothing into the
// package: they are kept in the state folder, by the package's path.
func TestCheckpointsHostSaved(t *testing.T) {
	pkg, state := newPackage(t)
	work := filepath.Dir(pkg)
	writeIn(t, work, "a.txt", "a0\n")
	be := &filesBackend{fakeBackend: fakeBackend{name: "claude"}}
	be.turns = []func(){func() { writeIn(t, work, "a.txt", "a1\n") }}
	s, err := Open(Options{Dir: pkg, Keep: true, Saving: SaveByHost, Cwd: work, AuditDir: state,
		RecoveryDir: filepath.Join(state, "recovery"), CheckpointDir: filepath.Join(state, "checkpoints"),
		Settings: Settings{CLI: "claude"}, CLIs: rows(func(string, backend.Options) backend.Backend { return be })})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	res, err := s.Send(context.Background(), "one", nil, nopHost{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Notice == nil || res.Changes.Empty() {
		t.Fatalf("no change set: %v %+v", res.Notice, res.Changes)
	}
	if _, err := os.Lstat(filepath.Join(pkg, archive.AgentDir)); !os.IsNotExist(err) {
		t.Fatalf("a turn wrote into the host-saved package (%v)", err)
	}
	fr, err := s.RewindFiles(res.UserItem.ID(), false, false)
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(work, "a.txt")); string(data) != "a0\n" {
		t.Fatalf("after the rewind a.txt holds %q (%+v)", data, fr)
	}
	if _, err := os.Lstat(filepath.Join(pkg, archive.AgentDir)); !os.IsNotExist(err) {
		t.Fatalf("a rewind wrote into the host-saved package (%v)", err)
	}
}
