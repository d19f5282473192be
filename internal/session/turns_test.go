package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
)

// gateBackend runs each turn until the test lets it end (finish) or it is
// interrupted (then it ends interrupted, unless deaf); began says each
// turn's message as it starts.
type gateBackend struct {
	fakeBackend
	began     chan string
	finish    chan struct{}
	interrupt chan struct{}
	deaf      bool // an interrupt does not end the turn (the test hears it)
	panics    bool // a turn panics
}

func newGate() *gateBackend {
	return &gateBackend{fakeBackend: fakeBackend{name: "claude"}, began: make(chan string, 16), finish: make(chan struct{}), interrupt: make(chan struct{}, 16)}
}

func (g *gateBackend) Turn(ctx context.Context, msg backend.Message, h backend.Host) *itemmap.TurnEnd {
	g.began <- msg.Text
	if g.panics {
		panic("the backend broke")
	}
	status := itemmap.TurnCompleted
	if g.deaf {
		<-g.finish
	} else {
		select {
		case <-g.finish:
		case <-g.interrupt:
			status = itemmap.TurnInterrupted
		}
	}
	g.started = true
	it := archive.NewItem(archive.TypeAssistant)
	it.Set("text", "reply to "+msg.Text)
	h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: it})
	return &itemmap.TurnEnd{Status: status, History: []archive.Message{{Role: "assistant", Content: []archive.Block{archive.NewTextBlock("reply to " + msg.Text)}}}}
}

func (g *gateBackend) Interrupt() { g.interrupt <- struct{}{} }

// recFront records what the session told it, in order.
type recFront struct {
	mu     sync.Mutex
	events []string
	ended  chan Outcome
	handed chan string
}

func newFront() *recFront {
	return &recFront{ended: make(chan Outcome, 16), handed: make(chan string, 16)}
}

func (f *recFront) add(e string) {
	f.mu.Lock()
	f.events = append(f.events, e)
	f.mu.Unlock()
}

func (f *recFront) Host(r Request) Host { return nopHost{} }
func (f *recFront) Ended(r Request, o Outcome) {
	status := "not started"
	switch {
	case o.Panic != nil:
		status = "panic"
	case o.Result != nil:
		status = string(o.Result.End.Status)
	}
	f.add(fmt.Sprintf("ended %s %s cancelled=%v", r.Text, status, o.Cancelled))
	f.ended <- o
}
func (f *recFront) HandedBack(r Request) { f.add("handed back " + r.Text); f.handed <- r.Text }
func (f *recFront) Changed()             {}

func (f *recFront) log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.events)
}

func gateSession(g *gateBackend) *Session {
	return &Session{pkg: &archive.Package{Conv: &archive.Conversation{}}, be: g, provider: "anthropic", keep: true}
}

func userTexts(s *Session) []string {
	var out []string
	view(s, func(conv *archive.Conversation) {
		for _, it := range conv.Items {
			if it.Type() == archive.TypeUser {
				out = append(out, it.String("text"))
			}
		}
	})
	return out
}

// TestPromptAndQueueInOrder: a prompt while a turn runs is queued, and the
// queued requests run one turn each, in order, once the turn before
// completed; the conversation's queued list follows.
func TestPromptAndQueueInOrder(t *testing.T) {
	g, f := newGate(), newFront()
	s := gateSession(g)
	if q, err := s.Prompt(f, Request{Text: "a"}); q || err != nil {
		t.Fatalf("first prompt: queued %v, %v", q, err)
	}
	<-g.began
	if q, err := s.Queue(f, Request{Text: "b"}); !q || err != nil {
		t.Fatalf("queue: queued %v, %v", q, err)
	}
	if q, err := s.Prompt(f, Request{Text: "c", Ctx: context.Background()}); !q || err != nil {
		t.Fatalf("prompt behind: queued %v, %v", q, err)
	}
	view(s, func(conv *archive.Conversation) {
		if fmt.Sprint(conv.Queued) != "[b c]" {
			t.Errorf("queued %v", conv.Queued)
		}
	})
	for _, want := range []string{"b", "c"} {
		g.finish <- struct{}{}
		if got := <-g.began; got != want {
			t.Fatalf("turn of %q, want %q", got, want)
		}
	}
	g.finish <- struct{}{}
	s.WaitTurns()
	want := []string{"ended a completed cancelled=false", "ended b completed cancelled=false", "ended c completed cancelled=false"}
	if got := f.log(); !slices.Equal(got, want) {
		t.Errorf("front was told %q, want %q", got, want)
	}
	if got := userTexts(s); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("user items %q", got)
	}
	view(s, func(conv *archive.Conversation) {
		if len(conv.Queued) != 0 || len(conv.History) != 6 {
			t.Errorf("queued %v, %d history messages", conv.Queued, len(conv.History))
		}
	})
	if s.Running() {
		t.Error("a turn runs after the last ended")
	}
}

