package acp

import (
	"errors"
	"fmt"
	"sync"

	"spbridge/internal/jsonrpc"
	"spbridge/internal/session"
)

// acpSession is one ACP session: one package and its CLI, from the
// session/new or session/load that opens it to its close. Its handlers
// (one per ACP method) translate; its worker runs them, one message at a
// time in arrival order (worker.go: the queue, cancel, shutdown, failure
// after a panic), and its sender sends its notifications (sender.go).
// What it holds is grouped by the lock that guards it:
//
//   - work.mu (the worker's): the message queue, what the reading
//     goroutine touches, so a cancel never waits for a save (the running
//     turn and the messages queued behind it are conv's: session.Prompt);
//   - mu: the open conversation and what the editor set at the open
//     (conv is set once, by the open, and read without mu after it);
//   - told (its own lock): what the client was told, which the
//     backend's events read on its goroutines, which never wait for mu.
//
// mu is taken before work.mu, and work.mu before told's. The CLI's
// settings (model, effort, mode) and what it offers are the
// conversation's (session.Settings): acp keeps no copy of them.
type acpSession struct {
	srv  *Server
	id   string  // the session's id: the package's path, or the CLI session's it was imported from
	work *worker // runs its messages' handlers, in order; owns its queue
	send sender  // its notifications

	mu     sync.Mutex
	closed bool
	conv   *session.Session // owns the package's conversation, nil until the open
	set    sessionSettings  // what the open set, for every backend of the session

	told  told
	index records // its record in the sessions index
}

// sessionSettings are what the editor set when it opened the session
// that acp reads itself (under mu); the CLI's settings are the
// conversation's (session.Settings).
type sessionSettings struct {
	pkg     string   // the package's path (set once the open resolved it)
	cwd     string   // the folder the CLI runs in
	addDirs []string // the editor's additional folders
}

// told is what the client was told of the session, which the backend's
// events (on its goroutines, never waiting for mu) read too: whether the
// open was answered, the title as the sessions index has it, the CLI
// session the last turn ran on.
type told struct {
	mu        sync.Mutex
	announced bool // the open was answered: commands and options may go out
	title     string
	ranOn     string
}

// saveFailed logs a save the session made of its own that failed (the
// conversation's, or its recovery copy's), or a recovery copy that could
// not be read.
func (ss *acpSession) saveFailed(err error) {
	ss.srv.cfg.Log.Printf("session %s: %v", ss.id, err)
}

// openConv is the session's conversation, nil until it is open.
func (ss *acpSession) openConv() *session.Session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.conv
}

// close saves a changed conversation, ends the CLI and releases the lock.
// A panic in any step is logged and the next steps still run. No lock of
// the session is held while it answers the prompts still queued, saves or
// ends the CLI: once closed is set, no handler and no turn starts anything
// anew.
func (ss *acpSession) close() error {
	ss.index.recorder.Wait() // the index has every turn before the session ends
	ss.mu.Lock()
	if ss.conv == nil || ss.closed {
		ss.mu.Unlock()
		return nil
	}
	ss.closed = true
	ss.mu.Unlock()
	// No handler submits anything once closed is set: what is still queued
	// is answered cancelled, with no lock held while the client reads it.
	for _, q := range ss.conv.Forget() {
		if j, ok := q.Tag.(*job); ok {
			ss.srv.reply(j.m, cancelledResponse(), nil)
		}
	}
	var errs []error
	if ss.conv.Unsaved() {
		errs = append(errs, ss.safely("save", func() error {
			if _, err := ss.conv.Save(); err != nil {
				return fmt.Errorf("save %s: %w", ss.id, err)
			}
			return nil
		}))
	}
	errs = append(errs, ss.safely("close the CLI and unlock", ss.conv.Close))
	return errors.Join(errs...)
}

// closeSession handles session/close (a job of the session's own, so what
// came before it is handled first): the prompts are cancelled, the running
// turn ends, then the conversation is saved, the CLI ended, the lock
// released and the session forgotten. What was queued behind it is
// answered as for an unknown session.
func (ss *acpSession) closeSession(j *job) (any, error) {
	var p struct{}
	if err := jsonrpc.DecodeParams(j.m.Params, &p); err != nil {
		return nil, err
	}
	ss.work.cancelPrompts()
	if conv := ss.openConv(); conv != nil {
		conv.Stop()
		conv.WaitTurns()
	}
	jobs := ss.work.abandon()
	err := ss.close()
	ss.work.endJobs(jobs, fmt.Sprintf("session %q was closed", ss.id))
	if err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "close: %v", err)
	}
	return struct{}{}, nil
}

