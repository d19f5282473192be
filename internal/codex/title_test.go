package codex

import (
	"context"
	"os"
	"testing"
	"time"

	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
)

// TestNameThread: the app-server's new thread is named after the
// conversation once (thread/name/set); a thread it resumes (after a
// sleep, or the user's own) is not renamed; a server that will not name
// it still runs the turn.
func TestNameThread(t *testing.T) {
	reply := func(b *Backend, text string) string {
		t.Helper()
		h := &items{}
		if end := b.Turn(context.Background(), backend.Message{Text: text}, h); end.Status != itemmap.TurnCompleted || len(h.list) != 1 {
			t.Fatalf("turn %q: %+v, %d items", text, end, len(h.list))
		}
		return h.list[0].String("text")
	}
	b := fakeServer(t, "burst")
	b.SetTitle("Zebra talk")
	if got, want := reply(b, "one"), `done (named ["Zebra talk on thread-1"])`; got != want {
		t.Errorf("first turn: %q, want %q", got, want)
	}
	if got, want := reply(b, "two"), `done (named ["Zebra talk on thread-1"])`; got != want {
		t.Errorf("second turn: %q, want %q", got, want)
	}
	if !b.Sleep() {
		t.Fatal("not put to sleep")
	}
	if got, want := reply(b, "three"), `done (resumed thread-1)`; got != want {
		t.Errorf("after the sleep: %q, want %q", got, want)
	}

	exe, _ := os.Executable()
	users := New(Options{Options: backend.Options{Program: exe, Env: append(os.Environ(), fakeAppServerEnv+"=burst", "GORACE=atexit_sleep_ms=0"),
		Dir: t.TempDir(), Grace: 200 * time.Millisecond, Resume: "the-users-thread"}})
	t.Cleanup(func() { users.Close() })
	users.SetTitle("Zebra talk")
	if got, want := reply(users, "one"), `done (resumed the-users-thread)`; got != want {
		t.Errorf("the user's thread: %q, want %q", got, want)
	}

	refusing := fakeServer(t, "refuse-name")
	refusing.SetTitle("Zebra talk")
	if got, want := reply(refusing, "one"), `done`; got != want {
		t.Errorf("a server that will not name it: %q, want %q", got, want)
	}
	untitled := fakeServer(t, "burst")
	if got, want := reply(untitled, "one"), `done`; got != want {
		t.Errorf("no title: %q, want %q", got, want)
	}
}
