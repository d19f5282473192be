package sessionindex

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rivo/uniseg"
)

// clocked returns an index in a new folder whose clock starts at 2026-01-01
// and moves a second each change.
func clocked(t *testing.T) *Index {
	t.Helper()
	ix := New(filepath.Join(t.TempDir(), "state"))
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	ix.now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}
	return ix
}

func TestTitle(t *testing.T) {
	family := "👨‍👩‍👧‍👦" // one grapheme cluster of seven code points
	for _, tc := range []struct{ in, want string }{
		{"Make the headline shorter", "Make the headline shorter"},
		{"  two\n\nlines\t here ", "two lines here"},
		{strings.Repeat("a", 120), strings.Repeat("a", 120)},
		{strings.Repeat("a", 121), strings.Repeat("a", 120) + "…"},
		{strings.Repeat("a", 119) + family + "tail", strings.Repeat("a", 119) + family + "…"},
		{strings.Repeat("e\u0301", 130), strings.Repeat("e\u0301", 120) + "…"},
		{strings.Repeat("a", 119) + " b", strings.Repeat("a", 119) + "…"},
	} {
		got := Title(tc.in)
		if got != tc.want {
			t.Errorf("Title(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if n := uniseg.GraphemeClusterCount(got); n > TitleLen+1 {
			t.Errorf("Title(%q) has %d clusters", tc.in, n)
		}
	}
}

func TestTouchRecordList(t *testing.T) {
	ix := clocked(t)
	docs := "/home/me/docs"
	pkgs := []string{"/home/me/docs/A.silverpoint", "/home/me/docs/B.silverpoint", "/elsewhere/C.silverpoint"}
	for i, p := range pkgs {
		cwd := docs
		if i == 2 {
			cwd = "/elsewhere"
		}
		if err := ix.Touch(p, cwd, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Record(pkgs[0], "", "First message\nof A"); err != nil {
		t.Fatal(err)
	}
	if err := ix.Record(pkgs[0], "", "second message"); err != nil {
		t.Fatal(err)
	}
	e, ok, err := ix.Get(pkgs[0])
	if err != nil || !ok || e.Title != "First message of A" || e.Cwd != docs {
		t.Errorf("Get(A) = %+v, %v, %v", e, ok, err)
	}
	page, err := ix.List("", "", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range page.Entries {
		got = append(got, filepath.Base(e.Package))
	}
	if want := "A.silverpoint C.silverpoint B.silverpoint"; strings.Join(got, " ") != want || page.NextCursor != "" {
		t.Errorf("List = %v (cursor %q), want %s", got, page.NextCursor, want)
	}
	page, _ = ix.List(docs+"/", "", 0, nil)
	if len(page.Entries) != 2 {
		t.Errorf("List(cwd %s) = %d entries, want 2", docs, len(page.Entries))
	}
	if err := ix.SetTitle(pkgs[0], ""); err != nil {
		t.Fatal(err)
	}
	ix.Record(pkgs[0], "", "after New Conversation")
	if e, _, _ := ix.Get(pkgs[0]); e.Title != "after New Conversation" {
		t.Errorf("title after SetTitle(\"\") and Record = %q", e.Title)
	}
	if err := ix.Remove(pkgs[1]); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := ix.Get(pkgs[1]); ok {
		t.Error("B still there after Remove")
	}
	if err := ix.Remove("/not/there"); err != nil {
		t.Errorf("Remove(missing) = %v", err)
	}
	st, err := os.Stat(filepath.Join(ix.dir, File))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("index file: %v %v", st, err)
	}
}

func TestPagination(t *testing.T) {
	ix := clocked(t)
	for i := range 7 {
		if err := ix.Touch(fmt.Sprintf("/p/%d.silverpoint", i), "/p", nil); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	cursor := ""
	pages := 0
	for {
		page, err := ix.List("/p", cursor, 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, e := range page.Entries {
			got = append(got, strings.TrimSuffix(filepath.Base(e.Package), ".silverpoint"))
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
		if pages == 1 {
			// A change between pages: 6 moves to the front, already seen.
			ix.Touch("/p/0.silverpoint", "/p", nil)
		}
	}
	// 0 moved ahead of the cursor after the first page: not listed again
	// nor in the wrong place.
	if want := "6 5 4 3 2 1"; strings.Join(got, " ") != want || pages != 2 {
		t.Errorf("listed %q in %d pages, want %q in 2", got, pages, want)
	}
	if _, err := ix.List("", "not a cursor!", 3, nil); !errors.Is(err, ErrBadCursor) {
		t.Errorf("List(bad cursor) = %v, want ErrBadCursor", err)
	}
}

// TestConcurrent changes one index from many Index values at once (each
// change opens the lock file anew, as another process would): none is lost.
func TestConcurrent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		wg.Go(func() {
			errs <- New(dir).Record(fmt.Sprintf("/p/%d.silverpoint", i), "/p", fmt.Sprint("message ", i))
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	page, err := New(dir).List("", "", 100, nil)
	if err != nil || len(page.Entries) != 40 {
		t.Errorf("List = %d entries, %v; want 40", len(page.Entries), err)
	}
}

func TestUnreadableIndex(t *testing.T) {
	ix := clocked(t)
	os.MkdirAll(ix.dir, 0o700)
	os.WriteFile(filepath.Join(ix.dir, File), []byte("{not json"), 0o600)
	if page, err := ix.List("", "", 0, nil); err != nil || len(page.Entries) != 0 {
		t.Errorf("List of an unreadable index = %v, %v", page, err)
	}
	if err := ix.Touch("/p/a.silverpoint", "/p", nil); err != nil {
		t.Fatal(err)
	}
	if page, _ := ix.List("", "", 0, nil); len(page.Entries) != 1 {
		t.Errorf("after a change: %v", page.Entries)
	}
}

// TestAdditionalDirectories: each open records the folders it was given,
// in order, replacing the last open's; a turn keeps them; an open without
// any clears them.
func TestAdditionalDirectories(t *testing.T) {
	ix := clocked(t)
	pkg := "/home/me/docs/A.silverpoint"
	dirs := []string{"/home/me/assets/", "/srv/shared", "/home/me/assets/../lib"}
	if err := ix.Touch(pkg, "/home/me/docs", dirs); err != nil {
		t.Fatal(err)
	}
	if err := ix.Record(pkg, "", "hello"); err != nil {
		t.Fatal(err)
	}
	want := []string{"/home/me/assets", "/srv/shared", "/home/me/lib"}
	e, _, err := ix.Get(pkg)
	if err != nil || !slices.Equal(e.AdditionalDirectories, want) {
		t.Errorf("Get after Touch(%q) and Record = %q, %v, want %q", dirs, e.AdditionalDirectories, err, want)
	}
	page, _ := ix.List("", "", 0, nil)
	if len(page.Entries) != 1 || !slices.Equal(page.Entries[0].AdditionalDirectories, want) {
		t.Errorf("List = %+v, want the folders %q", page.Entries, want)
	}
	if err := ix.Touch(pkg, "/home/me/docs", []string{"/srv/shared"}); err != nil {
		t.Fatal(err)
	}
	if e, _, _ := ix.Get(pkg); !slices.Equal(e.AdditionalDirectories, []string{"/srv/shared"}) {
		t.Errorf("after a second open with one folder: %q", e.AdditionalDirectories)
	}
	if err := ix.Touch(pkg, "/home/me/docs", nil); err != nil {
		t.Fatal(err)
	}
	if e, _, _ := ix.Get(pkg); e.AdditionalDirectories != nil {
		t.Errorf("after an open without folders: %q, want none", e.AdditionalDirectories)
	}
	data, _ := os.ReadFile(filepath.Join(ix.dir, File))
	if strings.Contains(string(data), "additionalDirectories") {
		t.Errorf("the index keeps an empty list:\n%s", data)
	}
}

// TestListLeavesOutGone: packages that are gone take no room on a page, so
// no page is empty while a cursor says more follows, and the last live
// entry's page has no cursor even when gone ones follow it.
func TestListLeavesOutGone(t *testing.T) {
	ix := clocked(t)
	root := t.TempDir()
	var pkgs []string
	for i := range 7 {
		p := filepath.Join(root, fmt.Sprintf("%d.silverpoint", i))
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := ix.Touch(p, root, nil); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	// Newest first: 6 5 4 3 2 1 0. The first page's two and the last three
	// are gone.
	for _, i := range []int{6, 5, 2, 1, 0} {
		if err := os.Remove(pkgs[i]); err != nil {
			t.Fatal(err)
		}
	}
	for _, size := range []int{1, 2, 3} {
		var got []string
		cursor := ""
		for pages := 1; ; pages++ {
			page, err := ix.List(root, cursor, size, Present)
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Entries) == 0 && page.NextCursor != "" {
				t.Fatalf("page size %d: page %d is empty with a cursor", size, pages)
			}
			for _, e := range page.Entries {
				got = append(got, strings.TrimSuffix(filepath.Base(e.Package), ".silverpoint"))
			}
			if page.NextCursor == "" {
				break
			}
			if pages > 7 {
				t.Fatalf("page size %d: more pages than entries", size)
			}
			cursor = page.NextCursor
		}
		if want := "4 3"; strings.Join(got, " ") != want {
			t.Errorf("page size %d: listed %q, want %q", size, got, want)
		}
	}
	// The index keeps them (a package on a folder that comes back is
	// listed again).
	if page, _ := ix.List(root, "", 100, nil); len(page.Entries) != 7 {
		t.Errorf("without keep: %d entries, want 7", len(page.Entries))
	}
}

// TestBadEntryDropsOnlyIt: an entry of the index file that cannot be read
// is left out alone, and the next change keeps the others.
func TestBadEntryDropsOnlyIt(t *testing.T) {
	ix := clocked(t)
	if err := os.MkdirAll(ix.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	index := `{"version":1,"sessions":[
 {"package":"/p/A.silverpoint","cwd":"/p","title":"a","updatedAt":"2025-06-01T00:00:00Z"},
 {"package":"/p/B.silverpoint","cwd":5,"updatedAt":"2025-06-02T00:00:00Z"},
 {"package":"/p/C.silverpoint","cwd":"/p","additionalDirectories":["/lib"],"updatedAt":"2025-06-03T00:00:00Z"},
 {"package":"/p/D.silverpoint","cwd":"/p","updatedAt":"yesterday"},
 {"package":["/p/E.silverpoint"],"cwd":"/p","updatedAt":"2025-06-05T00:00:00Z"},
 {"cwd":"/p","updatedAt":"2025-06-06T00:00:00Z"},
 "not an entry", null, 7,
 {"package":"/p/F.silverpoint","cwd":"/p","title":["x"],"updatedAt":"2025-06-07T00:00:00Z"}
]}`
	if err := os.WriteFile(filepath.Join(ix.dir, File), []byte(index), 0o600); err != nil {
		t.Fatal(err)
	}
	names := func() string {
		t.Helper()
		page, err := ix.List("", "", 100, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range page.Entries {
			got = append(got, strings.TrimSuffix(filepath.Base(e.Package), ".silverpoint"))
		}
		return strings.Join(got, " ")
	}
	if got, want := names(), "C A"; got != want {
		t.Fatalf("listed %q, want %q", got, want)
	}
	if err := ix.Touch("/p/G.silverpoint", "/p", nil); err != nil {
		t.Fatal(err)
	}
	if got, want := names(), "G C A"; got != want {
		t.Errorf("after a change: listed %q, want %q", got, want)
	}
	if e, ok, _ := ix.Get("/p/C.silverpoint"); !ok || e.Cwd != "/p" || !slices.Equal(e.AdditionalDirectories, []string{"/lib"}) {
		t.Errorf("C after the change = %+v, %v", e, ok)
	}
	if e, ok, _ := ix.Get("/p/A.silverpoint"); !ok || e.Title != "a" {
		t.Errorf("A after the change = %+v, %v", e, ok)
	}
}

// TestImported: an imported package is found by the session id it was
// imported under and keeps the CLI session it came from; its entry's ID is
// that id, another's its package path.
func TestImported(t *testing.T) {
	ix := New(t.TempDir())
	pkg := filepath.Join(t.TempDir(), "Doc")
	if err := ix.Imported(pkg, "/work", "claude:abc", "claude", "abc", "fix the build"); err != nil {
		t.Fatal(err)
	}
	if err := ix.Touch(filepath.Join(t.TempDir(), "Other"), "/work", nil); err != nil {
		t.Fatal(err)
	}
	e, ok, err := ix.Session("claude:abc")
	if err != nil || !ok || e.Package != pkg || e.CLISession != "abc" || e.Backend != "claude" || e.Title != "fix the build" || e.ID() != "claude:abc" {
		t.Fatalf("session: %+v %v %v", e, ok, err)
	}
	if _, ok, _ := ix.Session("codex:abc"); ok {
		t.Error("found under another id")
	}
	page, _ := ix.List("/work", "", 0, nil)
	var ids []string
	for _, e := range page.Entries {
		ids = append(ids, e.ID())
	}
	if len(ids) != 2 || !slices.Contains(ids, "claude:abc") || slices.Contains(ids, pkg) {
		t.Errorf("ids %q", ids)
	}
}
