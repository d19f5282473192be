package session

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/clipool"
	"spbridge/internal/itemmap"
	"spbridge/internal/restore"
)

// sleepyBackend is a fakeBackend whose CLI can be put to sleep, as
// backend.Sleeper says: awake after a turn or Prepare, refusing Sleep
// while busy, and refusing its session once when refuse is set.
type sleepyBackend struct {
	fakeBackend
	mu              sync.Mutex
	turnMu          sync.Mutex // held by a turn, as a backend's own lock
	awake, busy     bool
	refuse, refused bool
	slept, prepared int
	contexts        []string // each turn's Context
	tried           chan struct{}
	mode            string
}

func newSleepy() *sleepyBackend {
	return &sleepyBackend{fakeBackend: fakeBackend{name: "claude"}, tried: make(chan struct{}, 100)}
}

func (b *sleepyBackend) Turn(ctx context.Context, msg backend.Message, h backend.Host) *itemmap.TurnEnd {
	b.turnMu.Lock()
	defer b.turnMu.Unlock()
	b.mu.Lock()
	b.contexts = append(b.contexts, msg.Context)
	woken := !b.awake && b.started
	b.awake = true
	if woken && b.refuse {
		b.refuse, b.refused, b.awake = false, true, false
		b.mu.Unlock()
		return backend.FailBeforeStart(nil, h, "could not resume", "")
	}
	b.mu.Unlock()
	return b.fakeBackend.Turn(ctx, msg, h)
}

func (b *sleepyBackend) Sleep() bool {
	defer func() {
		select {
		case b.tried <- struct{}{}:
		default: // the test reads only the first tries
		}
	}()
	if !b.turnMu.TryLock() {
		return false
	}
	defer b.turnMu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.awake || b.busy {
		return false
	}
	b.awake = false
	b.slept++
	return true
}

func (b *sleepyBackend) Awake() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.awake
}

func (b *sleepyBackend) ResumeRefused() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.refused
	b.refused = false
	return r
}

func (b *sleepyBackend) setBusy(busy bool) {
	b.mu.Lock()
	b.busy = busy
	b.mu.Unlock()
}

// Controls, for the wake on a change of settings.
func (b *sleepyBackend) Modes() []backend.Mode {
	return []backend.Mode{{ID: "default"}, {ID: "plan"}}
}
func (b *sleepyBackend) Mode() string { b.mu.Lock(); defer b.mu.Unlock(); return b.mode }
func (b *sleepyBackend) SetMode(_ context.Context, id string) error {
	b.mu.Lock()
	b.mode = id
	b.mu.Unlock()
	return nil
}
func (b *sleepyBackend) Commands() []backend.Command { return nil }
func (b *sleepyBackend) Prepare(context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.prepared++
	b.awake = true
	return nil
}
func (b *sleepyBackend) Models() []backend.Model { return nil }
func (b *sleepyBackend) Effort() string          { return "" }
func (b *sleepyBackend) SetEffort(string)        {}

// sleepySession opens a session on be with the idle time idle, telling
// slept each time its CLI was put to sleep.
func sleepySession(t *testing.T, be backend.Backend, idle time.Duration, pool *clipool.Pool) (*Session, chan string) {
	t.Helper()
	pkg := filepath.Join(t.TempDir(), "Doc.silverpoint")
	os.Mkdir(pkg, 0o755)
	p, err := archive.Open(pkg, archive.KindDocument, true)
	if err != nil {
		t.Fatal(err)
	}
	slept := make(chan string, 100)
	s := &Session{pkg: p, be: be, provider: "claude-code"}
	s.sl.idle, s.sl.pool, s.sl.slept = idle, pool, func(why string) { slept <- why }
	t.Cleanup(func() { s.Close() })
	return s, slept
}

// TestSleepWhenIdle: once its idle time passed, the CLI is put to sleep;
// the next turn wakes it and, the same open going on, is told nothing
// of the conversation so far.
func TestSleepWhenIdle(t *testing.T) {
	be := newSleepy()
	s, slept := sleepySession(t, be, time.Millisecond, nil)
	if _, err := s.Send(context.Background(), "one", nil, nopHost{}); err != nil {
		t.Fatal(err)
	}
	if why := <-slept; why != SleptIdle {
		t.Errorf("put to sleep for %q", why)
	}
	if be.Awake() || !s.Asleep() {
		t.Fatal("the CLI runs after it was put to sleep")
	}
	if _, err := s.Send(context.Background(), "two", nil, nopHost{}); err != nil {
		t.Fatal(err)
	}
	if be.contexts[1] != "" || be.texts[1] != "two" {
		t.Errorf("the woken CLI was told %q before %q", be.contexts[1], be.texts[1])
	}
	<-slept // asleep again after its idle time
}

// TestSleepKeepsBusyAwake: a CLI busy in the background stays awake; it
// is put to sleep once it is not.
func TestSleepKeepsBusyAwake(t *testing.T) {
	be := newSleepy()
	be.busy = true
	s, slept := sleepySession(t, be, time.Millisecond, nil)
	s.Send(context.Background(), "one", nil, nopHost{})
	for range 3 { // tried, and tried again after each idle time
		<-be.tried
	}
	select {
	case <-slept:
		t.Fatal("a busy CLI was put to sleep")
	default:
	}
	be.setBusy(false)
	<-slept
}

