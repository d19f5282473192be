package backend

import (
	"context"

	"spbridge/internal/itemmap"
	"spbridge/internal/trust"
)

// TrustAsker is a Host that can ask the user whether to trust the folder
// a CLI runs in (its own configuration then acts), listing the files
// there that would: the editor's permission request, the terminal's
// question.
type TrustAsker interface {
	AskTrust(ctx context.Context, dir string, files []string) trust.Answer
}

// FolderTrust settles the trust of f before a turn's CLI runs: the first
// time in a session that f is untrusted and holds something that would
// act, h is asked when it can ask (else the answer is trust.NotNow), and
// the answer is taken; then, once a session, a notice says what an
// untrusted f left out and how to trust it. A nil f is untrusted, asks
// nothing and says nothing.
func FolderTrust(ctx context.Context, f *trust.Folder, h Host, newID itemmap.IDFunc) {
	if f.ShouldAsk() {
		a := trust.NotNow
		if asker, ok := h.(TrustAsker); ok && ctx.Err() == nil {
			a = asker.AskTrust(ctx, f.Dir, f.Files)
		}
		if err := f.Answer(a); err != nil {
			Notice(newID, h, "spbridge could not keep the answer for later sessions: "+err.Error())
		}
	}
	if text := f.Notice(); text != "" {
		Notice(newID, h, text)
	}
}
