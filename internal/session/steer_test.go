package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
)

// steerBackend is a gate backend whose turns take steered messages while
// they run: each is reported where the turn took it (a user item and a
// user message in the history), as a CLI's backend does. closing is told
// when a turn stops taking messages, and the turn then waits for hold
// before it returns: the test steers a turn that ended on the CLI's side
// while the session's turn still runs.
type steerBackend struct {
	*gateBackend
	mu      sync.Mutex
	open    bool
	pending []backend.Message
	steered chan string
	closing chan struct{}
	hold    chan struct{}
	refuse  error // Steer's error when set
	// drop: the turn takes none of the messages it accepted (Untaken
	// hands them back)
	drop    bool
	untaken []backend.Message
}

func (b *steerBackend) Untaken() []backend.Message {
	b.mu.Lock()
	defer b.mu.Unlock()
	u := b.untaken
	b.untaken = nil
	return u
}

func newSteerBackend() *steerBackend {
	return &steerBackend{gateBackend: newGate(), steered: make(chan string, 16)}
}

func (b *steerBackend) Steer(msg backend.Message) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.refuse != nil {
		return b.refuse
	}
	if !b.open {
		return backend.ErrNoTurn
	}
	b.pending = append(b.pending, msg)
	b.steered <- msg.Text
	return nil
}

func (b *steerBackend) Turn(ctx context.Context, msg backend.Message, h backend.Host) *itemmap.TurnEnd {
	part := archive.NewItem(archive.TypeAssistant)
	part.Set("text", "working on "+msg.Text)
	h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: part})
	history := []archive.Message{{Role: "assistant", Content: []archive.Block{archive.NewTextBlock("working on " + msg.Text)}}}
	b.mu.Lock()
	b.open = true
	b.mu.Unlock()
	b.began <- msg.Text // the turn takes steered messages from now on
	<-b.finish
	b.mu.Lock()
	taken := b.pending
	if b.drop {
		b.untaken, taken = taken, nil
	}
	b.open, b.pending = false, nil
	b.mu.Unlock()
	if b.closing != nil {
		b.closing <- struct{}{}
		<-b.hold
	}
	for _, m := range taken {
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: backend.SteeredItem(nil, m)})
		history = append(history, backend.SteeredMessage(m))
	}
	b.started = true
	reply := archive.NewItem(archive.TypeAssistant)
	reply.Set("text", "done "+msg.Text)
	h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: reply})
	history = append(history, archive.Message{Role: "assistant", Content: []archive.Block{archive.NewTextBlock("done " + msg.Text)}})
	return &itemmap.TurnEnd{Status: itemmap.TurnCompleted, History: history}
}

// conversationText is the conversation's items and history as "type:text"
// lines, in order.
func conversationText(s *Session) (items, history []string) {
	view(s, func(conv *archive.Conversation) {
		for _, it := range conv.Items {
			items = append(items, it.Type()+":"+it.String("text"))
		}
		for _, m := range conv.History {
			for _, b := range m.Content {
				if b.Type() == archive.BlockText {
					history = append(history, m.Role+":"+b.String("text"))
				}
			}
		}
	})
	return items, history
}

// TestSteerInjected: a message steered while a turn runs is taken into
// it: one user item where the turn took it and one user message in its
// history, in order, and no turn of its own.
func TestSteerInjected(t *testing.T) {
	b, f := newSteerBackend(), newFront()
	s := gateSession(b.gateBackend)
	s.be = b
	if _, err := s.Prompt(f, Request{Text: "a"}); err != nil {
		t.Fatal(err)
	}
	<-b.began
	res, err := s.Steer(f, Request{Text: "use blue"}, SteerOptions{})
	if err != nil || res.Outcome != SteerInjected {
		t.Fatalf("Steer = %+v, %v; want injected", res, err)
	}
	if got := <-b.steered; got != "use blue" {
		t.Fatalf("the backend was steered with %q", got)
	}
	b.finish <- struct{}{}
	<-f.ended
	s.WaitTurns()
	items, history := conversationText(s)
	wantItems := []string{"user:a", "assistant:working on a", "user:use blue", "assistant:done a"}
	if !slices.Equal(items, wantItems) {
		t.Errorf("items %q, want %q", items, wantItems)
	}
	wantHistory := []string{"user:a", "assistant:working on a", "user:use blue", "assistant:done a"}
	if !slices.Equal(history, wantHistory) {
		t.Errorf("history %q, want %q", history, wantHistory)
	}
	if got := f.log(); !slices.Equal(got, []string{"ended a completed cancelled=false"}) {
		t.Errorf("front was told %q: the steered message ran a turn of its own", got)
	}
}