// safely runs f, turning a panic into an error.
func (ss *acpSession) safely(what string, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s of session %s: panic: %s", what, ss.id, ss.srv.recovered(what+" of session "+ss.id, r))
		}
	}()
	return f()
}

// begin is a handler's opening: its params decoded into p (missing or
// wrong ones are invalid), checked by check when it is not nil, and the
// session's open conversation (live).
func (ss *acpSession) begin(j *job, p any, check func() error) (*session.Session, error) {
	if err := jsonrpc.DecodeParams(j.m.Params, p); err != nil {
		return nil, err
	}
	if check != nil {
		if err := check(); err != nil {
			return nil, err
		}
	}
	return ss.live()
}

// live is the session's open conversation, or the error of a session that
// has closed (or never opened).
func (ss *acpSession) live() (*session.Session, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed || ss.conv == nil {
		return nil, jsonrpc.Errorf(CodeNotFound, "session %q has ended", ss.id)
	}
	return ss.conv, nil
}

func (ss *acpSession) rate(j *job) (any, error) {
	var p struct {
		ItemID  string   `json:"itemId"`
		Rating  string   `json:"rating"`
		Reasons []string `json:"reasons"`
	}
	conv, err := ss.begin(j, &p, func() error {
		if p.ItemID == "" || (p.Rating != "good" && p.Rating != "bad") {
			return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, `invalid params: itemId and a rating of "good" or "bad" are required`)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	conv.Rate(p.ItemID, p.Rating, p.Reasons)
	if conv.Keep() {
		ss.send.edited()
	}
	return struct{}{}, nil
}

// save writes the conversation into the package. While a turn runs it
// writes the conversation as it stands (the turn's end saves again); the
// turn streams on meanwhile.
func (ss *acpSession) save(j *job) (any, error) {
	conv, err := ss.begin(j, &struct{}{}, nil)
	if err != nil {
		return nil, err
	}
	r, err := conv.Save()
	if err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "save: %v", err)
	}
	return map[string]any{"written": nonNil(r.Written), "removed": nonNil(r.Removed)}, nil
}

// saveRunning saves the conversation as it stands when a turn runs (the
// turn's end saves again).
func (ss *acpSession) saveRunning() {
	conv, err := ss.live()
	if err != nil || !conv.Running() {
		return
	}
	if err := ss.safely("save", func() error { _, err := conv.Save(); return err }); err != nil {
		ss.srv.cfg.Log.Printf("session %s: save: %v", ss.id, err)
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// errBusyNew answers a New Conversation asked for while a turn runs.
var errBusyNew = &jsonrpc.Error{Code: CodeBusy, Message: "a prompt is running in this session; cancel it first"}

func (ss *acpSession) newConversation(j *job) (any, error) {
	// The session's worker runs this handler: no prompt starts a turn, and
	// no other handler runs, until it returns; mu is not held while the
	// CLI ends and the agent folder is removed.
	conv, err := ss.begin(j, &struct{}{}, nil)
	if err != nil {
		return nil, err
	}
	if conv.Running() {
		return nil, errBusyNew
	}
	// The old CLI ends: its session belongs to the old conversation, and a
	// new CLI starts with the next prompt.
	if _, err := conv.NewConversation(); err != nil {
		if errors.Is(err, session.ErrBusy) {
			return nil, errBusyNew
		}
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "new conversation: %v", err)
	}
	ss.index.clearTitle()
	if conv.Keep() {
		ss.send.edited()
	}
	return struct{}{}, nil
}

// recoverCopy takes the recovery copy the open offered: the conversation
// becomes the copy's, replayed as session/load replays it, and edited
// (the client saves it).
func (ss *acpSession) recoverCopy(j *job) (any, error) {
	conv, err := ss.begin(j, &struct{}{}, nil)
	if err != nil {
		return nil, err
	}
	n, err := conv.Recover()
	switch {
	case errors.Is(err, session.ErrNoRecovery):
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "no recovery copy is offered in session %s (a turn ran since it opened, or the copy was taken)", ss.id)
	case errors.Is(err, session.ErrBusy):
		return nil, errBusyNew
	case err != nil:
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "recover: %v", err)
	}
	ss.send.replay(conv.Replay(), ss.set.cwd)
	if conv.Keep() {
		ss.send.edited()
	}
	return map[string]any{"items": n}, nil
}

func (ss *acpSession) setKeep(j *job) (any, error) {
	var p struct {
		Keep *bool `json:"keep"`
	}
	conv, err := ss.begin(j, &p, func() error {
		if p.Keep == nil {
			return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: keep (a boolean) is required")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	conv.SetKeep(*p.Keep) // the next save writes or removes agent/
	return struct{}{}, nil
}
