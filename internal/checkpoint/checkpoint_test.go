package checkpoint

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// env is a session's folder, a package and a state folder.
type env struct {
	t     *testing.T
	root  string
	pkg   string
	cache string
	tr    *Tracker
	st    *Store
	turn  int
}

func newEnv(t *testing.T, o Options, p Policy) *env {
	t.Helper()
	base := t.TempDir()
	e := &env{t: t, root: filepath.Join(base, "work"), pkg: filepath.Join(base, "work", "Doc.pkg"), cache: filepath.Join(base, "state", "checkpoints")}
	must(t, os.MkdirAll(filepath.Join(e.pkg, "agent"), 0o700))
	o.Exclude = append(o.Exclude, filepath.Join(e.pkg, "agent"))
	var err error
	if e.tr, err = NewTracker([]string{e.root}, e.cache, o); err != nil {
		t.Fatal(err)
	}
	if e.st, err = Open(e.pkg, p); err != nil {
		t.Fatal(err)
	}
	return e
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (e *env) write(rel, data string) {
	e.t.Helper()
	p := filepath.Join(e.root, filepath.FromSlash(rel))
	must(e.t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(e.t, os.WriteFile(p, []byte(data), 0o644))
}

func (e *env) read(rel string) string {
	e.t.Helper()
	data, err := os.ReadFile(filepath.Join(e.root, filepath.FromSlash(rel)))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(data)
}

// turnOf runs one turn: change does what the agent does; the change set
// is recorded under "notice-N" and returned.
func (e *env) turnOf(change func()) (string, ChangeSet) {
	e.t.Helper()
	must(e.t, e.tr.Begin())
	change()
	cs, err := e.tr.End()
	must(e.t, err)
	e.turn++
	key := "notice-" + string(rune('0'+e.turn))
	must(e.t, e.st.Record(key, "user-"+string(rune('0'+e.turn)), cs))
	return key, cs
}

type got struct {
	path           string
	kind           Kind
	added, removed int
	binary         bool
}

func summary(cs ChangeSet) []got {
	var out []got
	for _, f := range cs.Files {
		out = append(out, got{f.Path, f.Change, f.Added, f.Removed, f.Binary})
	}
	return out
}

func blobs(t *testing.T, pkg string) []string {
	t.Helper()
	list, _ := os.ReadDir(filepath.Join(pkg, filepath.FromSlash(BlobsDir)))
	var out []string
	for _, e := range list {
		out = append(out, e.Name())
	}
	return out
}

func TestTurnChangeSet(t *testing.T) {
	e := newEnv(t, Options{}, Policy{})
	e.write("src/a.go", "package a\n\nfunc A() {}\n")
	e.write("old.txt", "old\n")
	e.write("same.txt", "same\n")
	e.write("Doc.pkg/document.json", "{}")
	_, cs := e.turnOf(func() {
		e.write("src/a.go", "package a\n\nfunc A() { B() }\n\nfunc B() {}\n")
		e.write("notes.md", "one\ntwo\nthree")
		must(t, os.Remove(filepath.Join(e.root, "old.txt")))
		e.write("same.txt", "same\n")                    // rewritten, the same bytes
		e.write("Doc.pkg/agent/conversation.json", "{}") // spbridge's own: not walked
		e.write("bin.dat", "a\x00b")
	})
	want := []got{
		{"bin.dat", Created, 0, 0, true},
		{"notes.md", Created, 3, 0, false},
		{"old.txt", Deleted, 0, 1, false},
		{"src/a.go", Modified, 3, 1, false},
	}
	if g := summary(cs); !slices.Equal(g, want) {
		t.Fatalf("change set\n got %+v\nwant %+v", g, want)
	}
	if s := cs.Summary(e.root); s != "Changed 4 files: bin.dat (created, binary), notes.md (created, +3), old.txt (deleted), src/a.go (+3 −1)." {
		t.Errorf("summary: %q", s)
	}
	// Only the earlier contents of the modified and deleted files are kept.
	if b := blobs(t, e.pkg); len(b) != 2 {
		t.Errorf("blobs %v, want 2", b)
	}
	entries, err := e.st.Entries()
	must(t, err)
	if len(entries) != 1 || entries[0].Key != "notice-1" || entries[0].UserItem != "user-1" || len(entries[0].Files) != 4 {
		t.Fatalf("entries %+v", entries)
	}
}

func TestUnchangedTurnReadsNothing(t *testing.T) {
	e := newEnv(t, Options{}, Policy{})
	for i := range 50 {
		e.write(filepath.Join("d", string(rune('a'+i%26)), string(rune('a'+i/26))+".txt"), strings.Repeat("x", i))
	}
	e.turnOf(func() {})
	if e.tr.reads != 50 {
		t.Fatalf("the first turn read %d files, want 50", e.tr.reads)
	}
	_, cs := e.turnOf(func() {})
	if !cs.Empty() || e.tr.reads != 50 {
		t.Fatalf("a turn that changed nothing read %d files more; change set %+v", e.tr.reads-50, cs)
	}
	// Only the file changed is read, at the turn's end.
	_, cs = e.turnOf(func() { e.write("d/a/a.txt", "changed") })
	if len(cs.Files) != 1 || e.tr.reads != 51 {
		t.Fatalf("reads %d, change set %+v", e.tr.reads, summary(cs))
	}
	// An empty turn wrote the index once (where checkpoints began), and no
	// entry.
	entries, _ := e.st.Entries()
	if len(entries) != 1 {
		t.Fatalf("entries: %d", len(entries))
	}
	// A new tracker (a reopen) reads nothing either: the cache holds it all.
	tr2, _ := NewTracker([]string{e.root}, e.cache, Options{Exclude: []string{filepath.Join(e.pkg, "agent")}})
	must(t, tr2.Begin())
	if tr2.reads != 0 {
		t.Fatalf("a reopened tracker read %d files", tr2.reads)
	}
}

func TestIgnoredPaths(t *testing.T) {
	e := newEnv(t, Options{}, Policy{})
	e.write(".gitignore", "*.log\n/build/\n!keep.log\n")
	e.write("sub/.gitignore", "cache\n")
	e.write(".git/info/exclude", "secret*\n")
	e.write(".git/HEAD", "ref: x\n")
	_, cs := e.turnOf(func() {
		e.write("a.log", "x")
		e.write("keep.log", "x")
		e.write("build/out.o", "x")
		e.write("sub/cache/x", "x")
		e.write("sub/cachefile", "x")
		e.write("secret.txt", "x")
		e.write(".git/index", "x")
		e.write("deep/build/y", "x") // /build/ is anchored at the top
	})
	var paths []string
	for _, f := range cs.Files {
		paths = append(paths, f.Path)
	}
	if want := []string{"deep/build/y", "keep.log", "sub/cachefile"}; !slices.Equal(paths, want) {
		t.Fatalf("paths %v, want %v", paths, want)
	}
}

// denyAsRoot makes chmod's denials hold for a user whom they do not stop.
func denyAsRoot(t *testing.T, e *env) {
	if os.Getuid() != 0 {
		return
	}
	deny = func(p string) bool {
		fi, err := os.Lstat(filepath.Join(e.root, filepath.FromSlash(p)))
		return err == nil && fi.Mode().Perm()&0o400 == 0
	}
	t.Cleanup(func() { deny = nil })
}

func TestOverSizeAndUnreadable(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("permissions are not enforced here")
	}
	e := newEnv(t, Options{MaxFileSize: 100}, Policy{})
	denyAsRoot(t, e)
	e.write("big.bin", strings.Repeat("b", 200))
	e.write("locked.txt", "secret\n")
	e.write("ok.txt", "ok\n")
	_, cs := e.turnOf(func() {
		e.write("big.bin", strings.Repeat("c", 300))
		e.write("locked.txt", "secret 2\n")
		must(t, os.Chmod(filepath.Join(e.root, "locked.txt"), 0o000))
		e.write("ok.txt", "ok 2\n")
	})
	if len(cs.Files) != 1 || cs.Files[0].Path != "ok.txt" {
		t.Fatalf("files %+v", summary(cs))
	}
	reasons := map[string]string{}
	for _, s := range cs.Skipped {
		reasons[s.Path] = s.Reason
	}
	if reasons["big.bin"] != "over 100 bytes" || !strings.Contains(reasons["locked.txt"], "permission denied") {
		t.Fatalf("skipped %+v", cs.Skipped)
	}
	if !strings.Contains(cs.Summary(e.root), "big.bin (over 100 bytes)") {
		t.Errorf("summary %q", cs.Summary(e.root))
	}
	// An unreadable folder: its files are unknown this turn, not deleted.
	e.write("dir/f.txt", "f\n")
	e.turnOf(func() {})
	_, cs = e.turnOf(func() { must(t, os.Chmod(filepath.Join(e.root, "dir"), 0o000)) })
	t.Cleanup(func() { os.Chmod(filepath.Join(e.root, "dir"), 0o755) })
	for _, f := range cs.Files {
		if f.Path == "dir/f.txt" {
			t.Fatalf("a file of an unreadable folder counted as %s", f.Change)
		}
	}
}

func TestRewindRestoresAndUndoes(t *testing.T) {
	e := newEnv(t, Options{}, Policy{})
	e.write("a.txt", "a0\n")
	e.write("b.txt", "b0\n")
	e.write("sub/c.txt", "c0\n")
	must(t, os.Chmod(filepath.Join(e.root, "b.txt"), 0o600))
	before := map[string]string{"a.txt": "a0\n", "b.txt": "b0\n", "sub/c.txt": "c0\n"}
	k1, _ := e.turnOf(func() {
		e.write("a.txt", "a1\n")
		e.write("new.txt", "new\n")
		must(t, os.RemoveAll(filepath.Join(e.root, "sub"))) // a folder deleted in the turn
	})
	k2, _ := e.turnOf(func() {
		e.write("a.txt", "a2\n")
		must(t, os.Chmod(filepath.Join(e.root, "b.txt"), 0o644))
		e.write("b.txt", "b2\n")
	})
	plan, err := e.st.Plan([]string{k2, k1, "user-1"}, false)
	must(t, err)
	if len(plan.Actions) != 4 || len(plan.Conflicts()) != 0 || len(plan.Missing) != 0 || !slices.Equal(plan.Undoes, []string{k2, k1}) {
		t.Fatalf("plan %+v", plan)
	}
	if e.read("a.txt") != "a2\n" {
		t.Fatal("a plan changed a file")
	}
	id, err := e.st.Apply(plan)
	must(t, err)
	for p, want := range before {
		if got := e.read(p); got != want {
			t.Errorf("%s = %q after the rewind, want %q", p, got, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(e.root, "new.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the created file is still there: %v", err)
	}
	if fi, _ := os.Stat(filepath.Join(e.root, "b.txt")); fi.Mode().Perm() != 0o600 {
		t.Errorf("b.txt's mode %v, want 0600", fi.Mode().Perm())
	}
	// The undo puts back what the rewind replaced; its undo rewinds again.
	undo, err := e.st.PlanUndo(id, false)
	must(t, err)
	id2, err := e.st.Apply(undo)
	must(t, err)
	if e.read("a.txt") != "a2\n" || e.read("b.txt") != "b2\n" || e.read("new.txt") != "new\n" {
		t.Fatalf("after the undo: %q %q %q", e.read("a.txt"), e.read("b.txt"), e.read("new.txt"))
	}
	if _, err := os.Lstat(filepath.Join(e.root, "sub/c.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the undo left sub/c.txt: %v", err)
	}
	undo2, err := e.st.PlanUndo(id2, false)
	must(t, err)
	_, err = e.st.Apply(undo2)
	must(t, err)
	for p, want := range before {
		if got := e.read(p); got != want {
			t.Errorf("%s = %q after the undo of the undo, want %q", p, got, want)
		}
	}
}

func TestRewindConflict(t *testing.T) {
	e := newEnv(t, Options{}, Policy{})
	e.write("a.txt", "a0\n")
	e.write("b.txt", "b0\n")
	k1, _ := e.turnOf(func() {
		e.write("a.txt", "a1\n")
		e.write("b.txt", "b1\n")
	})
	e.write("b.txt", "the user's\n") // after the turn, by someone else
	plan, err := e.st.Plan([]string{k1}, false)
	must(t, err)
	c := plan.Conflicts()
	if len(c) != 1 || c[0].Path != "b.txt" {
		t.Fatalf("conflicts %+v", c)
	}
	_, err = e.st.Apply(plan)
	must(t, err)
	if e.read("a.txt") != "a0\n" || e.read("b.txt") != "the user's\n" {
		t.Fatalf("after the rewind: %q %q", e.read("a.txt"), e.read("b.txt"))
	}
	forced, err := e.st.Plan([]string{k1}, true)
	must(t, err)
	_, err = e.st.Apply(forced)
	must(t, err)
	if e.read("b.txt") != "b0\n" {
		t.Fatalf("a forced rewind left %q", e.read("b.txt"))
	}
}

func TestMissingBlobChangesNothing(t *testing.T) {
	e := newEnv(t, Options{}, Policy{})
	e.write("a.txt", "a0\n")
	e.write("b.txt", "b0\n")
	k1, _ := e.turnOf(func() {
		e.write("a.txt", "a1\n")
		e.write("b.txt", "b1\n")
		e.write("c.txt", "c1\n")
	})
	bs := blobs(t, e.pkg)
	must(t, os.WriteFile(filepath.Join(e.pkg, filepath.FromSlash(BlobsDir), bs[0]), []byte("damaged"), 0o600))
	plan, err := e.st.Plan([]string{k1}, false)
	must(t, err)
	if len(plan.Missing) != 1 || plan.Missing[0] != bs[0] {
		t.Fatalf("missing %v, want %v", plan.Missing, bs[:1])
	}
	_, err = e.st.Apply(plan)
	var me *MissingError
	if !errors.As(err, &me) {
		t.Fatalf("apply: %v", err)
	}
	if e.read("a.txt") != "a1\n" || e.read("b.txt") != "b1\n" || e.read("c.txt") != "c1\n" {
		t.Fatal("an apply with a damaged blob changed files")
	}
	u, err := e.st.Usage()
	must(t, err)
	if len(u.Damaged) != 1 || u.Turns != 1 {
		t.Fatalf("usage %+v", u)
	}
	must(t, os.Remove(filepath.Join(e.pkg, filepath.FromSlash(BlobsDir), bs[0])))
	u, _ = e.st.Usage()
	if len(u.Missing) != 1 {
		t.Fatalf("usage %+v", u)
	}
}

func TestNoCheckpoints(t *testing.T) {
	e := newEnv(t, Options{}, Policy{})
	if _, err := e.st.Plan([]string{"x"}, false); !errors.Is(err, ErrNoCheckpoints) {
		t.Fatalf("plan: %v", err)
	}
	if _, err := e.st.Usage(); !errors.Is(err, ErrNoCheckpoints) {
		t.Fatalf("usage: %v", err)
	}
}

func TestPolicyDropsOldest(t *testing.T) {
	e := newEnv(t, Options{}, Policy{MaxTurns: 2})
	e.write("a.txt", "0\n")
	var keys []string
	for i := range 4 {
		k, _ := e.turnOf(func() { e.write("a.txt", strings.Repeat("x", i+1)+"\n") })
		keys = append(keys, k)
	}
	entries, _ := e.st.Entries()
	if len(entries) != 2 || entries[0].Key != keys[2] {
		t.Fatalf("entries %v", entries)
	}
	if b := blobs(t, e.pkg); len(b) != 2 {
		t.Fatalf("blobs %v: the dropped entries' contents stay", b)
	}
	rev := slices.Clone(keys)
	slices.Reverse(rev)
	plan, err := e.st.Plan(rev, false)
	must(t, err)
	if !slices.Equal(plan.Dropped, []string{keys[0], keys[1]}) {
		t.Fatalf("dropped %v", plan.Dropped)
	}
	// The bytes bound too.
	e2 := newEnv(t, Options{}, Policy{MaxBytes: 10})
	e2.write("a.txt", "0123456789\n")
	e2.turnOf(func() { e2.write("a.txt", "x\n") })
	e2.turnOf(func() { e2.write("a.txt", "y\n") })
	entries, _ = e2.st.Entries()
	if len(entries) != 1 {
		t.Fatalf("entries %d", len(entries))
	}
}

func TestLinks(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links need privileges")
	}
	e := newEnv(t, Options{}, Policy{})
	outside := filepath.Join(t.TempDir(), "outside.txt")
	must(t, os.WriteFile(outside, []byte("outside\n"), 0o644))
	outDir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(outDir, "x.txt"), []byte("x"), 0o644))
	must(t, os.Symlink(outside, filepath.Join(e.root, "out")))
	must(t, os.Symlink(outDir, filepath.Join(e.root, "outdir")))
	e.write("in.txt", "in\n")
	k1, cs := e.turnOf(func() {
		must(t, os.Remove(filepath.Join(e.root, "out")))
		must(t, os.Symlink("in.txt", filepath.Join(e.root, "out")))
		must(t, os.WriteFile(filepath.Join(outDir, "x.txt"), []byte("changed outside"), 0o644))
	})
	if len(cs.Files) != 1 || cs.Files[0].Path != "out" || cs.Files[0].Before.Link != outside || cs.Files[0].After.Link != "in.txt" {
		t.Fatalf("change set %+v", cs.Files)
	}
	plan, err := e.st.Plan([]string{k1}, false)
	must(t, err)
	_, err = e.st.Apply(plan)
	must(t, err)
	if target, _ := os.Readlink(filepath.Join(e.root, "out")); target != outside {
		t.Fatalf("link restored to %q", target)
	}
	if data, _ := os.ReadFile(outside); string(data) != "outside\n" {
		t.Fatalf("the file outside was written: %q", data)
	}
	// A restore through a link to a folder outside writes nothing there.
	must(t, os.Remove(filepath.Join(e.root, "outdir")))
	e.write("outdir/y.txt", "y\n")
	k2, _ := e.turnOf(func() { e.write("outdir/y.txt", "y2\n") })
	must(t, os.RemoveAll(filepath.Join(e.root, "outdir")))
	must(t, os.Symlink(outDir, filepath.Join(e.root, "outdir")))
	plan, err = e.st.Plan([]string{k2}, true)
	must(t, err)
	_, err = e.st.Apply(plan)
	if err == nil {
		t.Error("a restore through a link out of the folder succeeded")
	}
	if _, err := os.Lstat(filepath.Join(outDir, "y.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a file was written outside the folder: %v", err)
	}
}

