package search

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spbridge/internal/archive"
	"spbridge/internal/restore"
	"spbridge/internal/sessionindex"
)

// turn is one user message and the assistant's answer.
type turn struct{ user, assistant string }

// writePackage saves a package at dir holding turns (appended to what it
// holds), as spbridge saves one.
func writePackage(t testing.TB, dir string, turns ...turn) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p, err := archive.Open(dir, archive.KindDocument, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, tn := range turns {
		u := archive.NewItem(archive.TypeUser)
		u.Set("text", tn.user)
		a := archive.NewItem(archive.TypeAssistant)
		a.Set("text", tn.assistant)
		p.Conv.Items = append(p.Conv.Items, u, a)
	}
	if _, err := p.Save(true); err != nil {
		t.Fatal(err)
	}
}

// fixture is a state folder whose sessions index keeps packages.
type fixture struct {
	t     testing.TB
	state string
	docs  string
	six   *sessionindex.Index
}

func newFixture(t testing.TB) *fixture {
	root := t.TempDir()
	f := &fixture{t: t, state: filepath.Join(root, "state"), docs: filepath.Join(root, "docs")}
	f.six = sessionindex.New(f.state)
	return f
}

// add makes the package name of the folder cwd, with turns, and records it
// in the sessions index.
func (f *fixture) add(name, cwd string, turns ...turn) string {
	f.t.Helper()
	pkg := filepath.Join(f.docs, name)
	writePackage(f.t, pkg, turns...)
	if err := f.six.Touch(pkg, cwd, nil); err != nil {
		f.t.Fatal(err)
	}
	if len(turns) > 0 {
		if err := f.six.Record(pkg, cwd, turns[0].user); err != nil {
			f.t.Fatal(err)
		}
	}
	return pkg
}

func (f *fixture) find(query, cwd string) Result {
	f.t.Helper()
	q, err := ParseQuery(query)
	if err != nil {
		f.t.Fatal(err)
	}
	res, err := Find(context.Background(), f.state, Request{Query: q, Sets: []Set{Packages(f.six, cwd)}, Cwd: cwd, Snippets: -1})
	if err != nil {
		f.t.Fatal(err)
	}
	return res
}

func refs(hits []Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, filepath.Base(h.Ref))
	}
	return out
}

func TestBuildAndSearch(t *testing.T) {
	f := newFixture(t)
	f.add("a", "/w/one", turn{"Make the headline shorter", "The headline now reads Spring sale."})
	f.add("b", "/w/two", turn{"Colour the background blue", "Done: the background is blue."})
	res := f.find("headline", "")
	if got := refs(res.Hits); strings.Join(got, ",") != "a" {
		t.Fatalf("hits %v, want [a]", got)
	}
	if st := res.Updates[0]; st.Indexed != 2 || st.Listed != 2 {
		t.Errorf("first build: %+v, want 2 indexed of 2", st)
	}
	h := res.Hits[0]
	if h.Kind != KindPackage || h.Cwd != "/w/one" || h.Title != "Make the headline shorter" {
		t.Errorf("hit %+v", h)
	}
	if len(h.Snippets) != 2 {
		t.Fatalf("snippets %+v, want the user's and the assistant's line", h.Snippets)
	}
	if s := h.Snippets[0]; s.Label != "User" || s.Marked("[", "]") != "Make the [headline] shorter" {
		t.Errorf("snippet 0 = %q %q", s.Label, s.Marked("[", "]"))
	}
	if s := h.Snippets[1]; s.Label != "Assistant" || s.Marked("[", "]") != "The [headline] now reads Spring sale." {
		t.Errorf("snippet 1 = %q %q", s.Label, s.Marked("[", "]"))
	}
	// Every term must be there; case and diacritics do not count.
	if got := refs(f.find("BLUE background", "").Hits); strings.Join(got, ",") != "b" {
		t.Errorf("BLUE background: %v", got)
	}
	if got := refs(f.find("blue headline", "").Hits); len(got) != 0 {
		t.Errorf("blue headline: %v, want none", got)
	}
	// --cwd: that folder's alone.
	if got := refs(f.find("the", "/w/two").Hits); strings.Join(got, ",") != "b" {
		t.Errorf("cwd /w/two: %v", got)
	}
	// A second search reads nothing.
	if st := f.find("headline", "").Updates[0]; st.Indexed != 0 || st.Read != 0 {
		t.Errorf("second search updated %+v, want nothing", st)
	}
}

