package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"spbridge/internal/trust"
)

// AskTrust asks on the terminal whether to trust the working folder,
// whose files would act (backend.TrustAsker): y trusts it from now on
// (kept in the state folder), anything else not now. Without a terminal
// nothing is asked: the folder stays untrusted, and the turn's notice
// says so.
func (h *shellHost) AskTrust(ctx context.Context, dir string, files []string) trust.Answer {
	if h.ask == nil {
		return trust.NotNow
	}
	h.askMu.Lock()
	defer h.askMu.Unlock()
	answers := h.answers()
	for drained := false; !drained; { // a line typed before the question is no answer to it
		select {
		case _, ok := <-answers:
			drained = !ok
		default:
			drained = true
		}
	}
	h.mu.Lock()
	h.clearStatus()
	h.endLine()
	fmt.Fprint(h.errw, formatTrustQuestion(dir, files, h.errStyle))
	h.prompting = true
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.prompting = false
		h.mu.Unlock()
	}()
	select {
	case s := <-answers:
		switch strings.TrimSpace(strings.ToLower(s)) {
		case "y", "yes":
			return trust.TrustAlways
		}
		return trust.NotNow
	case <-ctx.Done():
		h.mu.Lock()
		fmt.Fprintln(h.errw)
		h.mu.Unlock()
		return trust.NotNow
	}
}

// formatTrustQuestion is the question of AskTrust: the folder, the files
// that would act, what trusting means, and the choices.
func formatTrustQuestion(dir string, files []string, st style) string {
	names := make([]string, len(files))
	for i, p := range files {
		names[i] = p
		if rel, err := filepath.Rel(dir, p); err == nil {
			names[i] = rel
		}
	}
	var b strings.Builder
	b.WriteString(st.paint(sgrBold, "Trust this folder?") + " " + oneLine(dir) + "\n")
	b.WriteString("  Its own Claude Code configuration would act: " + oneLine(strings.Join(names, ", ")) + "\n")
	b.WriteString(st.paint(sgrDim, "  (hooks, MCP servers, environment, permission mode, instructions, commands; until you trust it, Claude Code runs with your own settings only)") + "\n")
	b.WriteString("  y: yes, from now on · n: not now [y/N] ")
	return b.String()
}
