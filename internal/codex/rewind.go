package codex

import (
	"context"
	"errors"
	"fmt"
)

// Rewinding the CLI's thread (backend.Rewinder): codex 0.169.0's
// app-server drops a thread's turns from one of them on with thread/revert
// {threadId, beforeTurnId} (it has no thread/rollback), on a thread
// started with historyMode "paginated" (the one kind it reverts). The
// backend keeps the ids of the turns it ran on the thread (turn/started);
// Rewind reverts before the first turn that goes. codex exec has no such
// request: its Rewind fails, and the session starts a new CLI session told
// the conversation so far.

// ranTurn records a turn the app-server started on the thread.
func (b *Backend) ranTurn(id string) {
	if id == "" {
		return
	}
	b.mu.Lock()
	if n := len(b.turnIDs); n == 0 || b.turnIDs[n-1] != id {
		b.turnIDs = append(b.turnIDs, id)
	}
	b.mu.Unlock()
}

// Rewind drops the last n turns this backend ran from codex's thread
// (thread/revert before the first of them). It fails, changing nothing,
// on codex exec, when the backend ran fewer than n+1 turns on the thread
// (the first turn may hold what the thread was told of the conversation
// before it), or when the app-server refuses.
func (b *Backend) Rewind(ctx context.Context, n int) error {
	if b.transport != TransportAppServer {
		return errors.New("codex exec cannot rewind its session")
	}
	b.run.Lock() // no turn runs meanwhile
	defer b.run.Unlock()
	b.mu.Lock()
	k, thread := len(b.turnIDs)-n, b.thread
	var before string
	if n >= 1 && k >= 1 {
		before = b.turnIDs[k]
	}
	b.mu.Unlock()
	switch {
	case n < 1 || k < 0:
		return fmt.Errorf("codex ran %d turns on this thread, not %d", k+n, n)
	case k == 0:
		return errors.New("the thread's first turn would go: a new thread starts")
	}
	if b.app.proc == nil || !b.app.threaded {
		// Put to sleep (or ended) between turns: a server of its own
		// resumes the thread first, as the next turn's would.
		if err := b.appStart(ctx, discard{}, nil); err != nil {
			return fmt.Errorf("resume the thread to rewind it: %w", err)
		}
		b.mu.Lock()
		same := b.thread == thread
		b.mu.Unlock()
		if !same {
			return errors.New("the thread could not be resumed: a new one starts")
		}
	}
	if _, err := b.appCall(ctx, discard{}, nil, "thread/revert", map[string]any{"threadId": thread, "beforeTurnId": before}); err != nil {
		return err
	}
	b.mu.Lock()
	b.turnIDs = b.turnIDs[:k]
	b.mu.Unlock()
	return nil
}