// TestSteerTwiceAtOnce: two messages steered at once are both taken, each
// once.
func TestSteerTwiceAtOnce(t *testing.T) {
	b, f := newSteerBackend(), newFront()
	s := gateSession(b.gateBackend)
	s.be = b
	if _, err := s.Prompt(f, Request{Text: "a"}); err != nil {
		t.Fatal(err)
	}
	<-b.began
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, text := range []string{"one", "two"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.Steer(f, Request{Text: text}, SteerOptions{})
			if err == nil && res.Outcome != SteerInjected {
				err = fmt.Errorf("%s: %v", text, res.Outcome)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	b.finish <- struct{}{}
	<-f.ended
	s.WaitTurns()
	got := userTexts(s)
	slices.Sort(got)
	if !slices.Equal(got, []string{"a", "one", "two"}) {
		t.Errorf("user items %q", got)
	}
}

// TestSteerNoTurn: with no turn running, a steered message starts one,
// or, asked to, is handed back and leaves the conversation as it was.
func TestSteerNoTurn(t *testing.T) {
	b, f := newSteerBackend(), newFront()
	s := gateSession(b.gateBackend)
	s.be = b
	res, err := s.Steer(f, Request{Text: "x"}, SteerOptions{HandBack: true})
	if err != nil || res.Outcome != SteerHandedBack || res.Reason != NoRunningTurn {
		t.Fatalf("Steer with HandBack = %+v, %v", res, err)
	}
	if items, _ := conversationText(s); len(items) != 0 || s.Running() {
		t.Fatalf("a handed back message left %q (running %v)", items, s.Running())
	}
	res, err = s.Steer(f, Request{Text: "x"}, SteerOptions{})
	if err != nil || res.Outcome != SteerStarted || res.Queued {
		t.Fatalf("Steer = %+v, %v; want a new turn", res, err)
	}
	if got := <-b.began; got != "x" {
		t.Fatalf("the turn runs %q", got)
	}
	b.finish <- struct{}{}
	<-f.ended
	s.WaitTurns()
	if got := userTexts(s); !slices.Equal(got, []string{"x"}) {
		t.Errorf("user items %q", got)
	}
}

// TestSteerAsTheTurnEnds: a message steered when the CLI's turn already
// ended, while the session's turn is still finishing, is not taken by it:
// it begins the next turn, or is handed back, and is in the conversation
// once.
func TestSteerAsTheTurnEnds(t *testing.T) {
	for _, handBack := range []bool{false, true} {
		t.Run(fmt.Sprint("handBack=", handBack), func(t *testing.T) {
			b, f := newSteerBackend(), newFront()
			b.closing, b.hold = make(chan struct{}), make(chan struct{})
			s := gateSession(b.gateBackend)
			s.be = b
			if _, err := s.Prompt(f, Request{Text: "a"}); err != nil {
				t.Fatal(err)
			}
			<-b.began
			b.finish <- struct{}{}
			<-b.closing // the CLI's turn is over; the session's is not
			res, err := s.Steer(f, Request{Text: "late"}, SteerOptions{HandBack: handBack})
			if err != nil {
				t.Fatal(err)
			}
			b.closing = nil
			close(b.hold)
			<-f.ended
			if handBack {
				if res.Outcome != SteerHandedBack {
					t.Fatalf("Steer = %+v; want handed back", res)
				}
			} else {
				if res.Outcome != SteerStarted || !res.Queued {
					t.Fatalf("Steer = %+v; want the next turn", res)
				}
				if got := <-b.began; got != "late" {
					t.Fatalf("the next turn runs %q", got)
				}
				b.finish <- struct{}{}
				<-f.ended
			}
			s.WaitTurns()
			want := []string{"a"}
			if !handBack {
				want = []string{"a", "late"}
			}
			if got := userTexts(s); !slices.Equal(got, want) {
				t.Errorf("user items %q, want %q", got, want)
			}
		})
	}
}

// TestSteerQueuedWhenTheTurnCannotTake: a turn whose backend cannot take
// a message (none that steers, or one that says this turn cannot) gets it
// queued behind it, with the reason; it runs as the next turn.
func TestSteerQueuedWhenTheTurnCannotTake(t *testing.T) {
	for _, name := range []string{"no steerer", "cannot steer"} {
		t.Run(name, func(t *testing.T) {
			f := newFront()
			g := newGate()
			s := gateSession(g)
			if name == "cannot steer" {
				b := newSteerBackend()
				b.gateBackend = g
				b.refuse = fmt.Errorf("%w: a review takes no message", backend.ErrCannotSteer)
				s.be = b
			}
			if _, err := s.Prompt(f, Request{Text: "a"}); err != nil {
				t.Fatal(err)
			}
			<-g.began
			res, err := s.Steer(f, Request{Text: "later"}, SteerOptions{})
			if err != nil || res.Outcome != SteerQueued || res.Reason == "" {
				t.Fatalf("Steer = %+v, %v; want queued with a reason", res, err)
			}
			if name == "cannot steer" && !strings.Contains(res.Reason, "a review takes no message") {
				t.Errorf("reason %q", res.Reason)
			}
			view(s, func(conv *archive.Conversation) {
				if fmt.Sprint(conv.Queued) != "[later]" {
					t.Errorf("queued %q", conv.Queued)
				}
			})
			g.finish <- struct{}{}
			if got := <-g.began; got != "later" {
				t.Fatalf("next turn %q", got)
			}
			g.finish <- struct{}{}
			<-f.ended
			<-f.ended
			s.WaitTurns()
			if got := userTexts(s); !slices.Equal(got, []string{"a", "later"}) {
				t.Errorf("user items %q", got)
			}
		})
	}
}

// TestSteerBadInput: an empty or too long message, and any after Stop,
// are refused and leave nothing behind.
func TestSteerBadInput(t *testing.T) {
	b, f := newSteerBackend(), newFront()
	s := gateSession(b.gateBackend)
	s.be = b
	for _, c := range []struct {
		text string
		want error
	}{{"", ErrSteerEmpty}, {" \n\t", ErrSteerEmpty}, {strings.Repeat("x", MaxSteerBytes+1), ErrSteerTooLong}} {
		if _, err := s.Steer(f, Request{Text: c.text}, SteerOptions{}); !errors.Is(err, c.want) {
			t.Errorf("Steer(%d bytes) = %v, want %v", len(c.text), err, c.want)
		}
	}
	s.Stop()
	if _, err := s.Steer(f, Request{Text: "x"}, SteerOptions{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Steer after Stop = %v", err)
	}
	if items, _ := conversationText(s); len(items) != 0 {
		t.Errorf("refused messages left %q", items)
	}
}

// TestSteerSendTurn: a turn run by Send takes a steered message when its
// backend can; one it cannot take, or that comes when the CLI's turn
// ended, is handed back with the reason, and never starts a turn of its
// own beside Send's.
func TestSteerSendTurn(t *testing.T) {
	for _, c := range []struct {
		name   string
		refuse error
		closed bool
		want   SteerOutcome
	}{
		{"injected", nil, false, SteerInjected},
		{"cannot steer", fmt.Errorf("%w: codex exec", backend.ErrCannotSteer), false, SteerHandedBack},
		{"turn ended", nil, true, SteerHandedBack},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, f := newSteerBackend(), newFront()
			b.refuse = c.refuse
			s := gateSession(b.gateBackend)
			s.be = b
			if c.closed {
				b.closing, b.hold = make(chan struct{}), make(chan struct{})
			}
			done := make(chan error, 1)
			go func() {
				_, err := s.Send(context.Background(), "a", nil, nopHost{})
				done <- err
			}()
			<-b.began
			if c.closed {
				b.finish <- struct{}{}
				<-b.closing
			}
			res, err := s.Steer(f, Request{Text: "x"}, SteerOptions{})
			if err != nil || res.Outcome != c.want || (c.want == SteerHandedBack && res.Reason == "") {
				t.Fatalf("Steer = %+v, %v; want %v", res, err, c.want)
			}
			if c.closed {
				close(b.hold)
			} else {
				b.finish <- struct{}{}
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			want := []string{"a"}
			if c.want == SteerInjected {
				want = []string{"a", "x"}
			}
			if got := userTexts(s); !slices.Equal(got, want) || s.Running() {
				t.Errorf("user items %q (running %v), want %q", got, s.Running(), want)
			}
			if got := f.log(); len(got) != 0 {
				t.Errorf("the front end was told %q: a turn of its own ran", got)
			}
		})
	}
}

// liveSteerBackend reports each steered message as its CLI would, while
// the turn runs: a user item and a user message of the turn's history,
// then tells reported.
type liveSteerBackend struct {
	*gateBackend
	mu       sync.Mutex
	open     bool
	steered  chan backend.Message
	reported chan struct{}
}

func (b *liveSteerBackend) Steer(msg backend.Message) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open {
		return backend.ErrNoTurn
	}
	b.steered <- msg
	return nil
}

func (b *liveSteerBackend) Untaken() []backend.Message { return nil }

func (b *liveSteerBackend) Turn(ctx context.Context, msg backend.Message, h backend.Host) *itemmap.TurnEnd {
	part := archive.NewItem(archive.TypeAssistant)
	part.Set("text", "working on "+msg.Text)
	h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: part})
	history := []archive.Message{{Role: "assistant", Content: []archive.Block{archive.NewTextBlock("working on " + msg.Text)}}}
	b.mu.Lock()
	b.open = true
	b.mu.Unlock()
	b.began <- msg.Text // the turn takes steered messages from now on
	for done := false; !done; {
		select {
		case m := <-b.steered:
			h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: backend.SteeredItem(nil, m)})
			history = append(history, backend.SteeredMessage(m))
			b.reported <- struct{}{}
		case <-b.finish:
			done = true
		}
	}
	b.mu.Lock()
	b.open = false
	b.mu.Unlock()
	b.started = true
	reply := archive.NewItem(archive.TypeAssistant)
	reply.Set("text", "done "+msg.Text)
	h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: reply})
	history = append(history, archive.Message{Role: "assistant", Content: []archive.Block{archive.NewTextBlock("done " + msg.Text)}})
	return &itemmap.TurnEnd{Status: itemmap.TurnCompleted, History: history}
}

