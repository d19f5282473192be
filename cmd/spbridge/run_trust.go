package main

import (
	"context"
	"fmt"
	"strings"

	"spbridge/internal/trust"
)

// AskTrust asks on the terminal whether to trust the working folder,
// whose files would act (backend.TrustAsker): y trusts it from now on
// (kept in the state folder), anything else not now. Without a terminal
// nothing is asked: the folder stays untrusted, and the turn's notice
// says so.
func (h *shellHost) AskTrust(ctx context.Context, q trust.Question) trust.Answer {
	if h.ask == nil {
		return trust.NotNow
	}
	h.askMu.Lock()
	defer h.askMu.Unlock()
	answers := h.freshAnswers()
	h.mu.Lock()
	h.clearStatus()
	h.endLine()
	fmt.Fprint(h.errw, formatTrustQuestion(q, h.errStyle))
	h.prompting = true
	h.mu.Unlock()
	if s, _ := h.answer(ctx, answers); s == "y" || s == "yes" {
		return trust.TrustAlways
	}
	return trust.NotNow
}

// formatTrustQuestion is the question of AskTrust: the folder, the files
// that would act, what trusting means, and the choices.
func formatTrustQuestion(q trust.Question, st style) string {
	var b strings.Builder
	b.WriteString(st.paint(sgrBold, "Trust this folder?") + " " + oneLine(q.Dir) + "\n")
	b.WriteString("  Its own " + q.Who + " configuration would act: " + oneLine(strings.Join(trust.RelNames(q.Dir, q.Files), ", ")) + "\n")
	b.WriteString(st.paint(sgrDim, "  (until you trust it, "+q.Who+" runs with your own configuration only)") + "\n")
	b.WriteString("  y: yes, from now on · n: not now [y/N] ")
	return b.String()
}