// TestSleepLRU: with more CLIs running than the pool allows, the least
// recently used idle ones are put to sleep; a busy one is passed over.
func TestSleepLRU(t *testing.T) {
	pool := clipool.New(2)
	var bes []*sleepyBackend
	var sessions []*Session
	var slept []chan string
	for range 3 {
		be := newSleepy()
		s, ch := sleepySession(t, be, 0, pool)
		bes, sessions, slept = append(bes, be), append(sessions, s), append(slept, ch)
	}
	for _, s := range sessions {
		s.Send(context.Background(), "hi", nil, nopHost{})
	}
	pool.Wait()
	if why := <-slept[0]; why != SleptLimit || bes[0].Awake() || !bes[1].Awake() || !bes[2].Awake() {
		t.Fatalf("after three turns with room for two: %q, awake %v %v %v", why, bes[0].Awake(), bes[1].Awake(), bes[2].Awake())
	}
	// The first is used again; the second, now the least recently used,
	// is busy: the third goes.
	bes[1].setBusy(true)
	sessions[0].Send(context.Background(), "again", nil, nopHost{})
	pool.Wait()
	if <-slept[2]; !bes[0].Awake() || !bes[1].Awake() || bes[2].Awake() {
		t.Errorf("awake %v %v %v, want the busy one kept and the third asleep", bes[0].Awake(), bes[1].Awake(), bes[2].Awake())
	}
	if bes[0].contexts[1] != "" {
		t.Errorf("the woken CLI was told %q", bes[0].contexts[1])
	}
}

// TestWakeOnSettings: a change of mode of a session whose CLI sleeps
// starts it again (Prepare), and its idle time counts from there.
func TestWakeOnSettings(t *testing.T) {
	be := newSleepy()
	s, slept := sleepySession(t, be, time.Millisecond, nil)
	s.Send(context.Background(), "one", nil, nopHost{})
	<-slept
	if err := s.SetMode(context.Background(), "plan"); err != nil {
		t.Fatal(err)
	}
	<-slept // woken, then asleep again after its idle time
	be.mu.Lock()
	prepared, mode := be.prepared, be.mode
	be.mu.Unlock()
	if prepared != 1 || mode != "plan" {
		t.Errorf("prepared %d times, mode %q", prepared, mode)
	}
}

// TestSleepResumeRefusedRestores: a CLI that refuses its session when
// woken: the turn goes on in a new session told the conversation so far,
// with a notice saying why, and the refused start leaves nothing.
func TestSleepResumeRefusedRestores(t *testing.T) {
	be := newSleepy()
	s, slept := sleepySession(t, be, time.Millisecond, nil)
	s.Send(context.Background(), "MARK-one", nil, nopHost{})
	<-slept
	be.mu.Lock()
	be.refuse = true
	be.mu.Unlock()
	res, err := s.Send(context.Background(), "two", nil, nopHost{})
	if err != nil || res.End.Status != itemmap.TurnCompleted {
		t.Fatalf("the turn after the refusal: %+v, %v", res, err)
	}
	want := restore.Heading + "User: MARK-one\n\nAssistant: reply claude" + restore.Closing
	if len(be.contexts) != 3 || be.contexts[1] != "" || be.contexts[2] != want {
		t.Errorf("contexts %q, want the refused try with none and the retry with %q", be.contexts, want)
	}
	var got []string
	for _, it := range s.pkg.Conv.Items {
		got = append(got, it.Type()+": "+it.String("text"))
	}
	wantItems := []string{"user: MARK-one", "assistant: reply claude", "user: two", "notice: " + ResumeRefusedText, "assistant: reply claude"}
	if !slices.Equal(got, wantItems) {
		t.Errorf("items %q, want %q", got, wantItems)
	}
	// The session is established: the next turn is told nothing.
	s.Send(context.Background(), "three", nil, nopHost{})
	if c := be.contexts[len(be.contexts)-1]; c != "" {
		t.Errorf("the turn after: %q", c)
	}
}

// TestSleepRacesPrompts: the CLI put to sleep while prompts come, from
// other goroutines (run with -race): every turn ends well and none is
// told the conversation so far.
func TestSleepRacesPrompts(t *testing.T) {
	be := newSleepy()
	s, _ := sleepySession(t, be, time.Microsecond, nil)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				s.Sleep()
			}
		}
	}()
	for range 50 {
		if res, err := s.Send(context.Background(), "hi", nil, nopHost{}); err != nil || res.End.Status != itemmap.TurnCompleted {
			t.Fatalf("%+v, %v", res, err)
		}
	}
	close(stop)
	wg.Wait()
	be.mu.Lock()
	defer be.mu.Unlock()
	for i, c := range be.contexts {
		if c != "" {
			t.Errorf("turn %d was told %q", i, c)
		}
	}
	if strings.Contains(strings.Join(be.texts, ""), "Conversation") {
		t.Error("the prefix reached a message's text")
	}
}
