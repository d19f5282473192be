package backend

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/itemmap"
	"spbridge/internal/restore"
)

// recHost keeps the items it is told about; Approve answers from its
// channel, or with a denial once its context is cancelled.
type recHost struct {
	items  []archive.Item
	answer chan Decision
}

func (h *recHost) Change(c itemmap.Change) { h.items = append(h.items, c.Item) }
func (h *recHost) Approve(ctx context.Context, _ itemmap.Approval) Decision {
	select {
	case d := <-h.answer:
		return d
	case <-ctx.Done():
		return Decision{}
	}
}

func TestFailBeforeStart(t *testing.T) {
	tests := []struct {
		name, text, detail, want string
	}{
		{"no detail", "claude was not found", "", ""},
		{"same as text", "it exited", "it exited", ""},
		{"masked", "it exited", "ANTHROPIC_API_KEY=sk-ant-api03-secretsecretsecret", "ANTHROPIC_API_KEY=sk-ant-api0****"},
	}
	for _, tt := range tests {
		h := &recHost{}
		end := FailBeforeStart(itemmap.SequentialIDs(), h, tt.text, tt.detail)
		if end.Status != itemmap.TurnFailed || !end.NotStarted || len(h.items) != 1 {
			t.Fatalf("%s: end %+v, %d items", tt.name, end, len(h.items))
		}
		it := h.items[0]
		if it.Type() != archive.TypeFailure || it.ID() == "" || it.String("text") != tt.text || it.String("detail") != tt.want {
			t.Errorf("%s: FailBeforeStart(%q, %q) = %v, want detail %q", tt.name, tt.text, tt.detail, it.Map(), tt.want)
		}
	}
	h := &recHost{}
	if end := InterruptedBeforeStart(nil, h); end.Status != itemmap.TurnInterrupted || !end.NotStarted ||
		len(h.items) != 1 || h.items[0].String("text") != "Interrupted." {
		t.Errorf("InterruptedBeforeStart = %+v, items %d", end, len(h.items))
	}
}

func TestFindProgram(t *testing.T) {
	prog, err := os.Executable() // a program that runs on every system
	if err != nil {
		t.Fatal(err)
	}
	notFound := errors.New("fakecli not found")
	t.Setenv(ProgramVar("fakecli"), prog)
	if got, err := FindProgram("fakecli", "", notFound); err != nil || got != prog {
		t.Errorf("FindProgram from $%s = %q, %v, want %q", ProgramVar("fakecli"), got, err, prog)
	}
	missing := filepath.Join(t.TempDir(), "missing")
	if _, err := FindProgram("fakecli", missing, notFound); !errors.Is(err, notFound) || !strings.Contains(err.Error(), missing) {
		t.Errorf("FindProgram(%q) = %v, want %v naming it", missing, err, notFound)
	}
	if got := ProgramVar("codex"); got != "SPBRIDGE_CODEX" {
		t.Errorf("ProgramVar(codex) = %q", got)
	}
}

func TestNewCLIDefaults(t *testing.T) {
	c := NewCLI("fakecli", Options{}, errors.New("not found"))
	if c.Opts.IdleTimeout != DefaultIdleTimeout || c.Opts.Grace != DefaultGrace {
		t.Errorf("defaults = %v, %v", c.Opts.IdleTimeout, c.Opts.Grace)
	}
	c.SetModel("m")
	if c.Model() != "m" {
		t.Errorf("Model() = %q after SetModel", c.Model())
	}
	interrupt, end := c.BeginTurn(Message{Context: restore.Heading + "User: the secret is 1234567890abcdef\n\n", Text: "now"})
	c.Interrupt()
	c.Interrupt() // a second one does not block
	<-interrupt
	end()
	c.Interrupt() // no turn: nothing
	if got := c.echoes.Clean("echo: User: the secret is 1234567890abcdef"); strings.Contains(got, "1234567890abcdef") {
		t.Errorf("stderr tail %q still holds the message sent", got)
	}
}

func TestApprovals(t *testing.T) {
	h := &recHost{answer: make(chan Decision, 1)}
	a := NewApprovals(context.Background(), h)
	a.Ask(itemmap.Approval{RequestID: "1"})
	a.Ask(itemmap.Approval{RequestID: "2"})
	if a.Pending() != 2 {
		t.Fatalf("Pending() = %d, want 2", a.Pending())
	}
	h.answer <- Decision{Allow: true}
	ans := <-a.Answers()
	if !a.Take(ans) || a.Take(ans) || !ans.Decision.Allow {
		t.Errorf("answer %+v taken twice or not allowed", ans)
	}
	ids := a.Withdraw()
	if len(ids) != 1 || ids[0] == ans.RequestID || a.Pending() != 0 {
		t.Errorf("Withdraw() = %q after %s was answered, %d pending", ids, ans.RequestID, a.Pending())
	}
	a.Close() // the withdrawn question's Approve returns
}

// TestApprovalsCloseWithAQuestionOpen: a turn that ends while the host is
// still being asked (the CLI died, or ended the turn) does not wait for an
// answer that may never come: Close takes the question back.
func TestApprovalsCloseWithAQuestionOpen(t *testing.T) {
	h := &recHost{answer: make(chan Decision)} // nobody answers
	a := NewApprovals(context.Background(), h)
	a.Ask(itemmap.Approval{RequestID: "1"})
	a.Close() // returns only because the question is taken back
}