func TestNonUTF8Names(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("names must be UTF-8 on this system")
	}
	e := newEnv(t, Options{}, Policy{})
	name := "caf\xe9.txt"
	e.write(name, "one\n")
	k1, cs := e.turnOf(func() { e.write(name, "two\n") })
	if len(cs.Files) != 1 || cs.Files[0].Path != name {
		t.Fatalf("change set %+v", summary(cs))
	}
	if s := cs.Summary(e.root); !strings.Contains(s, `caf\xe9.txt`) {
		t.Errorf("summary %q", s)
	}
	entries, err := e.st.Entries()
	must(t, err)
	if entries[0].Files[0].Path != name {
		t.Fatalf("the index gave back %q", entries[0].Files[0].Path)
	}
	plan, err := e.st.Plan([]string{k1}, false)
	must(t, err)
	_, err = e.st.Apply(plan)
	must(t, err)
	if e.read(name) != "one\n" {
		t.Fatalf("%q", e.read(name))
	}
}

func TestDamagedCache(t *testing.T) {
	e := newEnv(t, Options{}, Policy{})
	e.write("a.txt", "a0\n")
	e.turnOf(func() {})
	dir := filepath.Join(e.cache, cacheKey(e.root))
	must(t, os.WriteFile(filepath.Join(dir, "index"), []byte("spbridge checkpoint cache 1\nzz 1 2\n"), 0o600))
	// A new tracker meets the damaged index: it rebuilds it.
	tr, _ := NewTracker([]string{e.root}, e.cache, Options{Exclude: []string{filepath.Join(e.pkg, "agent")}})
	e.tr = tr
	_, cs := e.turnOf(func() { e.write("a.txt", "a1\n") })
	if len(cs.Files) != 1 || tr.reads != 2 {
		t.Fatalf("files %+v, reads %d", summary(cs), tr.reads)
	}
	// Blobs lost from the cache during a turn: the file is named as not
	// kept, nothing fails.
	_, cs = e.turnOf(func() {
		must(t, os.RemoveAll(filepath.Join(dir, "blobs")))
		e.write("a.txt", "a2\n")
	})
	entries, _ := e.st.Entries()
	last := entries[len(entries)-1]
	if len(last.Files) != 0 || len(last.Skipped) != 1 || !strings.Contains(last.Skipped[0].Reason, "earlier contents lost") {
		t.Fatalf("entry %+v (change set %+v)", last, summary(cs))
	}
}

