package session

import (
	"path/filepath"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/sessionindex"
)

// Title is the title of a conversation whose items are items, in the
// package dir: its first message, as the sessions index titles it
// (sessionindex.Title), else, for a first message of images only, the
// package's name; "" before the first message.
func Title(items []archive.Item, dir string) string {
	for _, it := range items {
		if it.Type() != archive.TypeUser {
			continue
		}
		if t := sessionindex.Title(it.String("text")); t != "" {
			return t
		}
		return filepath.Base(dir)
	}
	return ""
}

// nameSessions has be name the CLI sessions it starts from now on after
// the conversation (backend.Titler): a CLI's own list of its sessions
// then shows the conversation, and not the "# Conversation so far" a
// session told what was said before begins with.
func nameSessions(be backend.Backend, title string) {
	if t, ok := be.(backend.Titler); ok {
		t.SetTitle(title)
	}
}

// recordTurn records a turn that ran in the sessions index
// (Options.Index), with no lock held: the package, its folder and, from
// the first turn, its title (text, the turn's message, when it has none)
// are listed, and the CLI session the turn ran on (cli's session id) is
// the package's, not listed apart. A conversation the package does not
// keep is not recorded. A failure is only logged: the turn stands.
func (s *Session) recordTurn(cli, text, cliSession string) {
	if s.index == nil || !s.Keep() {
		return
	}
	cwd := ""
	if s.cwd != "" {
		cwd = s.cwdAbs()
	}
	if err := s.index.Record(s.pkg.Dir, cwd, text); err != nil {
		s.logf("sessions index: %v", err)
		return
	}
	if cliSession != "" {
		if err := s.index.Ran(s.pkg.Dir, cli, cliSession); err != nil {
			s.logf("sessions index: %v", err)
		}
	}
}
