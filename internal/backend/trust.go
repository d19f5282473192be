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
	AskTrust(ctx context.Context, q trust.Question) trust.Answer
}

// FolderTrust settles the trust of f before a turn of cli (its name, as
// trust.CLI.Name) runs: the first time in a session that f is untrusted and
// holds something cli would apply, h is asked when it can ask (else the
// answer is trust.NotNow), and the answer is taken; then, once a session,
// a notice says what an untrusted f left out and how to trust it. A nil f
// is untrusted, asks nothing and says nothing.
func FolderTrust(ctx context.Context, f *trust.Folder, cli string, h Host, newID itemmap.IDFunc) {
	if q, ok := f.Ask(cli); ok {
		a := trust.NotNow
		if asker, ok := h.(TrustAsker); ok && ctx.Err() == nil {
			a = asker.AskTrust(ctx, q)
		}
		if err := f.Answer(a); err != nil {
			Notice(newID, h, "spbridge could not keep the answer for later sessions: "+err.Error())
		}
	}
	if text := f.Notice(cli); text != "" {
		Notice(newID, h, text)
	}
}
