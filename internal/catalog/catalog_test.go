package catalog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"spbridge/internal/clis"
	"spbridge/internal/history"
	"spbridge/internal/sessionindex"
)

// claudeSessions makes Claude Code sessions of the folder cwd in a new
// store, each id updated at its time, and returns the store.
func claudeSessions(t *testing.T, cwd string, at map[string]time.Time) string {
	t.Helper()
	store := t.TempDir()
	dir := filepath.Join(store, "projects", regexp.MustCompile(`[^A-Za-z0-9]`).ReplaceAllString(cwd, "-"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for id, mod := range at {
		data := `{"type":"user","sessionId":"` + id + `","cwd":"` + cwd + `","message":{"role":"user","content":"message ` + id + `"}}` + "\n"
		p := filepath.Join(dir, id+".jsonl")
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	return store
}

// TestCatalogMerges: the list is the packages of the index still there
// and the CLIs' own sessions not imported into one, not ran on by one and
// not hidden, newest first; a package says the CLI session it came from
// and the one it last ran on.
func TestCatalogMerges(t *testing.T) {
	cwd := t.TempDir()
	now := time.Now()
	store := claudeSessions(t, cwd, map[string]time.Time{
		"own": now.Add(-time.Hour), "imported": now.Add(-2 * time.Hour),
		"ran": now.Add(-3 * time.Hour), "hidden": now.Add(-4 * time.Hour),
	})
	state := t.TempDir()
	ix := sessionindex.New(state)
	pkg, gone := filepath.Join(t.TempDir(), "Doc.silverpoint"), filepath.Join(t.TempDir(), "Gone.silverpoint")
	for _, p := range []string{pkg, gone} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Imported(pkg, cwd, "claude:imported", "claude", "imported", "Doc"); err != nil {
		t.Fatal(err)
	}
	if err := ix.Ran(pkg, "claude", "ran"); err != nil {
		t.Fatal(err)
	}
	if err := ix.Touch(gone, cwd, nil); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(gone)
	if err := ix.Hide("claude:hidden"); err != nil {
		t.Fatal(err)
	}
	c := &Catalog{Index: ix, History: &history.Options{Stores: clis.Stores(), Dirs: map[string]string{"claude": store, "codex": t.TempDir()}}}
	all, err := c.All(cwd)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range all {
		got = append(got, fmt.Sprintf("%s pkg=%q from=%v last=%v", e.ID, e.Package, e.From, e.LastRan))
	}
	want := []string{
		fmt.Sprintf("claude:imported pkg=%q from=claude:imported last=claude:ran", pkg), // an imported package keeps its CLI session's id
		`claude:own pkg="" from=claude:own last=<nil>`,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("listed\n%q\nwant\n%q", got, want)
	}
	if s := ParseSession("claude:own"); s == nil || s.String() != "claude:own" || s.Continue() == "" {
		t.Errorf("ParseSession(claude:own) = %v", s)
	}
	if s := ParseSession("nocli:own"); s != nil {
		t.Errorf("ParseSession of a CLI spbridge does not have = %v", s)
	}
}

// TestCatalogPages: the pages after a first are cut from the first's
// listing while it is kept, whatever changed meanwhile; after Forget, a
// page lists anew from its cursor's place.
func TestCatalogPages(t *testing.T) {
	cwd := t.TempDir()
	base := time.Now().Add(-time.Hour)
	at := map[string]time.Time{}
	for i := range PageSize + 10 {
		at[fmt.Sprintf("s%04d", i)] = base.Add(-time.Duration(i) * time.Minute)
	}
	store := claudeSessions(t, cwd, at)
	c := &Catalog{History: &history.Options{Stores: clis.Stores(), Dirs: map[string]string{"claude": store, "codex": t.TempDir()}}}
	first, next, err := c.Page(cwd, nil)
	if err != nil || len(first) != PageSize || first[0].ID != "claude:s0000" || next == "" {
		t.Fatalf("first page: %d entries, next %q, %v", len(first), next, err)
	}
	cursor, err := ParseCursor(next)
	if err != nil || cursor.Snapshot == 0 {
		t.Fatalf("cursor %+v, %v", cursor, err)
	}
	os.Remove(filepath.Join(store, "projects", regexp.MustCompile(`[^A-Za-z0-9]`).ReplaceAllString(cwd, "-"), fmt.Sprintf("s%04d.jsonl", PageSize)))
	rest, next, err := c.Page(cwd, cursor)
	if err != nil || len(rest) != 10 || rest[0].ID != fmt.Sprintf("claude:s%04d", PageSize) || next != "" {
		t.Fatalf("the page after: %d entries, next %q, %v", len(rest), next, err)
	}
	c.snapshots.clear() // as a Delete does
	if rest, _, _ = c.Page(cwd, cursor); len(rest) != 9 || rest[0].ID != fmt.Sprintf("claude:s%04d", PageSize+1) {
		t.Errorf("a page listed anew: %d entries from %v", len(rest), rest)
	}
	if _, err := ParseCursor("not a cursor"); err != sessionindex.ErrBadCursor {
		t.Errorf("a bad cursor: %v", err)
	}
}

// TestCatalogDelete: a package spbridge made in the sessions folder is
// removed and forgotten, with the CLI sessions it came from and ran on
// hidden; a user's document is only forgotten; a CLI's own session is
// hidden; an unknown one is ErrUnknown.
func TestCatalogDelete(t *testing.T) {
	state := t.TempDir()
	sessions := filepath.Join(state, "sessions")
	ix := sessionindex.New(state)
	made, doc := filepath.Join(sessions, "a"), filepath.Join(t.TempDir(), "Doc.silverpoint")
	for _, p := range []string{made, doc} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Imported(made, "/w", "claude:from", "claude", "from", "A"); err != nil {
		t.Fatal(err)
	}
	if err := ix.Ran(made, "claude", "ran"); err != nil {
		t.Fatal(err)
	}
	if err := ix.Touch(doc, "/w", nil); err != nil {
		t.Fatal(err)
	}
	c := &Catalog{Index: ix}
	d, err := c.Delete("claude:from", sessions)
	if err != nil || !d.Removed || d.Package != made || fmt.Sprint(d.Hidden) != "[claude:ran claude:from]" {
		t.Errorf("delete of a made package: %+v, %v", d, err)
	}
	if _, err := os.Stat(made); !os.IsNotExist(err) {
		t.Errorf("the made package is still there: %v", err)
	}
	if d, err = c.Delete(doc, sessions); err != nil || d.Removed || d.Package != doc {
		t.Errorf("delete of a document: %+v, %v", d, err)
	}
	if _, err := os.Stat(doc); err != nil {
		t.Errorf("the document was removed: %v", err)
	}
	if d, err = c.Delete("claude:own", sessions); err != nil || fmt.Sprint(d.Hidden) != "[claude:own]" {
		t.Errorf("delete of a CLI's session: %+v, %v", d, err)
	}
	hidden, err := ix.Hidden()
	if err != nil || !hidden["claude:own"] || !hidden["claude:from"] || !hidden["claude:ran"] {
		t.Errorf("hidden %v, %v", hidden, err)
	}
	if _, err := c.Delete("/nowhere", sessions); err != ErrUnknown {
		t.Errorf("delete of an unknown session: %v", err)
	}
}

// TestCatalogFind: a CLI's own session is found as the package the index
// keeps for it (unless the open names another), else imported from its
// CLI's store; one the store does not have is a NotFoundError.
func TestCatalogFind(t *testing.T) {
	cwd := t.TempDir()
	store := claudeSessions(t, cwd, map[string]time.Time{"imported": time.Now(), "own": time.Now()})
	ix := sessionindex.New(t.TempDir())
	pkg := filepath.Join(t.TempDir(), "Doc.silverpoint")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := ix.Imported(pkg, cwd, "claude:imported", "claude", "imported", "Doc"); err != nil {
		t.Fatal(err)
	}
	c := &Catalog{Index: ix, History: &history.Options{Stores: clis.Stores(), Dirs: map[string]string{"claude": store, "codex": t.TempDir()}}}
	if f, err := c.Find(Session{CLI: "claude", ID: "imported"}, ""); err != nil || f.Package != pkg || f.Conv != nil {
		t.Errorf("the imported session: %+v %v", f, err)
	}
	if f, err := c.Find(Session{CLI: "claude", ID: "imported"}, pkg); err != nil || f.Package != pkg {
		t.Errorf("the imported session in its package: %+v %v", f, err)
	}
	for _, tc := range []struct{ id, pkg string }{{"own", ""}, {"imported", filepath.Join(t.TempDir(), "Other.silverpoint")}} {
		f, err := c.Find(Session{CLI: "claude", ID: tc.id}, tc.pkg)
		if err != nil || f.Package != "" || f.Conv == nil || len(f.Conv.Items) != 1 || f.Cwd != cwd || f.Title != "message "+tc.id {
			t.Errorf("%s into %q: %+v %v", tc.id, tc.pkg, f, err)
		}
	}
	_, err := c.Find(Session{CLI: "claude", ID: "none"}, "")
	var nf *NotFoundError
	if !errors.As(err, &nf) || !strings.HasPrefix(err.Error(), `session "claude:none": `) {
		t.Errorf("a session the store does not have: %v", err)
	}
}