// TestSteerSurvivesSaveAndReopen: a steered message the turn took is in a
// save made while the turn runs, and, once the turn ended and was saved,
// the reopened package holds it once, in its place in the items and the
// history.
func TestSteerSurvivesSaveAndReopen(t *testing.T) {
	pkg, state := newPackage(t)
	b := &liveSteerBackend{gateBackend: newGate(), steered: make(chan backend.Message, 1), reported: make(chan struct{})}
	s := openPolicy(t, pkg, state, SaveByCaller, true, b)
	f := newFront()
	if _, err := s.Prompt(f, Request{Text: "a"}); err != nil {
		t.Fatal(err)
	}
	<-b.began
	if res, err := s.Steer(f, Request{Text: "use blue"}, SteerOptions{}); err != nil || res.Outcome != SteerInjected {
		t.Fatalf("Steer = %+v, %v", res, err)
	}
	<-b.reported
	if _, err := s.Save(); err != nil {
		t.Fatal(err)
	}
	var mid []string
	for _, it := range onDisk(t, pkg).Items {
		mid = append(mid, it.Type()+":"+it.String("text"))
	}
	if want := []string{"user:a", "assistant:working on a", "user:use blue"}; !slices.Equal(mid, want) {
		t.Errorf("saved during the turn: %q, want %q", mid, want)
	}
	b.finish <- struct{}{}
	<-f.ended
	s.WaitTurns()
	if _, err := s.Save(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	conv := onDisk(t, pkg)
	var items, history []string
	for _, it := range conv.Items {
		items = append(items, it.Type()+":"+it.String("text"))
	}
	for _, m := range conv.History {
		history = append(history, m.Role+":"+m.Content[0].String("text"))
	}
	want := []string{"user:a", "assistant:working on a", "user:use blue", "assistant:done a"}
	if !slices.Equal(items, want) || !slices.Equal(history, want) {
		t.Errorf("reopened: items %q, history %q; want %q", items, history, want)
	}
}

// TestSteerUntakenHandedBack: a message the backend accepted and its CLI
// never took (an interrupt came first) is handed back: the conversation's
// unsent messages hold it, and the turn's result names it; it is no item
// of the conversation.
func TestSteerUntakenHandedBack(t *testing.T) {
	b := newSteerBackend()
	b.drop = true
	s := gateSession(b.gateBackend)
	s.be = b
	done := make(chan *TurnResult, 1)
	go func() {
		res, err := s.Send(context.Background(), "a", nil, nopHost{})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	<-b.began
	if res, err := s.Steer(nil, Request{Text: "use blue"}, SteerOptions{HandBack: true}); err != nil || res.Outcome != SteerInjected {
		t.Fatalf("Steer = %+v, %v", res, err)
	}
	b.finish <- struct{}{}
	res := <-done
	if !slices.Equal(res.Untaken, []string{"use blue"}) {
		t.Errorf("Untaken = %q", res.Untaken)
	}
	if got := userTexts(s); !slices.Equal(got, []string{"a"}) {
		t.Errorf("user items %q", got)
	}
	view(s, func(conv *archive.Conversation) {
		if fmt.Sprint(conv.Unsent) != "[use blue]" {
			t.Errorf("unsent %v", conv.Unsent)
		}
	})
}
