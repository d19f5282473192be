package session

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
)

// rewindPNG is an 8×8 PNG for a turn's image.
var rewindPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAF0lEQVR4nGL5z4AdMOEQH6QSgAAAAP//z5kBEvfslMoAAAAASUVORK5CYII=")

// rewindBackends opens pkg on fake backends, each kept in made as the
// session makes it (a fresh CLI session is a new backend).
func rewindBackends(t *testing.T, pkg string, keep bool, newBE func() backend.Backend) (*Session, *[]backend.Backend) {
	t.Helper()
	var mu sync.Mutex
	var made []backend.Backend
	s, err := Open(Options{Dir: pkg, Keep: keep, Saving: SaveByCaller, Settings: Settings{CLI: "claude"},
		CLIs: rows(func(string, backend.Options) backend.Backend {
			be := newBE()
			mu.Lock()
			made = append(made, be)
			mu.Unlock()
			return be
		})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, &made
}

// userIDs are the ids of the conversation's user items.
func userIDs(s *Session) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for _, it := range s.pkg.Conv.Items {
		if it.Type() == archive.TypeUser {
			ids = append(ids, it.ID())
		}
	}
	return ids
}

func sendTurn(t *testing.T, s *Session, text string, images []backend.Image) {
	t.Helper()
	if _, err := s.Send(context.Background(), text, images, nopHost{}); err != nil {
		t.Fatal(err)
	}
}

func conversationJSON(t *testing.T, pkg string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(pkg, "agent", "conversation.json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRewindConversationCutAndUndo(t *testing.T) {
	pkg, _ := newPackage(t)
	s, made := rewindBackends(t, pkg, true, func() backend.Backend { return &fakeBackend{name: "claude"} })
	sendTurn(t, s, "MARK-one", nil)
	sendTurn(t, s, "MARK-two", []backend.Image{{MimeType: "image/png", Data: rewindPNG}})
	sendTurn(t, s, "MARK-three", nil)
	users := userIDs(s)
	s.mu.Lock()
	items := slices.Clone(s.pkg.Conv.Items)
	usage := s.pkg.Conv.Usage
	s.mu.Unlock()
	// A rating of turn two (its last item) and a card of turn three's, and
	// one of turn one's that stays.
	s.Rate(items[3].ID(), "good", nil)
	s.AnswerCard(items[5].ID(), map[string]any{"state": "done"})
	s.AnswerCard(items[1].ID(), map[string]any{"state": "kept"})
	if _, err := s.Save(); err != nil {
		t.Fatal(err)
	}
	before := conversationJSON(t, pkg)
	images, _ := os.ReadDir(filepath.Join(pkg, "agent", "images"))
	if len(images) != 1 {
		t.Fatalf("images before: %v", images)
	}

	// A dry run says what goes, and changes nothing.
	dry, err := s.RewindConversation(users[1], true)
	if err != nil {
		t.Fatal(err)
	}
	if !dry.DryRun || dry.Turn != 2 || len(dry.Removed) != 4 || dry.Messages != 4 || dry.Record != "" {
		t.Fatalf("dry run = %+v", dry)
	}
	if s.ItemCount() != 6 || !bytes.Equal(conversationJSON(t, pkg), before) {
		t.Fatal("a dry run changed the conversation")
	}

	res, err := s.RewindConversation(users[1], false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Record != "agent/rewinds/1" || res.Context != ContextRestart || len(res.Removed) != 4 || res.Removed[0].ID() != users[1] {
		t.Fatalf("rewind = %+v", res)
	}
	s.mu.Lock()
	conv := s.pkg.Conv
	if len(conv.Items) != 2 || len(conv.History) != 2 || conv.History[0].Content[0].String("text") != "MARK-one" {
		t.Errorf("after the rewind: %d items, %d messages", len(conv.Items), len(conv.History))
	}
	if len(conv.Feedback) != 0 || len(conv.SkillCards)+len(conv.ApprovalCards)+len(conv.LintRuleCards) > 1 {
		t.Errorf("the removed items' rating and card stayed: %v %v", conv.Feedback, conv.SkillCards)
	}
	if conv.Usage.Input != usage.Input || conv.LastRoundUsage.Input != "" {
		t.Errorf("usage %+v (want %+v, spent), last round %+v (want cleared)", conv.Usage, usage, conv.LastRoundUsage)
	}
	s.mu.Unlock()
	saved := string(conversationJSON(t, pkg))
	if strings.Contains(saved, "MARK-two") || strings.Contains(saved, "MARK-three") {
		t.Error("the saved conversation still holds the removed turns")
	}
	if images, _ := os.ReadDir(filepath.Join(pkg, "agent", "images")); len(images) != 0 {
		t.Errorf("the removed turn's image is still referenced: %v", images)
	}
	if images, _ := os.ReadDir(filepath.Join(pkg, "agent", "rewinds", "1", "agent", "images")); len(images) != 1 {
		t.Errorf("the record keeps no image: %v", images)
	}
	if len(*made) != 2 {
		t.Errorf("%d backends made, want a fresh one for the next turn", len(*made))
	}
	// The record is the package's own: fsck finds nothing stray.
	os.Chmod(pkg, 0o700)
	if problems, err := archive.Check(pkg); err != nil || len(problems) > 0 {
		t.Errorf("fsck after a rewind: %v %v", problems, err)
	}

	// Undo: the package holds exactly what it held.
	undo, err := s.UndoRewind(false)
	if err != nil {
		t.Fatal(err)
	}
	if len(undo.Removed) != 4 || undo.Record != "agent/rewinds/1" {
		t.Errorf("undo = %+v", undo)
	}
	if after := conversationJSON(t, pkg); !bytes.Equal(after, before) {
		t.Errorf("after the undo conversation.json differs:\n%s\nwant\n%s", after, before)
	}
	if _, err := os.Stat(filepath.Join(pkg, "agent", "rewinds")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the record stayed after the undo: %v", err)
	}
	if _, err := s.UndoRewind(false); !errors.Is(err, ErrNothingToUndo) {
		t.Errorf("a second undo: %v, want ErrNothingToUndo", err)
	}

	// Rewound again, the next turn starts a fresh CLI session told the
	// kept conversation only.
	if _, err := s.RewindConversation(users[2], false); err != nil {
		t.Fatal(err)
	}
	sendTurn(t, s, "MARK-four", nil)
	last := (*made)[len(*made)-1].(*fakeBackend)
	got := last.sent[len(last.sent)-1]
	if !strings.HasPrefix(got, "# Conversation so far\n") || !strings.Contains(got, "MARK-two") || strings.Contains(got, "MARK-three") || !strings.HasSuffix(got, "MARK-four") {
		t.Errorf("the turn after the rewind sent %q", got)
	}
	// A turn ran since: the undo would drop it.
	if _, err := s.UndoRewind(false); !errors.Is(err, ErrUndoStale) {
		t.Errorf("undo after a turn: %v, want ErrUndoStale", err)
	}
	// The next rewind clears the records that cannot be undone.
	res, err = s.RewindConversation(userIDs(s)[2], false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Dropped != 1 || res.Record != "agent/rewinds/1" {
		t.Errorf("a rewind after a stale one = %+v", res)
	}
}

func TestRewindTwiceUndoTwice(t *testing.T) {
	pkg, _ := newPackage(t)
	s, _ := rewindBackends(t, pkg, true, func() backend.Backend { return &fakeBackend{name: "claude"} })
	for _, m := range []string{"one", "two", "three", "four"} {
		sendTurn(t, s, m, nil)
	}
	s.Save()
	full := conversationJSON(t, pkg)
	users := userIDs(s)
	if _, err := s.RewindConversation(users[3], false); err != nil {
		t.Fatal(err)
	}
	mid := conversationJSON(t, pkg)
	if _, err := s.RewindConversation(users[1], false); err != nil {
		t.Fatal(err)
	}
	if s.ItemCount() != 2 {
		t.Fatalf("%d items after two rewinds", s.ItemCount())
	}
	if _, err := s.UndoRewind(false); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(conversationJSON(t, pkg), mid) {
		t.Error("the first undo did not give back the conversation of the first rewind")
	}
	if _, err := s.UndoRewind(false); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(conversationJSON(t, pkg), full) {
		t.Error("the second undo did not give back the whole conversation")
	}
}

func TestRewindBadInput(t *testing.T) {
	pkg, _ := newPackage(t)
	gate := make(chan struct{})
	started := make(chan struct{}, 1)
	blocking := false
	s, _ := rewindBackends(t, pkg, true, func() backend.Backend {
		return &holdBackend{fakeBackend: fakeBackend{name: "claude"}, gate: gate, started: started, block: &blocking}
	})
	if _, err := s.UndoRewind(false); !errors.Is(err, ErrNothingToUndo) {
		t.Errorf("undo with none: %v", err)
	}
	sendTurn(t, s, "one", nil)
	sendTurn(t, s, "two", nil)
	s.mu.Lock()
	items := slices.Clone(s.pkg.Conv.Items)
	s.mu.Unlock()
	if _, err := s.RewindConversation("NO-SUCH-ITEM", false); !errors.Is(err, archive.ErrNoItem) || !strings.Contains(err.Error(), "NO-SUCH-ITEM") {
		t.Errorf("unknown item: %v", err)
	}
	_, err := s.RewindConversation(items[3].ID(), false)
	if !errors.Is(err, ErrNotUserItem) || !strings.Contains(err.Error(), "rewind to before "+items[2].ID()) {
		t.Errorf("an assistant item: %v", err)
	}
	// While a turn runs: refused, with the reason.
	blocking = true
	done := make(chan error)
	go func() {
		_, err := s.Send(context.Background(), "three", nil, nopHost{})
		done <- err
	}()
	<-started
	if _, err := s.RewindConversation(items[2].ID(), false); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "turn is running") {
		t.Errorf("during a turn: %v", err)
	}
	if _, err := s.UndoRewind(false); !errors.Is(err, ErrBusy) {
		t.Errorf("undo during a turn: %v", err)
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s.ItemCount() != 6 {
		t.Errorf("%d items: the refused rewinds changed the conversation", s.ItemCount())
	}
}

// holdBackend is a fakeBackend whose turns wait for gate while *block is
// set, after telling started.
type holdBackend struct {
	fakeBackend
	gate    chan struct{}
	started chan struct{}
	block   *bool
}

func (g *holdBackend) Turn(ctx context.Context, msg backend.Message, h backend.Host) *itemmap.TurnEnd {
	if *g.block {
		g.started <- struct{}{}
		<-g.gate
	}
	return g.fakeBackend.Turn(ctx, msg, h)
}

// rewindingBackend can rewind its CLI natively.
type rewindingBackend struct {
	fakeBackend
	rewound []int
	fail    error
}

func (r *rewindingBackend) Rewind(_ context.Context, n int) error {
	if r.fail != nil {
		return r.fail
	}
	r.rewound = append(r.rewound, n)
	return nil
}

func TestRewindNative(t *testing.T) {
	pkg, _ := newPackage(t)
	s, made := rewindBackends(t, pkg, true, func() backend.Backend { return &rewindingBackend{fakeBackend: fakeBackend{name: "claude"}} })
	for _, m := range []string{"one", "two", "three"} {
		sendTurn(t, s, m, nil)
	}
	res, err := s.RewindConversation(userIDs(s)[1], false)
	if err != nil {
		t.Fatal(err)
	}
	be := (*made)[0].(*rewindingBackend)
	if res.Context != ContextNative || !slices.Equal(be.rewound, []int{2}) || len(*made) != 1 {
		t.Fatalf("rewind = %+v, the CLI rewound %v, %d backends", res, be.rewound, len(*made))
	}
	sendTurn(t, s, "four", nil)
	if got := be.sent[len(be.sent)-1]; got != "four" {
		t.Errorf("the turn after a native rewind sent %q, want the message alone", got)
	}
	// A CLI that cannot: a fresh session, told the conversation so far.
	be.fail = errors.New("no")
	if res, err = s.RewindConversation(userIDs(s)[1], false); err != nil || res.Context != ContextRestart || len(*made) != 2 {
		t.Fatalf("rewind = %+v, %v, %d backends", res, err, len(*made))
	}
	// A turn the CLI did not run (after the reopen) is never rewound
	// natively.
	sendTurn(t, s, "five", nil)
	s.Save()
	s.Close()
	s, made = rewindBackends(t, pkg, true, func() backend.Backend { return &rewindingBackend{fakeBackend: fakeBackend{name: "claude"}} })
	sendTurn(t, s, "six", nil)
	res, err = s.RewindConversation(userIDs(s)[1], false)
	if err != nil || res.Context != ContextRestart || len((*made)[0].(*rewindingBackend).rewound) != 0 {
		t.Errorf("rewind of a turn from before the open = %+v, %v", res, err)
	}
}

// TestRewindHistoryCut cuts a recorded conversation with a compaction, a
// steered message and tool results of role user (an import's), at each
// user message: the history goes from that user's message on.
func TestRewindHistoryCut(t *testing.T) {
	pkg, _ := newPackage(t)
	p, _ := archive.Open(pkg, archive.KindDocument, true)
	item := func(typ, text string) archive.Item {
		it := archive.NewItem(typ)
		it.Set("text", text)
		return it
	}
	msg := func(role string, blocks ...archive.Block) archive.Message {
		return archive.Message{Role: role, Content: blocks}
	}
	text := archive.NewTextBlock
	u1, u2, u3, u4 := item("user", "u1"), item("user", "u2"), item("user", "u3 steered"), item("user", "u4")
	p.Conv.Items = []archive.Item{u1, item("assistant", "a1"), item("notice", "Claude Code compacted the conversation"),
		u2, item("tool", ""), u3, item("assistant", "a2"), u4, item("assistant", "a4")}
	p.Conv.History = []archive.Message{
		msg("user", text("u1")), msg("assistant", text("a1")),
		msg("user", text("u2")), msg("assistant", archive.NewToolCallBlock("c1", "Bash", "{}")),
		msg("user", archive.NewToolResultBlock("c1", "Bash", "out", false)),
		msg("user", text("u3 steered")), msg("assistant", text("a2")),
		msg("user", text("u4")), msg("assistant", text("a4")),
	}
	if _, err := p.Save(true); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		at          archive.Item
		items, msgs int
	}{{u4, 7, 7}, {u3, 5, 5}, {u2, 3, 2}, {u1, 0, 0}} {
		s, _ := rewindBackends(t, pkg, true, func() backend.Backend { return &fakeBackend{name: "claude"} })
		full := conversationJSON(t, pkg)
		res, err := s.RewindConversation(c.at.ID(), false)
		if err != nil {
			t.Fatal(err)
		}
		s.mu.Lock()
		conv := s.pkg.Conv
		if len(conv.Items) != c.items || len(conv.History) != c.msgs {
			t.Errorf("before %s: %d items, %d messages; want %d, %d", c.at.String("text"), len(conv.Items), len(conv.History), c.items, c.msgs)
		}
		if c.msgs < 9 && len(res.Removed) > 0 && res.Messages != 9-c.msgs {
			t.Errorf("before %s: %d messages removed", c.at.String("text"), res.Messages)
		}
		s.mu.Unlock()
		// Before the first message: no conversation, the record kept.
		if c.items == 0 {
			if _, err := os.Stat(filepath.Join(pkg, "agent", "conversation.json")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("an emptied conversation left conversation.json: %v", err)
			}
		}
		if _, err := s.UndoRewind(false); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(conversationJSON(t, pkg), full) {
			t.Errorf("undo of the rewind before %s: not the conversation it was", c.at.String("text"))
		}
		s.Close()
	}
}

func TestRewindKeepOff(t *testing.T) {
	pkg, _ := newPackage(t)
	s, _ := rewindBackends(t, pkg, false, func() backend.Backend { return &fakeBackend{name: "claude"} })
	sendTurn(t, s, "one", nil)
	sendTurn(t, s, "two", nil)
	res, err := s.RewindConversation(userIDs(s)[1], false)
	if err != nil || res.Record != "" {
		t.Fatalf("rewind = %+v, %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(pkg, "agent")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("keep off, the rewind wrote into the package: %v", err)
	}
	if _, err := s.UndoRewind(false); err != nil || s.ItemCount() != 4 {
		t.Errorf("undo: %v, %d items", err, s.ItemCount())
	}
}

// TestRewindBoth rewinds the files and the conversation together, then
// undoes both; a rewind of the files alone is undone too; a conversation
// without checkpoints rewinds its conversation and says why the files
// are not.
func TestRewindBoth(t *testing.T) {
	pkg, state := newPackage(t)
	work := filepath.Dir(pkg)
	writeIn(t, work, "a.txt", "a0\n")
	be := &filesBackend{fakeBackend: fakeBackend{name: "claude"}}
	be.turns = []func(){
		func() { writeIn(t, work, "a.txt", "a1\n") },
		func() { writeIn(t, work, "a.txt", "a2\n"); writeIn(t, work, "b.txt", "b2\n") },
		func() { writeIn(t, work, "a.txt", "a3\n") },
	}
	s := openFiles(t, pkg, state, be, true)
	for _, m := range []string{"one", "two", "three"} {
		sendTurn(t, s, m, nil)
	}
	s.Save()
	full := conversationJSON(t, pkg)
	users := userIDs(s)

	dry, err := s.Rewind(RewindOptions{Before: users[1], Files: true, Conversation: true, DryRun: true})
	if err != nil || dry.Files == nil || len(dry.Files.Plan.Actions) != 2 || dry.Conversation == nil || !dry.Conversation.DryRun {
		t.Fatalf("dry run = %+v, %v", dry, err)
	}
	if readIn(work, "a.txt") != "a3\n" || !bytes.Equal(conversationJSON(t, pkg), full) {
		t.Fatal("a dry run changed something")
	}
	res, err := s.Rewind(RewindOptions{Before: users[1], Files: true, Conversation: true})
	if err != nil {
		t.Fatal(err)
	}
	if readIn(work, "a.txt") != "a1\n" || readIn(work, "b.txt") != "<none>" || s.ItemCount() >= 6 || res.Files.ID == "" {
		t.Fatalf("after the rewind: a=%q b=%q, %d items, %+v", readIn(work, "a.txt"), readIn(work, "b.txt"), s.ItemCount(), res)
	}
	undo, err := s.Undo(false, false)
	if err != nil {
		t.Fatal(err)
	}
	if undo.Files == nil || readIn(work, "a.txt") != "a3\n" || readIn(work, "b.txt") != "b2\n" {
		t.Errorf("after the undo: a=%q b=%q (%+v)", readIn(work, "a.txt"), readIn(work, "b.txt"), undo)
	}
	if !bytes.Equal(conversationJSON(t, pkg), full) {
		t.Error("the undo did not give the conversation back")
	}

	// The files alone: the conversation stays, and the undo puts them back.
	if _, err := s.Rewind(RewindOptions{Before: users[2], Files: true}); err != nil {
		t.Fatal(err)
	}
	if readIn(work, "a.txt") != "a2\n" || !bytes.Equal(conversationJSON(t, pkg), full) {
		t.Errorf("a rewind of the files alone: a=%q", readIn(work, "a.txt"))
	}
	if _, err := s.Undo(false, false); err != nil || readIn(work, "a.txt") != "a3\n" {
		t.Errorf("undo of the files alone: %v, a=%q", err, readIn(work, "a.txt"))
	}

	// Without checkpoints: the conversation rewinds, the files say why not.
	pkg2, state2 := newPackage(t)
	s2 := openFiles(t, pkg2, state2, &filesBackend{fakeBackend: fakeBackend{name: "claude"}}, false)
	sendTurn(t, s2, "one", nil)
	sendTurn(t, s2, "two", nil)
	res, err = s2.Rewind(RewindOptions{Before: userIDs(s2)[1], Files: true, Conversation: true})
	if err != nil || !errors.Is(res.FilesErr, ErrNoCheckpoints) || res.Conversation == nil || s2.ItemCount() != 2 {
		t.Errorf("without checkpoints: %+v, %v", res, err)
	}
	if _, err := s2.Rewind(RewindOptions{Before: userIDs(s2)[0], Files: true}); !errors.Is(err, ErrNoCheckpoints) {
		t.Errorf("the files alone without checkpoints: %v", err)
	}
}

// TestRewindRecordDamaged: an undo whose record cannot be read says so
// and changes nothing.
func TestRewindRecordDamaged(t *testing.T) {
	pkg, _ := newPackage(t)
	s, _ := rewindBackends(t, pkg, true, func() backend.Backend { return &fakeBackend{name: "claude"} })
	sendTurn(t, s, "one", nil)
	sendTurn(t, s, "two", nil)
	if _, err := s.RewindConversation(userIDs(s)[1], false); err != nil {
		t.Fatal(err)
	}
	cut := conversationJSON(t, pkg)
	os.WriteFile(filepath.Join(pkg, "agent", "rewinds", "1", "agent", "conversation.json"), []byte("{not json"), 0o600)
	if _, err := s.UndoRewind(false); err == nil || !strings.Contains(err.Error(), "cannot be read") {
		t.Errorf("undo of a damaged record: %v", err)
	}
	if s.ItemCount() != 2 || !bytes.Equal(conversationJSON(t, pkg), cut) {
		t.Error("the failed undo changed the conversation")
	}
}

// FuzzRewindRecord reads a record as an undo would: whatever the file
// holds, reading it and putting it back never panics, and puts back only
// onto the conversation the record says it left.
func FuzzRewindRecord(f *testing.F) {
	f.Add([]byte(`{"formatVersion":1,"items":[{"id":"U2","type":"user","text":"x"}],"history":[],"spbridgeRewind":{"version":1,"before":"U2","keptItems":1,"keptHistory":0,"lastKept":"U1","resolvedCards":["U2"]}}`))
	f.Add([]byte(`{"formatVersion":1,"spbridgeRewind":{"keptItems":-1}}`))
	f.Add([]byte(`{"formatVersion":1,"spbridgeRewind":{"keptItems":"9","keptHistory":[]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := archive.Decode(data)
		if err != nil {
			return
		}
		meta, err := readMeta(rec)
		if err != nil {
			return
		}
		u1 := archive.ItemFromMap(map[string]any{"id": "U1", "type": "user", "text": "one"})
		c := &archive.Conversation{Items: []archive.Item{u1}}
		if meta.current(c) != nil {
			return
		}
		meta.restore(c, rec)
		if len(c.Items) != 1+len(rec.Items) || c.Items[0].ID() != "U1" {
			t.Errorf("restored %d items onto 1, the record holding %d", len(c.Items), len(rec.Items))
		}
	})
}
