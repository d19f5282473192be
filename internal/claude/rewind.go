package claude

import (
	"context"
	"errors"
	"fmt"

	"github.com/tidwall/gjson"
)

// Rewinding the CLI's session (backend.Rewinder): Claude Code resumes a
// session up to a message of its own, `--resume SESSION
// --resume-session-at UUID` (a flag 2.1.328 takes and does not list in
// --help): the messages after UUID are not sent to the model again, and
// the turns that follow go on from UUID. The backend keeps, for each turn
// it ran, the uuid of the last message of the session's chain at its end
// (the user and assistant lines of stream-json carry it); Rewind ends the
// running claude, and the next turn starts it resuming at the last
// message of the turn kept.

// noteUUID keeps the uuid of a user or assistant line: the last message
// of the session's chain so far.
func (b *Backend) noteUUID(line []byte) {
	if !isType(line, "assistant") && !isType(line, "user") {
		return
	}
	if id := gjson.GetBytes(line, "uuid").String(); id != "" {
		b.mu.Lock()
		b.lastUUID = id
		b.mu.Unlock()
	}
}

// turnEnded records the last message of a turn that reached claude; the
// session goes on from there (a start after a failure before the next
// turn took its message resumes at the rewind's message still).
func (b *Backend) turnEnded() {
	b.mu.Lock()
	b.resumeAt = ""
	b.turnEnds = append(b.turnEnds, b.lastUUID)
	b.mu.Unlock()
}

// Rewind drops the last n turns this backend ran from claude's session:
// the running claude ends, and the next turn resumes the session at the
// last message of the turn before them. It fails, changing nothing, when
// the backend ran fewer than n+1 turns in its session (the turns before
// were another session's, or told as "# Conversation so far": the session
// then starts a new one) or did not see that turn's last message.
func (b *Backend) Rewind(_ context.Context, n int) error {
	b.lines.Lock() // no turn runs meanwhile
	defer b.lines.Unlock()
	b.mu.Lock()
	k := len(b.turnEnds) - n
	switch {
	case n < 1 || k < 0:
		b.mu.Unlock()
		return fmt.Errorf("claude ran %d turns in this session, not %d", len(b.turnEnds), n)
	case k == 0:
		b.mu.Unlock()
		return errors.New("the first turn of claude's session would go: it starts a new one")
	case b.session == "" || b.turnEnds[k-1] == "":
		b.mu.Unlock()
		return errors.New("claude did not say where its session's turn ended")
	}
	b.resumeAt = b.turnEnds[k-1]
	b.turnEnds = b.turnEnds[:k]
	b.lastUUID = b.resumeAt
	b.mu.Unlock()
	if p := b.Proc(); p != nil {
		p.CloseStdin()
		b.Reap(p)
	}
	return nil
}
