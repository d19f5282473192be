package archive

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"spbridge/internal/canonjson"
)

func mustAppend(t *testing.T, p *Package) *SaveReport {
	t.Helper()
	r, err := p.Append(p.Snapshot(true))
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return r
}

func readAgent(t *testing.T, pkg, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(pkg, AgentDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// wholeEncoding is what a plain whole save of p's conversation writes: its
// conversation.json, saved into a package of its own.
func wholeEncoding(t *testing.T, p *Package) []byte {
	t.Helper()
	other := newPackage(t)
	q := mustOpen(t, other)
	q.Conv = p.Conv
	mustSave(t, q)
	return readAgent(t, other, ConversationFile)
}

// reopenedEncoding is the encoding of pkg's conversation as Open reads it,
// saved whole into another package (so that its images count alike).
func reopenedEncoding(t *testing.T, pkg string) ([]byte, *Package) {
	t.Helper()
	q := mustOpen(t, pkg)
	if q.Unreadable != "" {
		t.Fatalf("reopened unreadable: %s", q.Unreadable)
	}
	return wholeEncoding(t, q), q
}

// journalChanges makes a conversation change in every way a session
// changes one, each followed by an Append that must write only the
// journal, and checks after each that a reopen reads the same conversation
// as a whole save writes.
func TestAppendWritesOnlyTheJournal(t *testing.T) {
	pkg := newPackage(t)
	p := mustOpen(t, pkg)
	addTurn(p.Conv, "first", "reply")
	p.Conv.Model = "m1"
	mustSave(t, p)
	saved := readAgent(t, pkg, ConversationFile)
	img := image(t, "journal", 3000)
	var sizes []int
	steps := []struct {
		what   string
		change func(c *Conversation)
	}{
		{"a turn", func(c *Conversation) { addTurn(c, "second", "again") }},
		{"a turn with an image", func(c *Conversation) { addTurn(c, "look", "seen", img) }},
		{"the totals", func(c *Conversation) {
			c.Usage.Input = "120"
			c.EstimatedCost = Cost{Kind: CostEstimated, Dollars: "0.25"}
		}},
		{"an old item changed", func(c *Conversation) {
			it := c.Items[1].Clone()
			it.Set("text", "changed")
			c.Items[1] = it
		}},
		{"an item set in place", func(c *Conversation) { c.Items[0].Set("text", "in place") }},
		{"a rating", func(c *Conversation) { c.Feedback = map[string]Feedback{c.Items[1].ID(): {Rating: "good"}} }},
		{"an item removed", func(c *Conversation) { c.Items = slices.Delete(c.Items, 2, 3) }},
		{"the history cut", func(c *Conversation) { c.History = c.History[:3] }},
		{"a message's field changed in place", func(c *Conversation) {
			c.History[0].Extra = map[string]any{"note": "x"}
		}},
		{"again in place", func(c *Conversation) { c.History[0].Extra["note"] = "y" }},
		{"a top-level field", func(c *Conversation) { c.Extra = map[string]any{"host": []any{"a"}} }},
	}
	for _, step := range steps {
		step.change(p.Conv)
		r := mustAppend(t, p)
		if !reflect.DeepEqual(r.Written, []string{"agent/" + JournalFile}) && !(step.what == "a turn with an image" && len(r.Written) == 2) {
			t.Errorf("%s: Append wrote %q, want the journal only", step.what, r.Written)
		}
		if got := readAgent(t, pkg, ConversationFile); !bytes.Equal(got, saved) {
			t.Fatalf("%s: conversation.json changed", step.what)
		}
		journal := readAgent(t, pkg, JournalFile)
		sizes = append(sizes, len(journal))
		want := wholeEncoding(t, p)
		got, q := reopenedEncoding(t, pkg)
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: the reopened conversation differs from a whole save:\n%s\nwant\n%s", step.what, got, want)
		}
		if q.Journaled() == 0 {
			t.Errorf("%s: the reopen read no journal", step.what)
		}
	}
	if !slices.IsSorted(sizes) || sizes[0] == sizes[len(sizes)-1] {
		t.Errorf("the journal did not grow: %v", sizes)
	}
	// The image a record references was stored before it.
	if _, err := os.Stat(filepath.Join(pkg, AgentDir, ImagesDir, img.String("sha256")+".png")); err != nil {
		t.Errorf("the turn's image: %v", err)
	}
	// Nothing changed: nothing written.
	if r := mustAppend(t, p); r.Changed() {
		t.Errorf("an unchanged Append wrote %+v", r)
	}

	// A whole save folds it in and removes the journal.
	want := wholeEncoding(t, p)
	r := mustSave(t, p)
	if !slices.Contains(r.Removed, "agent/"+JournalFile) {
		t.Errorf("the whole save removed %q, want the journal", r.Removed)
	}
	if _, err := os.Stat(filepath.Join(pkg, AgentDir, JournalFile)); !os.IsNotExist(err) {
		t.Errorf("the journal is still there after a whole save: %v", err)
	}
	if got := readAgent(t, pkg, ConversationFile); !bytes.Equal(got, want) {
		t.Error("the whole save differs from a plain whole save")
	}
	// And the journal starts again on it.
	addTurn(p.Conv, "third", "more")
	mustAppend(t, p)
	if got, _ := reopenedEncoding(t, pkg); !bytes.Equal(got, wholeEncoding(t, p)) {
		t.Error("the journal started again reads differently")
	}
	if rep, err := Inspect(pkg); err != nil || len(rep.Problems)+len(rep.Leftovers) != 0 {
		t.Errorf("fsck of a journaled package: %+v, %v", rep, err)
	}
}

// TestAppendAfterJournaledOpenIsWhole: a package opened with a journal
// writes its next save whole, and that save removes the journal.
func TestAppendAfterJournaledOpenIsWhole(t *testing.T) {
	pkg := newPackage(t)
	p := mustOpen(t, pkg)
	addTurn(p.Conv, "first", "reply")
	mustSave(t, p)
	addTurn(p.Conv, "second", "reply")
	mustAppend(t, p)

	q := mustOpen(t, pkg)
	if len(q.Conv.Items) != 4 || q.Journaled() != 1 {
		t.Fatalf("reopened %d items, %d records; want 4, 1", len(q.Conv.Items), q.Journaled())
	}
	addTurn(q.Conv, "third", "reply")
	r := mustAppend(t, q)
	if !slices.Contains(r.Written, "agent/"+ConversationFile) || !slices.Contains(r.Removed, "agent/"+JournalFile) {
		t.Errorf("the first save after a journaled open = %+v, want conversation.json written and the journal removed", r)
	}
	if q2 := mustOpen(t, pkg); len(q2.Conv.Items) != 6 || q2.Journaled() != 0 {
		t.Errorf("reopened %d items, %d records; want 6, 0", len(q2.Conv.Items), q2.Journaled())
	}
}

// TestStaleJournalIgnored: a journal whose base is not the conversation.json
// found (a whole save that landed before it removed the journal, another
// program's rewrite) is not applied.
func TestStaleJournalIgnored(t *testing.T) {
	pkg := newPackage(t)
	p := mustOpen(t, pkg)
	addTurn(p.Conv, "first", "reply")
	mustSave(t, p)
	addTurn(p.Conv, "second", "reply")
	mustAppend(t, p)
	journal := readAgent(t, pkg, JournalFile)

	// The whole save landed; the crash came before the journal went.
	addTurn(p.Conv, "third", "reply")
	mustSave(t, p)
	whole := readAgent(t, pkg, ConversationFile)
	writeAgentFile(t, pkg, JournalFile, journal)
	q := mustOpen(t, pkg)
	if len(q.Conv.Items) != 6 || q.Journaled() != 0 {
		t.Errorf("with a stale journal: %d items, %d records; want 6, 0", len(q.Conv.Items), q.Journaled())
	}
	if rep, err := Inspect(pkg); err != nil || len(rep.Problems) != 0 || !slices.Contains(rep.Leftovers, "agent/"+JournalFile) {
		t.Errorf("fsck of a stale journal: %+v, %v; want it a leftover", rep, err)
	}

	// Another program rewrote conversation.json (here: the older one).
	p2 := newPackage(t)
	o := mustOpen(t, p2)
	addTurn(o.Conv, "first", "reply")
	mustSave(t, o)
	older := readAgent(t, p2, ConversationFile)
	writeAgentFile(t, pkg, ConversationFile, older)
	// A journal that applies on those bytes is not one on these.
	if q := mustOpen(t, pkg); len(q.Conv.Items) != 2 || q.Journaled() != 0 {
		t.Errorf("another program's conversation.json: %d items, %d records; want 2, 0", len(q.Conv.Items), q.Journaled())
	}
	// The package, opened on the rewrite, writes whole, and the stale
	// journal goes.
	writeAgentFile(t, pkg, ConversationFile, whole)
	q = mustOpen(t, pkg)
	addTurn(q.Conv, "fourth", "reply")
	r := mustAppend(t, q)
	if !reflect.DeepEqual(r.Written, []string{"agent/" + JournalFile}) {
		t.Errorf("an Append on a package with a stale journal wrote %q", r.Written)
	}
	if got, _ := reopenedEncoding(t, pkg); !bytes.Equal(got, wholeEncoding(t, q)) {
		t.Error("the journal that replaced the stale one reads differently")
	}

	// Changed behind the package's back after it appended: written whole.
	writeAgentFile(t, pkg, ConversationFile, whole)
	addTurn(q.Conv, "fifth", "reply")
	r = mustAppend(t, q)
	if !slices.Contains(r.Written, "agent/"+ConversationFile) {
		t.Errorf("an Append over a changed conversation.json wrote %q, want it whole", r.Written)
	}
}

// TestJournalTornTail: a record cut short, or with a byte changed, is
// ignored with the records before it kept.
func TestJournalTornTail(t *testing.T) {
	pkg := newPackage(t)
	p := mustOpen(t, pkg)
	addTurn(p.Conv, "first", "reply")
	mustSave(t, p)
	var states [][]byte
	var ends []int
	for _, text := range []string{"second", "third", "fourth"} {
		addTurn(p.Conv, text, "reply to "+text)
		mustAppend(t, p)
		states = append(states, wholeEncoding(t, p))
		ends = append(ends, len(readAgent(t, pkg, JournalFile)))
	}
	full := readAgent(t, pkg, JournalFile)
	last := ends[len(ends)-1]
	check := func(what string, journal []byte, want []byte) {
		t.Helper()
		writeAgentFile(t, pkg, JournalFile, journal)
		if got, _ := reopenedEncoding(t, pkg); !bytes.Equal(got, want) {
			t.Errorf("%s: the reopened conversation is not the one of the records before it", what)
		}
	}
	for cut := ends[1]; cut < last; cut++ {
		check("cut short", full[:cut], states[1])
	}
	for i := ends[1]; i < last; i += 7 {
		bad := bytes.Clone(full)
		bad[i] ^= 0x20
		check("a changed byte", bad, states[1])
	}
	check("a zeroed tail", append(bytes.Clone(full[:ends[1]]), make([]byte, 512)...), states[1])
	check("whole", full, states[2])
}

// TestJournalOmitsAsTheWholeSave: an image that pushes older ones over the
// cap changes old messages (their images omitted); the record says so.
func TestJournalOmitsAsTheWholeSave(t *testing.T) {
	pkg := newPackage(t)
	p := mustOpen(t, pkg)
	addTurn(p.Conv, "old", "seen", image(t, "old", ImageCap/2+10))
	mustSave(t, p)
	addTurn(p.Conv, "new", "seen", image(t, "new", ImageCap/2+10))
	mustAppend(t, p)
	got, q := reopenedEncoding(t, pkg)
	if !bytes.Equal(got, wholeEncoding(t, p)) {
		t.Error("the reopened conversation differs from a whole save")
	}
	if typ := q.Conv.History[0].Content[1].Type(); typ != BlockImageOmitted {
		t.Errorf("the older image reads as %s, want omitted", typ)
	}
}

func FuzzJournal(f *testing.F) {
	base := &Conversation{}
	addTurn(base, "first", "reply")
	data, err := base.Encode()
	if err != nil {
		f.Fatal(err)
	}
	sum := sha256.Sum256(data)
	// Seeds: real journals, as Append writes them.
	pkg := filepath.Join(f.TempDir(), "p")
	if err := os.Mkdir(pkg, 0o700); err != nil {
		f.Fatal(err)
	}
	p, err := Open(pkg, KindDocument, true)
	if err != nil {
		f.Fatal(err)
	}
	p.Conv = base.Clone()
	if _, err := p.Save(true); err != nil {
		f.Fatal(err)
	}
	addTurn(p.Conv, "second", "again")
	p.Conv.Usage.Input = "7"
	if _, err := p.Append(p.Snapshot(true)); err != nil {
		f.Fatal(err)
	}
	p.Conv.Items = p.Conv.Items[:3]
	p.Conv.History[0].Extra = map[string]any{"x": true}
	if _, err := p.Append(p.Snapshot(true)); err != nil {
		f.Fatal(err)
	}
	journal, err := os.ReadFile(filepath.Join(pkg, AgentDir, JournalFile))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(journal)
	f.Add(journal[:len(journal)-3])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, journal []byte) {
		top := base.Clone().Value()
		n := applyJournal(top, sum, journal)
		if n == 0 {
			return
		}
		// What applies reads as conversation.json would.
		conv, err := fromValue(top)
		if err != nil {
			t.Fatalf("%d records applied, then unreadable: %v", n, err)
		}
		enc, err := conv.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Decode(enc); err != nil {
			t.Fatalf("the applied conversation does not read back: %v", err)
		}
	})
}

