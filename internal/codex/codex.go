// Package codex runs conversation turns on the OpenAI Codex CLI, and reads
// its own store of past sessions (History, a history.Store: its rollouts
// listed and imported) and its own record of trusted folders and what in a
// folder it would apply (for trust). Plugin is its row in the table of
// CLIs: with its own settings (transport, home), its tool vocabulary, its
// not-logged-in failures and its continue command.
package codex

import (
	"errors"

	"spbridge/internal/backend"
)

// ErrNotFound is matched by the error of a codex program that is not
// installed.
var ErrNotFound = errors.New("codex not found")

// NotFoundText is the failure shown when codex is not installed.
const NotFoundText = "The Codex CLI (codex) was not found. Install it with `npm install -g @openai/codex`, or set SPBRIDGE_CODEX to its path."

// Program returns the codex executable: program when set, else
// $SPBRIDGE_CODEX, else codex found on PATH.
func Program(program string) (string, error) {
	return backend.FindProgram("codex", program, ErrNotFound)
}
