package history

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"spbridge/internal/archive"
	"spbridge/internal/itemmap"
)

// lineStore is a store this package knows nothing of: its sessions are
// DIR/<id>.log, a first line {"log":ID,"cwd":FOLDER} and then one line
// {"say":TEXT} a message of the user's; DIR/titles.json names some.
type lineStore struct{}

func (lineStore) Name() string            { return "lines" }
func (lineStore) Display() string         { return "Lines" }
func (lineStore) Dir() string             { return "" }
func (lineStore) Where(dir string) string { return dir }
func (lineStore) Files(dir, _ string) []File {
	return RegularFiles(dir, func(name string) bool { return strings.HasSuffix(name, ".log") })
}
func (lineStore) FileID(path string) string { return strings.TrimSuffix(filepath.Base(path), ".log") }
func (lineStore) Sniff(v gjson.Result) bool { return v.Get("log").Exists() }
func (lineStore) TitleIndex(dir string) string {
	return filepath.Join(dir, "titles.json")
}
func (lineStore) ReadTitles(path string) map[string]string {
	m := map[string]string{}
	if data, err := os.ReadFile(path); err == nil {
		json.Unmarshal(data, &m)
	}
	return m
}

func (s lineStore) Summarize(f File) (Entry, bool) {
	r, size, err := OpenRegular(f.Path)
	if err != nil {
		return Entry{}, false
	}
	defer r.Close()
	e := Entry{Backend: s.Name(), ID: s.FileID(f.Path), Path: f.Path, UpdatedAt: f.Mod, Size: size}
	HeadLines(r, size, func(line []byte) bool {
		v, ok := Object(line)
		if ok && v.Get("cwd").Exists() {
			e.Cwd = v.Get("cwd").String()
		}
		if ok && v.Get("say").String() != "" {
			e.Title = CutTitle(v.Get("say").String())
			return false
		}
		return true
	})
	return e, e.Title != ""
}

func (lineStore) NewImporter(newID itemmap.IDFunc, rep *Report) Importer {
	return &lineImport{newID: newID, rep: rep, conv: &archive.Conversation{}}
}

type lineImport struct {
	newID itemmap.IDFunc
	rep   *Report
	conv  *archive.Conversation
	turn  Turn
}

func (li *lineImport) Line(line []byte) bool {
	v, ok := Object(line)
	switch {
	case !ok:
		return false
	case v.Get("log").Exists():
		li.rep.ID, li.rep.Cwd = v.Get("log").String(), v.Get("cwd").String()
		return true
	case v.Get("say").String() != "":
		text := v.Get("say").String()
		li.rep.Turns++
		li.turn = Turn{User: &archive.Message{Role: "user", Content: []archive.Block{archive.NewTextBlock(text)}}, First: len(li.conv.Items), Model: "line-model", Active: true}
		it := archive.ItemFromMap(map[string]any{"id": li.newID(), "type": archive.TypeUser, "text": text})
		ApplyResult(li.conv, itemmap.Result{Changes: []itemmap.Change{{Op: itemmap.OpAdd, Item: it}}})
		EndTurn(li.conv, &li.turn, &itemmap.TurnEnd{Status: itemmap.TurnCompleted}, "line-provider")
		return true
	}
	return false
}

func (li *lineImport) Finish() *archive.Conversation { return li.conv }

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
	opts := Options{Stores: []Store{lineStore{}}, Dirs: map[string]string{"lines": dir}}
	describe := func(es []Entry) string {
		var s []string
		for _, e := range es {
			s = append(s, e.Backend+" "+e.ID+" "+e.Cwd+" "+e.Title)
		}
		return strings.Join(s, "\n")
	}
	want := "lines b /x bye now\nlines a /w Named by the CLI"
	for _, cache := range []*HeadCache{nil, NewHeadCache(t.TempDir())} {
		o := opts
		o.Cache = cache
		for range 2 { // the second from the cache, when there is one
			if got, err := List(o); err != nil || describe(got) != want {
				t.Errorf("list (cache %v)\n%s\nwant\n%s\n%v", cache != nil, describe(got), want, err)
			}
		}
	}
	o := opts
	o.Cwd = "/w"
	if got, err := List(o); err != nil || describe(got) != "lines a /w Named by the CLI" {
		t.Errorf("one folder: %s %v", describe(got), err)
	}
	o = opts
	o.Backend = "other"
	if _, err := List(o); err == nil || err.Error() != `unknown backend "other": lines` {
		t.Errorf("another backend: %v", err)
	}
	if e, err := Find(opts, "b"); err != nil || e.Cwd != "/x" {
		t.Errorf("find: %+v %v", e, err)
	}
	if _, err := Find(opts, "c"); err == nil || err.Error() != "no Lines session c (looked in "+dir+")" {
		t.Errorf("find c: %v", err)
	}
	conv, rep, err := ImportFile("", a, ImportOptions{Stores: opts.Stores, NewID: itemmap.SequentialIDs()})
	if err != nil || rep.Backend != "lines" || rep.ID != "a" || rep.Cwd != "/w" || rep.Turns != 1 {
		t.Fatalf("import: %+v %v", rep, err)
	}
	if len(conv.Items) != 1 || conv.Items[0].String("text") != "hello" || len(conv.History) != 1 ||
		conv.Provider != "line-provider" || conv.Model != "line-model" {
		t.Errorf("imported %d items, %d messages, %q %q", len(conv.Items), len(conv.History), conv.Provider, conv.Model)
	}
	other := put("other.txt", `{"text":"not a log"}`+"\n", base)
	if _, _, err := ImportFile("", other, ImportOptions{Stores: opts.Stores}); !errors.Is(err, ErrUnknownFormat) ||
		!strings.Contains(err.Error(), "not a Lines session file") {
		t.Errorf("another file: %v", err)
	}
	if _, _, err := ImportFile("other", a, ImportOptions{Stores: opts.Stores}); err == nil || !strings.Contains(err.Error(), `unknown backend "other": lines`) {
		t.Errorf("another backend: %v", err)
	}
}