func TestIncrementalUpdate(t *testing.T) {
	f := newFixture(t)
	a := f.add("a", "/w", turn{"first question", "first answer"})
	for i := range 5 {
		f.add("p"+string(rune('0'+i)), "/w", turn{"other", "words"})
	}
	if st := f.find("first", "").Updates[0]; st.Indexed != 6 {
		t.Fatalf("build %+v", st)
	}
	// A new turn in a: only a is read again, and the new words are found.
	writePackage(t, a, turn{"the quokka question", "a quokka answer"})
	res := f.find("quokka", "")
	if st := res.Updates[0]; st.Indexed != 1 || st.Removed != 0 {
		t.Errorf("update after one turn: %+v, want 1 indexed", st)
	}
	if got := refs(res.Hits); strings.Join(got, ",") != "a" {
		t.Errorf("quokka: %v", got)
	}
	// A package removed from the disk leaves the index.
	if err := os.RemoveAll(a); err != nil {
		t.Fatal(err)
	}
	res = f.find("first", "")
	if st := res.Updates[0]; st.Removed != 1 {
		t.Errorf("update after a removal: %+v, want 1 removed", st)
	}
	if len(res.Hits) != 0 {
		t.Errorf("a removed package found: %v", refs(res.Hits))
	}
}

func TestJournalIsRead(t *testing.T) {
	// A turn saved as a journal record (SaveAuto's way) is searched too.
	f := newFixture(t)
	pkg := f.add("a", "/w", turn{"hello", "hi"})
	f.find("hello", "")
	p, err := archive.Open(pkg, archive.KindDocument, true)
	if err != nil {
		t.Fatal(err)
	}
	u := archive.NewItem(archive.TypeUser)
	u.Set("text", "what about the wombat")
	p.Conv.Items = append(p.Conv.Items, u)
	if _, err := p.Append(p.Snapshot(true)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(pkg, archive.AgentDir, archive.JournalFile)); err != nil {
		t.Fatalf("no journal written: %v", err)
	}
	if got := refs(f.find("wombat", "").Hits); strings.Join(got, ",") != "a" {
		t.Errorf("wombat: %v", got)
	}
}

func TestRanking(t *testing.T) {
	f := newFixture(t)
	// once: the word once in a long conversation; many: several times;
	// title: in the title (the first message) and once more.
	long := strings.Repeat("filler words about nothing in particular. ", 200)
	f.add("once", "/w", turn{"start", long + "the marmot was here"})
	f.add("many", "/w", turn{"start", "marmot marmot marmot and the marmot again"})
	f.add("title", "/w", turn{"marmot", "a short answer"})
	got := refs(f.find("marmot", "").Hits)
	if strings.Join(got, ",") != "title,many,once" {
		t.Errorf("ranking %v, want title,many,once (a title word weighs three)", got)
	}
	// Equal scores: the most recently updated first.
	g := newFixture(t)
	g.add("old", "/w", turn{"x", "the same lynx"})
	time.Sleep(0) // UpdatedAt is the index's clock: Touch order decides
	g.add("new", "/w", turn{"x", "the same lynx"})
	if got := refs(g.find("lynx", "").Hits); strings.Join(got, ",") != "new,old" {
		t.Errorf("ties %v, want new,old", got)
	}
}

func TestPrefixNeverIndexed(t *testing.T) {
	// A CLI's own session of a reopened conversation recorded the restore
	// prefix as the user's message: only the words after it are searched.
	items := []archive.Item{archive.NewItem(archive.TypeUser), archive.NewItem(archive.TypeAssistant)}
	items[0].Set("text", restore.Heading+"User: tell me about the zebrafish\n\nAssistant: Zebrafish are small.\n\nNow the axolotl")
	items[1].Set("text", "Axolotls regrow limbs.")
	segs := Segments(items)
	b := body(segs)
	if strings.Contains(strings.ToLower(b), "zebrafish") || strings.Contains(b, "Conversation so far") {
		t.Errorf("the prefix was indexed: %q", b)
	}
	if !strings.Contains(b, "Now the axolotl") {
		t.Errorf("the user's words were lost: %q", b)
	}
	// A package: the prefix is in no item, only in the history sent.
	f := newFixture(t)
	pkg := f.add("a", "/w", turn{"Now the axolotl", "ok"})
	p, _ := archive.Open(pkg, archive.KindDocument, true)
	p.Conv.History = append(p.Conv.History, archive.Message{Role: "user", Content: []archive.Block{archive.NewTextBlock(restore.Heading + "User: zebrafish\n\nNow the axolotl")}})
	if _, err := p.Save(true); err != nil {
		t.Fatal(err)
	}
	if hits := f.find("zebrafish", "").Hits; len(hits) != 0 {
		t.Errorf("zebrafish found in %v", refs(hits))
	}
	if hits := f.find("\"conversation so far\"", "").Hits; len(hits) != 0 {
		t.Errorf("the heading found in %v", refs(hits))
	}
	if hits := f.find("axolotl", "").Hits; len(hits) != 1 {
		t.Errorf("axolotl: %v", refs(hits))
	}
}

