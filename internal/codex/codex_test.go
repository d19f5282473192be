package codex

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
	"spbridge/internal/trust"
)

// untrustedSrvWork is the override that keeps the project configuration
// of /srv/work (and of the folders above it) inert (trustArgs).
const untrustedSrvWork = `projects={"/srv/work"={trust_level="untrusted"},"/srv"={trust_level="untrusted"},"/"={trust_level="untrusted"}}`

func TestExecArgs(t *testing.T) {
	b := New(Options{Transport: TransportExec, Options: backend.Options{Dir: "/srv/work"}})
	want := []string{"-c", `sandbox_mode="workspace-write"`, "-c", "tools.update_plan.enabled=true", "-c", untrustedSrvWork, "exec", "--json", "--skip-git-repo-check", "-"}
	if got := b.args(nil); !reflect.DeepEqual(got, want) {
		t.Errorf("first turn: %q", got)
	}
	b.thread = "th-1"
	b.SetModel("gpt-5")
	want = []string{"-c", `sandbox_mode="workspace-write"`, "-c", "tools.update_plan.enabled=true", "-c", untrustedSrvWork, "exec", "resume", "--json", "-m", "gpt-5", "-i", "/a.png", "--skip-git-repo-check", "th-1", "-"}
	if got := b.args([]string{"/a.png"}); !reflect.DeepEqual(got, want) {
		t.Errorf("later turn: %q", got)
	}
}

type items struct{ list []archive.Item }

func (h *items) Change(c itemmap.Change) {
	if c.Op == itemmap.OpAdd {
		h.list = append(h.list, c.Item)
	}
}

func (h *items) Approve(context.Context, itemmap.Approval) backend.Decision {
	return backend.Decision{}
}

func TestMissingProgram(t *testing.T) {
	for _, tr := range []string{TransportExec, TransportAppServer} {
		b := New(Options{Options: backend.Options{Program: filepath.Join(t.TempDir(), "no-codex")}, Transport: tr})
		h := &items{}
		end := b.Turn(context.Background(), backend.Message{Text: "x"}, h)
		if end.Status != itemmap.TurnFailed || len(h.list) != 1 || h.list[0].String("text") != NotFoundText || b.Started() {
			t.Errorf("%s: %+v %v", tr, end, h.list)
		}
	}
}

// TestAppServerTurns runs two turns on one (fake) app-server process.
// deltaHost keeps a turn's text deltas and counts Idle.
type deltaHost struct {
	items
	deltas []string
	idles  int
}

func (h *deltaHost) Change(c itemmap.Change) {
	h.items.Change(c)
	if c.Delta != "" {
		h.deltas = append(h.deltas, c.Delta)
	}
}

func (h *deltaHost) Idle() { h.idles++ }

// TestAppServerJoinsDeltas checks that the 1,000 deltas an app-server
// writes at once reach the host joined, in far fewer changes, with the
// whole text, and that the turn reports Idle after its reads.
func TestAppServerJoinsDeltas(t *testing.T) {
	exe, _ := os.Executable()
	b := New(Options{Options: backend.Options{Program: exe, Env: append(os.Environ(), fakeAppServerEnv+"=burst", "GORACE=atexit_sleep_ms=0"), Dir: t.TempDir(), Grace: 200 * time.Millisecond}})
	defer b.Close()
	h := &deltaHost{}
	t0 := time.Now()
	if end := b.Turn(context.Background(), backend.Message{Text: "go"}, h); end.Status != itemmap.TurnCompleted {
		t.Fatalf("turn: %+v", end)
	}
	t.Logf("turn took %v", time.Since(t0))
	text := strings.Join(h.deltas, "")
	if n := len(strings.Fields(text)); n < 999 { // the first may come with the item
		t.Errorf("the joined deltas carry %d of the 1,000 written", n)
	}
	if len(h.deltas) > 100 {
		t.Errorf("%d delta changes for 1,000 deltas written at once: not joined", len(h.deltas))
	}
	if h.idles < 2 {
		t.Errorf("Idle reported %d times, want at the start and after the reads", h.idles)
	}
}

func TestAppServerTurns(t *testing.T) {
	exe, _ := os.Executable()
	b := New(Options{Options: backend.Options{Program: exe, Env: append(os.Environ(), fakeAppServerEnv+"=1", "GORACE=atexit_sleep_ms=0"), Dir: t.TempDir(), Grace: 200 * time.Millisecond}})
	defer b.Close()
	for i := 0; i < 2; i++ {
		h := &items{}
		end := b.Turn(context.Background(), backend.Message{Text: "go"}, h)
		if end.Status != itemmap.TurnCompleted || len(h.list) != 1 || h.list[0].String("text") != "done" {
			t.Fatalf("turn %d: %+v, %d items", i, end, len(h.list))
		}
		if !strings.HasSuffix(end.History[0].Content[0].String("text"), "done") {
			t.Errorf("history %+v", end.History)
		}
	}
	if b.Thread() != "thread-1" || !b.Started() {
		t.Errorf("thread %q", b.Thread())
	}
}

// TestTrustArgs: the folder and each one above it get the folder's trust,
// their paths quoted as TOML strings (quotes, backslashes, dots and
// spaces kept whole).
func TestTrustArgs(t *testing.T) {
	dir := `/srv/my "odd".dir\x`
	got := trustArgs(dir, true)
	want := []string{"-c", `projects={"/srv/my \"odd\".dir\\x"={trust_level="trusted"},"/srv"={trust_level="trusted"},"/"={trust_level="trusted"}}`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("trustArgs = %q, want %q", got, want)
	}
	f := trust.Open(t.TempDir(), nil, []trust.CLI{Plugin.Trust})
	if err := f.Answer(trust.TrustOnce); err != nil {
		t.Fatal(err)
	}
	b := New(Options{Transport: TransportExec, Options: backend.Options{Dir: "/srv/work", Folder: f}})
	if a := strings.Join(b.args(nil), " "); !strings.Contains(a, `"/srv/work"={trust_level="trusted"}`) {
		t.Errorf("a trusted folder's args: %s", a)
	}
}