func TestDamagedIndexSetAside(t *testing.T) {
	e := newEnv(t, Options{}, Policy{})
	e.write("a.txt", "a0\n")
	e.turnOf(func() { e.write("a.txt", "a1\n") })
	idx := filepath.Join(e.pkg, filepath.FromSlash(IndexFile))
	must(t, os.WriteFile(idx, []byte("{not json"), 0o600))
	if _, err := e.st.Entries(); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("entries: %v", err)
	}
	e.turnOf(func() { e.write("a.txt", "a2\n") })
	if data, _ := os.ReadFile(idx + ".damaged"); string(data) != "{not json" {
		t.Fatalf("the damaged index was not kept: %q", data)
	}
	entries, err := e.st.Entries()
	must(t, err)
	if len(entries) != 1 {
		t.Fatalf("entries %d", len(entries))
	}
	// A newer version's index is left alone.
	must(t, os.WriteFile(idx, []byte(`{"spbridgeCheckpoints":2}`), 0o600))
	var ve *VersionError
	if err := e.st.Record("k", "u", ChangeSet{Skipped: []Skipped{{Root: e.root, Path: "x", Reason: "r"}}}); !errors.As(err, &ve) {
		t.Fatalf("record over a newer index: %v", err)
	}
}

func TestIndexRoundTrip(t *testing.T) {
	idx := &index{since: "u1", entries: []Entry{{Key: "n1", Kind: EntryTurn, UserItem: "u1",
		Files: []FileChange{
			{Root: "/r", Path: "a\xff", Change: Modified, Added: 1, Removed: 2,
				Before: &Version{SHA256: strings.Repeat("a", 64), Size: 3, Mode: 0o644},
				After:  &Version{Mode: fs.ModeSymlink | 0o777, Link: "t\xfe"}},
		},
		Skipped: []Skipped{{Root: "/r", Path: "big", Reason: "over 10 MiB"}}},
		{Key: "rewind-1", Kind: EntryRewind, Undoes: []string{"n1"}, Conversation: map[string]any{"cut": "x"}}}}
	data, err := canonjsonEncode(idx)
	must(t, err)
	back, err := decodeIndex(data)
	must(t, err)
	again, err := canonjsonEncode(back)
	must(t, err)
	if !bytes.Equal(data, again) {
		t.Fatalf("round trip:\n%s\n%s", data, again)
	}
	if back.entries[0].Files[0].Path != "a\xff" || back.entries[0].Files[0].After.Link != "t\xfe" {
		t.Fatalf("%+v", back.entries[0].Files[0])
	}
}