// FuzzJournalRecord fuzzes one record's text, given its CRC and a header
// that applies, so that what reaches applyRecord is what the fuzzer made.
func FuzzJournalRecord(f *testing.F) {
	base := &Conversation{}
	addTurn(base, "first", "reply")
	data, err := base.Encode()
	if err != nil {
		f.Fatal(err)
	}
	sum := sha256.Sum256(data)
	header, err := journalLine(nil, map[string]any{"base": hexSum(sum), "spbridgeJournal": json.Number("1")})
	if err != nil {
		f.Fatal(err)
	}
	next := base.Clone()
	addTurn(next, "second", "again")
	next.Model = "m"
	next.History[0].Extra = map[string]any{"x": true}
	omit, _ := capImages(base.History)
	fb, _ := base.fingerprint(omit)
	delta, err := fb.advance(next, omit)
	if err != nil {
		f.Fatal(err)
	}
	rec, err := canonjson.EncodeCompact(delta)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(rec)
	f.Add([]byte(`{"items":2,"historyFrom":2}`))
	f.Add([]byte(`{"items":3,"set":{"2":{"id":"a","type":"notice"}},"historyFrom":0,"history":[{"role":"user","content":[]}]}`))
	f.Add([]byte(`{"items":0,"historyFrom":0,"top":{"formatVersion":1,"model":"x"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		line, err := journalLine(nil, canonjson.Raw(body))
		if err != nil {
			return
		}
		if !bytes.Equal(line[9:len(line)-1], body) {
			return // not compact canonical JSON: the CRC is of other text
		}
		top := base.Clone().Value()
		if applyJournal(top, sum, append(bytes.Clone(header), line...)) == 0 {
			return
		}
		conv, err := fromValue(top)
		if err != nil {
			t.Fatalf("a record applied, then unreadable: %v", err)
		}
		enc, err := conv.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Decode(enc); err != nil {
			t.Fatalf("the applied conversation does not read back: %v", err)
		}
	})
}

func hexSum(sum [sha256.Size]byte) string { return hex.EncodeToString(sum[:]) }

// TestWholeSaveAfterAppend: a whole save after an Append writes what the
// journal holds into conversation.json (the file's own fingerprint is not
// the journal's).
func TestWholeSaveAfterAppend(t *testing.T) {
	pkg := newPackage(t)
	p := mustOpen(t, pkg)
	addTurn(p.Conv, "first", "reply")
	mustSave(t, p)
	addTurn(p.Conv, "second", "reply")
	mustAppend(t, p)
	r := mustSave(t, p)
	if !slices.Contains(r.Written, "agent/"+ConversationFile) {
		t.Fatalf("the whole save after an Append wrote %q", r.Written)
	}
	if got := readAgent(t, pkg, ConversationFile); !bytes.Equal(got, wholeEncoding(t, p)) {
		t.Error("conversation.json differs from a whole save")
	}
}