// TestCancelHandsBackTheQueue: Cancel interrupts the CLI; the turn ends
// cancelled and what waited behind it goes back to the composer, unsent,
// before the front end is told the turn's end.
func TestCancelHandsBackTheQueue(t *testing.T) {
	g, f := newGate(), newFront()
	s := gateSession(g)
	s.Prompt(f, Request{Text: "a"})
	<-g.began
	s.Queue(f, Request{Text: "b"})
	s.Cancel()
	o := <-f.ended
	if !o.Cancelled || o.Result == nil || o.Result.End.Status != itemmap.TurnInterrupted {
		t.Errorf("outcome %+v", o)
	}
	s.WaitTurns()
	want := []string{"handed back b", "ended a interrupted cancelled=true"}
	if got := f.log(); !slices.Equal(got, want) {
		t.Errorf("front was told %q, want %q", got, want)
	}
	view(s, func(conv *archive.Conversation) {
		if fmt.Sprint(conv.Unsent) != "[b]" || len(conv.Queued) != 0 {
			t.Errorf("unsent %v, queued %v", conv.Unsent, conv.Queued)
		}
	})
}

// TestCancelledWhileQueued: a queued request whose context ends leaves the
// queue at once, handed back, while the turn before it goes on.
func TestCancelledWhileQueued(t *testing.T) {
	g, f := newGate(), newFront()
	s := gateSession(g)
	s.Prompt(f, Request{Text: "a"})
	<-g.began
	ctx, cancel := context.WithCancel(context.Background())
	s.Prompt(f, Request{Text: "b", Ctx: ctx})
	s.Prompt(f, Request{Text: "c"})
	cancel()
	if got := <-f.handed; got != "b" {
		t.Fatalf("handed back %q", got)
	}
	if !s.Running() {
		t.Error("the running turn ended with the queued request")
	}
	g.finish <- struct{}{}
	if got := <-g.began; got != "c" {
		t.Fatalf("next turn %q, want c", got)
	}
	g.finish <- struct{}{}
	s.WaitTurns()
	if got := userTexts(s); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("user items %q", got)
	}
	view(s, func(conv *archive.Conversation) {
		if fmt.Sprint(conv.Unsent) != "[b]" || len(conv.Queued) != 0 {
			t.Errorf("unsent %v, queued %v", conv.Unsent, conv.Queued)
		}
	})
}

// TestPromptWaitsForACancelledTurn: a prompt after a cancel waits for the
// cancelled turn (its CLI slow to stop) and then runs its own; a prompt
// whose context ends while it waits runs nothing.
func TestPromptWaitsForACancelledTurn(t *testing.T) {
	g, f := newGate(), newFront()
	g.deaf = true
	s := gateSession(g)
	s.Prompt(f, Request{Text: "a"})
	<-g.began
	s.Cancel()
	<-g.interrupt // the CLI heard it, and goes on for now
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() { _, err := s.Prompt(f, Request{Text: "never", Ctx: ctx}); gaveUp <- err }()
	cancel()
	if err := <-gaveUp; !errors.Is(err, ErrCancelled) {
		t.Errorf("a prompt cancelled while it waited: %v", err)
	}
	started := make(chan error, 1)
	go func() { _, err := s.Prompt(f, Request{Text: "b"}); started <- err }()
	g.finish <- struct{}{} // the cancelled turn ends
	if got := <-g.began; got != "b" {
		t.Fatalf("next turn %q, want b", got)
	}
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	g.finish <- struct{}{}
	s.WaitTurns()
	if got := userTexts(s); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("user items %q", got)
	}
}

// TestStopAndBusy: New Conversation is refused while a turn runs; after
// Stop no turn starts, and the queue goes back.
func TestStopAndBusy(t *testing.T) {
	g, f := newGate(), newFront()
	s := gateSession(g)
	s.Prompt(f, Request{Text: "a"})
	<-g.began
	if _, err := s.NewConversation(); !errors.Is(err, ErrBusy) {
		t.Errorf("New Conversation during a turn: %v", err)
	}
	s.Queue(f, Request{Text: "b"})
	s.Stop()
	if _, err := s.Prompt(f, Request{Text: "c"}); !errors.Is(err, ErrClosed) {
		t.Errorf("a prompt after Stop: %v", err)
	}
	s.WaitTurns()
	want := []string{"handed back b", "ended a interrupted cancelled=true"}
	if got := f.log(); !slices.Equal(got, want) {
		t.Errorf("front was told %q, want %q", got, want)
	}
}

// TestPanicInATurn: a turn that panics is told to the front end as its
// outcome, hands the queue back, and no turn starts after it.
func TestPanicInATurn(t *testing.T) {
	g, f := newGate(), newFront()
	g.panics = true
	s := gateSession(g)
	block := make(chan struct{})
	hold := &holdFront{recFront: f, first: block}
	s.Prompt(hold, Request{Text: "a"})
	s.Queue(hold, Request{Text: "b"})
	close(block)
	o := <-f.ended
	if o.Panic == nil || len(o.Stack) == 0 || o.Result != nil {
		t.Errorf("outcome %+v", o)
	}
	s.WaitTurns()
	if got := f.log(); !slices.Equal(got, []string{"handed back b", "ended a panic cancelled=false"}) {
		t.Errorf("front was told %q", got)
	}
	if _, err := s.Prompt(f, Request{Text: "c"}); !errors.Is(err, ErrClosed) {
		t.Errorf("a prompt after the panic: %v", err)
	}
}

// holdFront holds the first turn's start until first is closed (so that a
// request can be queued behind it first).
type holdFront struct {
	*recFront
	first chan struct{}
	once  sync.Once
}

func (h *holdFront) Host(r Request) Host {
	h.once.Do(func() { <-h.first })
	return nopHost{}
}
