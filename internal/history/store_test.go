package history_test

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spbridge/internal/history"
	"spbridge/internal/history/historytest"
	"spbridge/internal/itemmap"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestImportGolden: the golden import (historytest.Golden, each CLI's
// recordings' test) on the store of a CLI history knows nothing of: told
// by its content, imported to its golden conversation.json byte for byte,
// read back as format 1.
func TestImportGolden(t *testing.T) {
	historytest.Golden(t, []history.Store{historytest.Lines{}}, []historytest.Case{
		{Name: "lines", Backend: "lines", Path: "testdata/history/lines/a1.log"},
	}, *update)
}

// TestStoreOfAnotherCLI: a store history knows nothing of lists (newest
// first, its title index before a file's own title, one folder's, through
// the head cache), is found by id, and imports (told by its first line)
// with the store's words in its messages.
func TestStoreOfAnotherCLI(t *testing.T) {
	dir := t.TempDir()
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	put := func(name, data string, mod time.Time) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mod, mod); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := put("a.log", `{"log":"a","cwd":"/w"}`+"\n"+`{"say":"hello"}`+"\n", base.Add(time.Hour))
	put("b.log", `{"log":"b","cwd":"/x"}`+"\n"+`{"say":"bye  now"}`+"\n", base.Add(2*time.Hour))
	put("c.log", `{"log":"c","cwd":"/w"}`+"\n", base.Add(3*time.Hour)) // no message: not a session
	put("titles.json", `{"a":"Named by the CLI"}`, base)
	opts := history.Options{Stores: []history.Store{historytest.Lines{}}, Dirs: map[string]string{"lines": dir}}
	describe := func(es []history.Entry) string {
		var s []string
		for _, e := range es {
			s = append(s, e.Backend+" "+e.ID+" "+e.Cwd+" "+e.Title)
		}
		return strings.Join(s, "\n")
	}
	want := "lines b /x bye now\nlines a /w Named by the CLI"
	for _, cache := range []*history.HeadCache{nil, history.NewHeadCache(t.TempDir())} {
		o := opts
		o.Cache = cache
		for range 2 { // the second from the cache, when there is one
			if got, err := history.List(o); err != nil || describe(got) != want {
				t.Errorf("list (cache %v)\n%s\nwant\n%s\n%v", cache != nil, describe(got), want, err)
			}
		}
	}
	o := opts
	o.Cwd = "/w"
	if got, err := history.List(o); err != nil || describe(got) != "lines a /w Named by the CLI" {
		t.Errorf("one folder: %s %v", describe(got), err)
	}
	o = opts
	o.Backend = "other"
	if _, err := history.List(o); err == nil || err.Error() != `unknown backend "other": lines` {
		t.Errorf("another backend: %v", err)
	}
	if e, err := history.Find(opts, "b"); err != nil || e.Cwd != "/x" {
		t.Errorf("find: %+v %v", e, err)
	}
	if _, err := history.Find(opts, "c"); err == nil || err.Error() != "no Lines session c (looked in "+dir+")" {
		t.Errorf("find c: %v", err)
	}
	conv, rep, err := history.ImportFile("", a, history.ImportOptions{Stores: opts.Stores, NewID: itemmap.SequentialIDs()})
	if err != nil || rep.Backend != "lines" || rep.ID != "a" || rep.Cwd != "/w" || rep.Turns != 1 {
		t.Fatalf("import: %+v %v", rep, err)
	}
	if len(conv.Items) != 1 || conv.Items[0].String("text") != "hello" || len(conv.History) != 1 ||
		conv.Provider != "line-provider" || conv.Model != "line-model" {
		t.Errorf("imported %d items, %d messages, %q %q", len(conv.Items), len(conv.History), conv.Provider, conv.Model)
	}
	other := put("other.txt", `{"text":"not a log"}`+"\n", base)
	if _, _, err := history.ImportFile("", other, history.ImportOptions{Stores: opts.Stores}); !errors.Is(err, history.ErrUnknownFormat) ||
		!strings.Contains(err.Error(), "not a Lines session file") {
		t.Errorf("another file: %v", err)
	}
	if _, _, err := history.ImportFile("other", a, history.ImportOptions{Stores: opts.Stores}); err == nil || !strings.Contains(err.Error(), `unknown backend "other": lines`) {
		t.Errorf("another backend: %v", err)
	}
}
