package acp

import (
	"errors"
	"fmt"

	"spbridge/internal/itemmap"
	"spbridge/internal/jsonrpc"
	"spbridge/internal/session"
)

// turns is a session's side of the turns internal/session runs for it
// (session.Front): each turn's host, the answer to its prompt, and the
// answers of the prompts handed back to the composer.
type turns struct{ ss *acpSession }

// Host is a turn's host: its updates, and the editor's answers to the
// permission requests the session asks about.
func (f turns) Host(session.Request) session.Host { return &acpHost{ss: f.ss, turn: true} }

// HandedBack answers a queued prompt that went back to the composer.
func (f turns) HandedBack(r session.Request) {
	if j, ok := r.Tag.(*job); ok {
		f.ss.srv.reply(j.m, cancelledResponse(), nil)
	}
}

// Changed tells the client the conversation kept in the document changed.
func (f turns) Changed() { f.ss.send.edited() }

// Ended answers the turn's prompt (a queued message of _spbridge/queue has
// none): its stop reason, after a usage_update, or the error of a turn
// that did not start. A panic in the turn, or in a callback of its host,
// ends the session first: its failure item goes out, the conversation is
// saved and closed, and the prompt answers with the internal error.
func (f turns) Ended(r session.Request, o session.Outcome) {
	ss := f.ss
	var m *jsonrpc.Message
	if j, ok := r.Tag.(*job); ok {
		m = j.m
	}
	var answer any
	var answerErr error
	var why string
	func() {
		defer func() {
			if p := recover(); p != nil {
				why = ss.srv.recovered("the end of a turn of session "+ss.id, p)
			}
		}()
		answer, answerErr = ss.answer(r, o)
	}()
	if h, ok := o.Host.(*acpHost); ok && h.panic() != "" {
		why = h.panic()
	}
	if o.Panic != nil {
		ss.srv.cfg.Log.Printf("panic in the turn of session %s: %v\n%s", ss.id, o.Panic, o.Stack)
		why = fmt.Sprint(o.Panic)
	}
	if why != "" {
		answer, answerErr = nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "internal error: %s; the session was ended", why)
	}
	failed := ss.work.failedWith(why)
	var jobs []*job // queued behind a failure
	if failed {
		// The session ends; its close saves.
		jobs = ss.work.abandon()
		ss.work.endFailed()
	}
	if m != nil {
		ss.srv.reply(m, answer, answerErr)
	}
	ss.srv.w.Flush() // what the turn buffered, when nothing answered it
	ss.work.endJobs(jobs, fmt.Sprintf("session %q ended after an internal error", ss.id))
}

// answer is the answer to a turn's prompt, and what goes out before it:
// the usage_update, the record in the sessions index.
func (ss *acpSession) answer(r session.Request, o session.Outcome) (any, error) {
	h, _ := o.Host.(*acpHost)
	res := o.Result
	switch {
	case res == nil && o.Err == nil:
		// Cancelled before it began, or a panic: nothing was sent.
		return cancelledResponse(), nil
	case res == nil && o.Cancelled:
		return cancelledResponse(), nil
	case res == nil:
		msg := o.Err.Error() // names the cause
		if !errors.Is(o.Err, session.ErrNotStarted) {
			msg = fmt.Sprintf("%v: %v", session.ErrNotStarted, o.Err)
		}
		ss.srv.cfg.Log.Printf("session %s: %s", ss.id, msg)
		return nil, &jsonrpc.Error{Code: CodeNotStarted, Message: msg}
	}
	end := res.End
	if res.AuditErr != nil {
		ss.srv.cfg.Log.Printf("session %s: %v", ss.id, res.AuditErr)
	}
	if res.SaveErr != nil {
		ss.saveFailed(res.SaveErr)
	}
	if h != nil {
		h.endCompactions()
		h.changes(res)
	}
	ss.send.usage(end, ss.conv)
	ss.index.turn(r.Text, end.SessionID)
	var failure string
	if h != nil {
		failure = h.failureText()
	}
	if name := ss.conv.CLI(); end.Status == itemmap.TurnFailed && notLoggedIn(name, failure) {
		// The editor offers its log-in on this answer.
		return nil, authRequired(name, failure)
	}
	answer := stopResponse(end, o.Cancelled)
	if !res.Changes.Empty() {
		answer["_meta"].(map[string]any)["spbridge"].(map[string]any)["changes"] = res.Changes.Value()
	}
	return answer, nil
}