func TestSegments(t *testing.T) {
	tool := archive.NewItem(archive.TypeTool)
	tool.Set("name", "Bash")
	tool.Set("summary", "go test ./...")
	tool.Set("statusText", "exit 1")
	tool.Set("detail", "output:\n"+strings.Repeat("x", 100<<10))
	notice := archive.NewItem(archive.TypeNotice)
	notice.Set("text", "a notice")
	think := archive.NewItem(archive.TypeThinking)
	think.Set("text", "pondering \xff\xfe bytes")
	q := archive.NewItem(archive.TypeQuestions)
	q.Set("questions", []any{map[string]any{"question": "Which colour?"}})
	segs := Segments([]archive.Item{tool, notice, think, q})
	if len(segs) != 3 {
		t.Fatalf("segments %d, want tool, thinking, questions: %+v", len(segs), segs)
	}
	if segs[0].Label != "Tool Bash" || !strings.HasPrefix(segs[0].Text, "go test ./...\nexit 1\noutput:\nxxx") || len(segs[0].Text) > maxDetail+2048 {
		t.Errorf("tool segment %q (%d bytes)", segs[0].Label, len(segs[0].Text))
	}
	if segs[1].Text != "pondering \uFFFD bytes" {
		t.Errorf("thinking %q", segs[1].Text)
	}
	if segs[2].Label != "Questions" || segs[2].Text != "Which colour?" {
		t.Errorf("questions %+v", segs[2])
	}
	// Round trip through the stored form.
	data, err := encodeSegments(segs)
	if err != nil {
		t.Fatal(err)
	}
	back, err := decodeSegments(data)
	if err != nil || len(back) != 3 || back[0] != segs[0] || back[2] != segs[2] {
		t.Errorf("decode: %v %+v", err, back)
	}
}

func TestHugeAndInvalidInput(t *testing.T) {
	f := newFixture(t)
	// One line of 20 MB, invalid UTF-8 in it, a word at its start and
	// one past what a message keeps.
	huge := "narwhal " + strings.Repeat("blah\xff ", 1<<17) + " beluga"
	f.add("huge", "/w", turn{huge, "ok"})
	res := f.find("narwhal", "")
	if len(res.Hits) != 1 {
		t.Fatalf("narwhal: %v", refs(res.Hits))
	}
	s := res.Hits[0].Snippets
	if len(s) != 1 || len(s[0].Text) > snippetLen+10 || s[0].Marked("[", "]")[:9] != "[narwhal]" {
		t.Errorf("snippet of a huge line: %+v", s)
	}
	if hits := f.find("beluga", "").Hits; len(hits) != 0 {
		t.Errorf("a word past the bound was indexed")
	}
}

func TestDamagedIndexRebuilt(t *testing.T) {
	for name, damage := range map[string]func(path string) error{
		"garbage": func(path string) error { return os.WriteFile(path, []byte("this is not a database"), 0o600) },
		"cut": func(path string) error {
			fi, err := os.Stat(path)
			if err != nil {
				return err
			}
			return os.Truncate(path, fi.Size()/2)
		},
		"pages": func(path string) error {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for i := 4096; i < len(data); i += 7 {
				data[i] ^= 0x5a
			}
			return os.WriteFile(path, data, 0o600)
		},
		"newer": func(path string) error {
			ix, err := Open(filepath.Dir(path))
			if err != nil {
				return err
			}
			defer ix.Close()
			_, err = ix.db.Exec("PRAGMA user_version = 99")
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			for i := range 10 {
				f.add("p"+string(rune('a'+i)), "/w", turn{"the capybara " + strings.Repeat("word ", 500), "yes"})
			}
			if n := len(f.find("capybara", "").Hits); n != 10 {
				t.Fatalf("before: %d hits", n)
			}
			path := filepath.Join(f.state, FileName)
			checkpoint(t, f.state)
			if err := damage(path); err != nil {
				t.Fatal(err)
			}
			res := f.find("capybara", "")
			if n := len(res.Hits); n != 10 {
				t.Fatalf("after %s: %d hits, want 10 (updates %+v)", name, n, res.Updates)
			}
		})
	}
}

// checkpoint writes the index's WAL into its file, so that damaging the
// file damages the index.
func checkpoint(t *testing.T, state string) {
	t.Helper()
	ix, err := Open(state)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if _, err := ix.db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
}

func TestRebuild(t *testing.T) {
	f := newFixture(t)
	f.add("a", "/w", turn{"ibex", "ok"})
	f.find("ibex", "")
	q, _ := ParseQuery("ibex")
	res, err := Find(context.Background(), f.state, Request{Query: q, Sets: []Set{Packages(f.six, "")}, Rebuild: true})
	if err != nil {
		t.Fatal(err)
	}
	if st := res.Updates[0]; st.Indexed != 1 || len(res.Hits) != 1 {
		t.Errorf("rebuild: %+v, %d hits", st, len(res.Hits))
	}
}

func TestUnreadablePackage(t *testing.T) {
	// A package whose conversation cannot be read is found by its title,
	// and the search goes on.
	f := newFixture(t)
	pkg := f.add("bad", "/w", turn{"gazelle", "ok"})
	f.add("good", "/w", turn{"gazelle too", "ok"})
	if err := os.WriteFile(filepath.Join(pkg, archive.AgentDir, archive.ConversationFile), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	res := f.find("gazelle", "")
	if got := refs(res.Hits); len(got) != 2 {
		t.Errorf("gazelle: %v", got)
	}
	if res.Updates[0].Failed != 1 {
		t.Errorf("update %+v, want 1 failed", res.Updates[0])
	}
}
