package main

import (
	"bytes"
	"io"
	"strings"

	"github.com/tidwall/gjson"

	"spbridge/internal/audit"
	"spbridge/internal/catalog"
	"spbridge/internal/clis"
	"spbridge/internal/history"
	"spbridge/internal/regfile"
)

// cliSessionOf is the CLI session a conversation's last turn ran on, as
// its audit log recorded it: the backend, the session's id and the folder
// the CLI ran in; ok is false when the log has none.
func cliSessionOf(identity string) (backend, id, cwd string, ok bool) {
	state, err := audit.StateDir()
	if err != nil || identity == "" {
		return "", "", "", false
	}
	path, err := audit.Path(state, identity)
	if err != nil {
		return "", "", "", false
	}
	line, err := lastLine(path)
	if err != nil || !gjson.ValidBytes(line) {
		return "", "", "", false
	}
	r := gjson.GetManyBytes(line, "backend", "sessionID", "cwd")
	if r[0].String() == "" || r[1].String() == "" {
		return "", "", "", false
	}
	return r[0].String(), r[1].String(), r[2].String(), true
}

// lastLine is the last non-empty line of the file at path, read from its
// end (a record holds a turn's items: the line may be long, the file
// longer).
func lastLine(path string) ([]byte, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	end := fi.Size()
	var tail []byte
	const chunk = 64 << 10
	for pos := end; pos > 0; {
		n := min(int64(chunk), pos)
		pos -= n
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, pos); err != nil && err != io.EOF {
			return nil, err
		}
		tail = append(buf, tail...)
		trimmed := bytes.TrimRight(tail, "\n")
		if i := bytes.LastIndexByte(trimmed, '\n'); i >= 0 {
			return trimmed[i+1:], nil
		}
		if pos == 0 {
			return trimmed, nil
		}
	}
	return nil, io.EOF
}

// wayBack is the CLI session a conversation last ran on, as its audit
// log recorded it, and how a terminal continues it: the CLI session's
// continue command (catalog.Session.Continue, as session/list gives it),
// while that CLI still keeps the session on this machine.
type wayBack struct {
	Backend string `json:"backend"`
	ID      string `json:"id"`
	Cwd     string `json:"cwd,omitempty"`
	// Held: the CLI still keeps the session (its file is in the CLI's
	// store).
	Held bool `json:"held"`
	// ContinueCommand continues it in a terminal, in Cwd; "" when the CLI
	// no longer keeps it.
	ContinueCommand string `json:"continueCommand,omitempty"`
}

// lastCLISession is the way back of the conversation identity; false
// when its audit log knows no CLI session.
func lastCLISession(identity string) (wayBack, bool) {
	backend, id, cwd, ok := cliSessionOf(identity)
	if !ok {
		return wayBack{}, false
	}
	w := wayBack{Backend: backend, ID: id, Cwd: cwd}
	s := catalog.Session{CLI: backend, ID: id}
	if cmd := s.Continue(); cmd != "" && s.Held(history.Options{Stores: clis.Stores()}) {
		w.Held, w.ContinueCommand = true, cmd
	}
	return w, true
}

// continueLine says which CLI session the conversation last ran on and,
// while that CLI still holds it on this machine, the command that
// continues it in a terminal; "" when the audit log knows none.
func continueLine(identity string) string {
	w, ok := lastCLISession(identity)
	if !ok {
		return ""
	}
	s := "Last ran on " + w.Backend + " session " + w.ID
	if !w.Held {
		return s + " (no longer kept by " + w.Backend + " on this machine).\n"
	}
	cmd := w.ContinueCommand
	if w.Cwd != "" {
		cmd = "cd " + shellQuote(w.Cwd) + " && " + cmd
	}
	return s + "; continue it in a terminal: " + cmd + "\n"
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