func FuzzIndex(f *testing.F) {
	idx := &index{since: "u1", entries: []Entry{{Key: "n1", Kind: EntryTurn, Files: []FileChange{{Root: "/r", Path: "a", Change: Created, After: &Version{SHA256: strings.Repeat("b", 64), Mode: 0o600}}}}}}
	data, _ := canonjsonEncode(idx)
	f.Add(data)
	f.Add([]byte(`{"spbridgeCheckpoints":1,"entries":[{"key":"k","kind":"rewind","files":[{"root":"/","path":"../x","change":"created"}]}]}`))
	f.Add([]byte(`{"spbridgeCheckpoints":1,"entries":[{"key":"k","kind":"turn","files":[{"root":"/","pathBytes":"/w==","change":"deleted","before":{"mode":"644","link":"x"}}]}]}`))
	f.Add([]byte(`{"spbridgeCheckpoints":2}`))
	f.Add([]byte(`{"spbridgeCheckpoints":1,"entries":[{"key":"k","kind":"turn","folders":[{"root":"/r","rootRel":"../..","path":"a/b","change":"created"},{"root":"/r","rootRel":".","path":"c","change":"deleted"}],"skipped":[{"root":"/r","rootRelBytes":"/w==","path":"x","reason":"r"}]}]}`))
	f.Add([]byte(`{"spbridgeCheckpoints":1,"entries":[{"key":"k","kind":"turn","folders":[{"root":"/r","path":"..","change":"modified"}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		idx, err := decodeIndex(data)
		if err != nil {
			return
		}
		for _, e := range idx.entries {
			for _, fc := range e.Files {
				if !validRel(fc.Path) {
					t.Fatalf("a path that leaves its folder: %q", fc.Path)
				}
			}
			for _, fc := range e.Folders {
				if !validRel(fc.Path) || (fc.Change != Created && fc.Change != Deleted) {
					t.Fatalf("a folder %+v", fc)
				}
			}
		}
		// A root kept relative resolves inside the folder holding the
		// package, or stays as written.
		written := make(map[string]bool)
		for _, e := range idx.entries {
			for _, fc := range e.Files {
				written[fc.Root] = true
			}
			for _, fc := range e.Folders {
				written[fc.Root] = true
			}
		}
		base := filepath.Join(t.TempDir(), "base")
		resolved := *idx
		resolved.entries = slices.Clone(idx.entries)
		for i := range resolved.entries {
			resolved.entries[i].Files = slices.Clone(resolved.entries[i].Files)
			resolved.entries[i].Folders = slices.Clone(resolved.entries[i].Folders)
		}
		resolved.resolve(base)
		for _, e := range resolved.entries {
			for _, fc := range e.Folders {
				if rel, err := filepath.Rel(base, fc.Root); !written[fc.Root] && (err != nil || (rel != "." && !filepath.IsLocal(rel))) {
					t.Fatalf("a root resolved outside its folder: %q", fc.Root)
				}
			}
			for _, fc := range e.Files {
				if rel, err := filepath.Rel(base, fc.Root); !written[fc.Root] && (err != nil || (rel != "." && !filepath.IsLocal(rel))) {
					t.Fatalf("a root resolved outside its folder: %q", fc.Root)
				}
			}
		}
		enc, err := canonjsonEncode(idx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := decodeIndex(enc); err != nil {
			t.Fatalf("what was written does not read back: %v\n%s", err, enc)
		}
	})
}

func FuzzCacheIndex(f *testing.F) {
	f.Add(encodeCacheIndex(map[string]record{"a/b": {meta: meta{size: 3, mtime: 5, mode: 0o644}, hash: strings.Repeat("c", 64)}}))
	f.Add([]byte(cacheHeader + "\n2e2e 1 1 1 1 1 1 - 00\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		files, err := parseCacheIndex(data)
		if err != nil {
			return
		}
		for p := range files {
			if !validRel(p) {
				t.Fatalf("a path that leaves its folder: %q", p)
			}
		}
		if _, err := parseCacheIndex(encodeCacheIndex(files)); err != nil {
			t.Fatal(err)
		}
	})
}

func (e *env) isDir(rel string) bool {
	fi, err := os.Lstat(filepath.Join(e.root, filepath.FromSlash(rel)))
	return err == nil && fi.IsDir()
}

// TestRewindFolders: a rewind removes the folders the turn created once
// they are empty (never one that was there before, never one holding a
// file someone else put there) and makes the empty folders it deleted;
// the undo puts them back as the turn left them.
func TestRewindFolders(t *testing.T) {
	e := newEnv(t, Options{}, Policy{})
	e.write("keep/x.txt", "x\n")
	must(t, os.MkdirAll(filepath.Join(e.root, "empty/inner"), 0o755))
	k, cs := e.turnOf(func() {
		e.write("a/b/c.txt", "c\n")
		must(t, os.MkdirAll(filepath.Join(e.root, "keep/new/deeper"), 0o755))
		e.write("u/t.txt", "t\n")
		must(t, os.RemoveAll(filepath.Join(e.root, "empty")))
	})
	var folders []string
	for _, f := range cs.Folders {
		folders = append(folders, f.Path+" "+string(f.Change))
	}
	want := []string{"a created", "a/b created", "empty deleted", "empty/inner deleted", "keep/new created", "keep/new/deeper created", "u created"}
	if !slices.Equal(folders, want) {
		t.Fatalf("folders %v, want %v", folders, want)
	}
	e.write("u/mine.txt", "the user's\n") // put there since: u stays
	plan, err := e.st.Plan([]string{k}, false)
	must(t, err)
	var ops []string
	for _, f := range plan.Folders {
		ops = append(ops, string(f.Op)+" "+f.Path)
	}
	if want := []string{"delete u", "delete keep/new/deeper", "delete keep/new", "delete a/b", "delete a", "restore empty", "restore empty/inner"}; !slices.Equal(ops, want) {
		t.Fatalf("folder actions %v, want %v", ops, want)
	}
	if !e.isDir("a/b") {
		t.Fatal("the plan removed a folder")
	}
	id, err := e.st.Apply(plan)
	must(t, err)
	for _, gone := range []string{"a", "keep/new", "u/t.txt"} {
		if _, err := os.Lstat(filepath.Join(e.root, gone)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is still there after the rewind: %v", gone, err)
		}
	}
	for _, kept := range []string{"keep", "u", "empty/inner"} {
		if !e.isDir(kept) {
			t.Errorf("%s is not a folder after the rewind", kept)
		}
	}
	if e.read("keep/x.txt") != "x\n" || e.read("u/mine.txt") != "the user's\n" {
		t.Errorf("files outside the turn changed: %q %q", e.read("keep/x.txt"), e.read("u/mine.txt"))
	}
	entries, err := e.st.Entries()
	must(t, err)
	var done []string
	for _, f := range entries[len(entries)-1].Folders {
		done = append(done, f.Path+" "+string(f.Change))
	}
	// u was left (it holds the user's file): the rewind's entry does not
	// say it removed it, so its undo makes nothing of it.
	if want := []string{"keep/new/deeper deleted", "keep/new deleted", "a/b deleted", "a deleted", "empty created", "empty/inner created"}; !slices.Equal(done, want) {
		t.Errorf("the rewind's folders %v, want %v", done, want)
	}
	undo, err := e.st.PlanUndo(id, false)
	must(t, err)
	_, err = e.st.Apply(undo)
	must(t, err)
	if e.read("a/b/c.txt") != "c\n" || !e.isDir("keep/new/deeper") || e.read("u/t.txt") != "t\n" {
		t.Errorf("after the undo: a/b/c.txt %q, keep/new/deeper %v, u/t.txt %q", e.read("a/b/c.txt"), e.isDir("keep/new/deeper"), e.read("u/t.txt"))
	}
	if _, err := os.Lstat(filepath.Join(e.root, "empty")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the undo left the folder the turn deleted: %v", err)
	}
}

// TestRewindFolderNotEmptied: a folder the turn created that holds an
// ignored file (never walked) is not removed, nor is a link standing
// where the folder was.
func TestRewindFolderNotEmptied(t *testing.T) {
	e := newEnv(t, Options{}, Policy{})
	e.write(".gitignore", "*.log\n")
	k, _ := e.turnOf(func() {
		e.write("logs/run.txt", "r\n")
		e.write("logs/run.log", "ignored\n")
		e.write("gone/g.txt", "g\n")
	})
	must(t, os.RemoveAll(filepath.Join(e.root, "gone")))
	must(t, os.Symlink(t.TempDir(), filepath.Join(e.root, "gone")))
	plan, err := e.st.Plan([]string{k}, false)
	must(t, err)
	if len(plan.Conflicts()) != 1 {
		t.Fatalf("plan %+v", plan)
	}
	_, err = e.st.Apply(plan)
	must(t, err)
	if _, err := os.Lstat(filepath.Join(e.root, "logs/run.txt")); !errors.Is(err, fs.ErrNotExist) || e.read("logs/run.log") != "ignored\n" {
		t.Errorf("logs/run.txt: %v; logs/run.log %q", err, e.read("logs/run.log"))
	}
	if !e.isDir("logs") {
		t.Error("a folder holding an ignored file was removed")
	}
	if fi, err := os.Lstat(filepath.Join(e.root, "gone")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the link where the folder was: %v %v", fi, err)
	}
}

// TestRootFollowsPackage: the folder holding the package is kept relative
// to it too, so after the package moved with that folder a rewind puts
// the files back where they now are; a folder elsewhere stays absolute,
// and an index that names roots only absolutely (written before) reads
// as it did.
func TestRootFollowsPackage(t *testing.T) {
	base := t.TempDir()
	root, other := filepath.Join(base, "old", "work"), filepath.Join(base, "other")
	pkg := filepath.Join(root, "Doc.pkg")
	must(t, os.MkdirAll(filepath.Join(pkg, "agent"), 0o700))
	must(t, os.MkdirAll(other, 0o755))
	must(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("a0\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(other, "o.txt"), []byte("o0\n"), 0o644))
	tr, err := NewTracker([]string{root, other}, filepath.Join(base, "state"), Options{Exclude: []string{filepath.Join(pkg, "agent")}})
	must(t, err)
	st, err := Open(pkg, Policy{})
	must(t, err)
	must(t, tr.Begin())
	must(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("a1\n"), 0o644))
	must(t, os.MkdirAll(filepath.Join(root, "sub"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "sub", "n.txt"), []byte("n\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(other, "o.txt"), []byte("o1\n"), 0o644))
	cs, err := tr.End()
	must(t, err)
	must(t, st.Record("n1", "u1", cs))
	data, err := os.ReadFile(filepath.Join(pkg, filepath.FromSlash(IndexFile)))
	must(t, err)
	if n := len(regexp.MustCompile(`"rootRel"\s*:\s*"\."`).FindAll(data, -1)); n != 3 { // a.txt, sub/n.txt, the folder sub
		t.Errorf("%d roots kept relative, want 3:\n%s", n, data)
	}

	moved := filepath.Join(base, "new", "place")
	must(t, os.MkdirAll(filepath.Dir(moved), 0o755))
	must(t, os.Rename(root, moved))
	st, err = Open(filepath.Join(moved, "Doc.pkg"), Policy{})
	must(t, err)
	plan, err := st.Plan([]string{"n1"}, false)
	must(t, err)
	var acts []string
	for _, a := range plan.Actions {
		acts = append(acts, string(a.Op)+" "+filepath.Join(a.Root, a.Path))
	}
	want := []string{"restore " + filepath.Join(moved, "a.txt"), "delete " + filepath.Join(moved, "sub", "n.txt"), "restore " + filepath.Join(other, "o.txt")}
	slices.Sort(want)
	slices.Sort(acts)
	if !slices.Equal(acts, want) || len(plan.Conflicts()) != 0 {
		t.Fatalf("actions %v, want %v", acts, want)
	}
	_, err = st.Apply(plan)
	must(t, err)
	for p, want := range map[string]string{filepath.Join(moved, "a.txt"): "a0\n", filepath.Join(other, "o.txt"): "o0\n"} {
		if got, _ := os.ReadFile(p); string(got) != want {
			t.Errorf("%s = %q after the rewind, want %q", p, got, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(moved, "sub")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the created folder is still there: %v", err)
	}

	// An index from before: absolute roots only, which stay where they
	// were.
	old := regexp.MustCompile(`,\s*"rootRel"\s*:\s*"\."`).ReplaceAll(data, nil)
	if bytes.Contains(old, []byte("rootRel")) {
		t.Fatalf("could not strip rootRel: %s", old)
	}
	must(t, os.WriteFile(filepath.Join(moved, "Doc.pkg", filepath.FromSlash(IndexFile)), old, 0o600))
	plan, err = st.Plan([]string{"n1"}, false)
	must(t, err)
	for _, a := range plan.Actions {
		if a.Root != root && a.Root != other {
			t.Errorf("an old index's root read as %s", a.Root)
		}
	}
}

// TestTooLarge: a folder whose files of kept contents hold more than
// MaxTotalSize bytes is not checkpointed (nothing is read into the cache);
// files over MaxFileSize and links do not count, and a folder back under
// the bound is checkpointed again.
func TestTooLarge(t *testing.T) {
	e := newEnv(t, Options{MaxFileSize: 100, MaxTotalSize: 250}, Policy{})
	e.write("a.txt", strings.Repeat("a", 100))
	e.write("sub/b.txt", strings.Repeat("b", 100))
	e.write("big.bin", strings.Repeat("c", 1000)) // over MaxFileSize: not counted
	if err := e.tr.Begin(); err != nil {
		t.Fatalf("200 bytes of 250: %v", err)
	}
	if _, err := e.tr.End(); err != nil {
		t.Fatal(err)
	}
	reads := e.tr.reads
	e.write("sub/deeper/c.txt", strings.Repeat("d", 51))
	err := e.tr.Begin()
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("251 bytes of 250: Begin = %v, want ErrTooLarge", err)
	}
	if e.tr.reads != reads {
		t.Errorf("a folder over the bound had %d files read", e.tr.reads-reads)
	}
	if cs, _ := e.tr.End(); len(cs.Files) != 0 {
		t.Errorf("a turn of a folder over the bound changed %+v", summary(cs))
	}
	must(t, os.Remove(filepath.Join(e.root, "a.txt")))
	_, cs := e.turnOf(func() { e.write("sub/b.txt", "b 2\n") })
	if got := summary(cs); len(got) != 1 || got[0].path != "sub/b.txt" || got[0].kind != Modified {
		t.Errorf("back under the bound: %+v", got)
	}
}
