package codex

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"spbridge/internal/archive"
	"spbridge/internal/claude"
	"spbridge/internal/cliproc"
	"spbridge/internal/itemmap"
)

// Transports.
const (
	TransportExec      = "exec"
	TransportAppServer = "app-server"
)

// appState is the app-server transport's side of a Backend: one long-lived
// `codex app-server` process carrying every turn of the open, its thread,
// and the requests in flight.
type appState struct {
	proc   *cliproc.Proc
	mapper *itemmap.CodexApp // one for the thread, across processes
	nextID int64
	turnID string
}

// appStart starts `codex app-server`, says hello, and starts the thread, or
// resumes it when an earlier process of this open had one.
func (b *Backend) appStart(h claude.Host) error {
	path, err := b.Program()
	if err != nil {
		return err
	}
	p, err := cliproc.Start(cliproc.Config{Path: path, Args: []string{"-c", fmt.Sprintf("sandbox_mode=%q", b.opts.Sandbox), "app-server"},
		Dir: b.opts.Dir, Env: b.env(), MaxLine: b.opts.MaxLine})
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.proc = p
	b.app.proc = p
	b.mu.Unlock()
	if _, err := b.appCall(h, "initialize", map[string]any{
		"clientInfo": map[string]any{"name": "spbridge", "title": "spbridge", "version": "1"}, "capabilities": nil}); err != nil {
		return err
	}
	b.appSend(map[string]any{"jsonrpc": "2.0", "method": "initialized"})
	params := map[string]any{"cwd": b.opts.Dir, "approvalPolicy": "on-request", "sandbox": b.opts.Sandbox}
	if b.opts.Model != "" {
		params["model"] = b.opts.Model
	}
	method := "thread/start"
	if b.thread != "" {
		method = "thread/resume"
		params["threadId"] = b.thread
		params["excludeTurns"] = true
	}
	res, err := b.appCall(h, method, params)
	if err != nil {
		return err
	}
	if id := res.Get("thread.id").String(); id != "" {
		b.mu.Lock()
		b.thread = id
		b.model = res.Get("model").String()
		b.mu.Unlock()
	}
	return nil
}

func (b *Backend) appSend(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.app.proc.Write(append(data, '\n'))
}

// appRequest sends a request and returns its id.
func (b *Backend) appRequest(method string, params any) (string, error) {
	b.app.nextID++
	id := strconv.FormatInt(b.app.nextID, 10)
	return id, b.appSend(map[string]any{"jsonrpc": "2.0", "id": b.app.nextID, "method": method, "params": params})
}

// appCall sends a request and reads the server's lines until its answer,
// mapping whatever else arrives meanwhile.
func (b *Backend) appCall(h claude.Host, method string, params any) (gjson.Result, error) {
	id, err := b.appRequest(method, params)
	if err != nil {
		return gjson.Result{}, err
	}
	timeout := time.After(time.Minute)
	for {
		select {
		case line, ok := <-b.app.proc.Lines():
			if !ok {
				<-b.app.proc.Done()
				return gjson.Result{}, fmt.Errorf("codex app-server ended during %s: %v", method, b.app.proc.Err())
			}
			msg := gjson.ParseBytes(line.Data)
			if msg.Get("method").String() == "" && msg.Get("id").Raw == id {
				if e := msg.Get("error"); e.Exists() {
					return gjson.Result{}, fmt.Errorf("codex app-server: %s: %s", method, e.Get("message").String())
				}
				return msg.Get("result"), nil
			}
			for _, c := range b.app.mapper.Line(line.Data).Changes {
				h.Change(c)
			}
		case <-timeout:
			return gjson.Result{}, fmt.Errorf("codex app-server did not answer %s", method)
		}
	}
}

// input is a message as app-server input: its text, then its images as
// data URLs.
func input(msg claude.Message) []any {
	in := []any{map[string]any{"type": "text", "text": msg.Text, "text_elements": []any{}}}
	for _, img := range msg.Images {
		in = append(in, map[string]any{"type": "image", "url": "data:" + img.MimeType + ";base64," + base64.StdEncoding.EncodeToString(img.Data)})
	}
	return in
}

type appAnswer struct {
	id       string
	decision claude.Decision
}

// appTurn runs a turn on the app-server transport.
func (b *Backend) appTurn(ctx context.Context, msg claude.Message, h claude.Host, interruptCh <-chan struct{}) *itemmap.TurnEnd {
	if b.app.proc == nil {
		if err := b.appStart(h); err != nil {
			b.appReap()
			text := "The Codex CLI could not be started: " + err.Error()
			if errors.Is(err, ErrNotFound) || errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
				text = NotFoundText
			}
			return failBeforeStart(b.opts.NewID, h, text, err.Error())
		}
	}
	params := map[string]any{"threadId": b.thread, "input": input(msg)}
	if b.opts.Model != "" {
		params["model"] = b.opts.Model
	}
	startID, err := b.appRequest("turn/start", params)
	if err != nil {
		b.appReap()
		return failBeforeStart(b.opts.NewID, h, "codex app-server did not take the message: "+err.Error(), "")
	}
	p, m := b.app.proc, b.app.mapper
	turnCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	answers := make(chan appAnswer)
	waiting := map[string]bool{}
	var approvals sync.WaitGroup
	defer approvals.Wait()
	idle := time.NewTimer(b.opts.IdleTimeout)
	defer idle.Stop()
	resetIdle := func() {
		if !idle.Stop() {
			select {
			case <-idle.C:
			default:
			}
		}
		if len(waiting) == 0 {
			idle.Reset(b.opts.IdleTimeout)
		}
	}
	interrupted := false
	var escalate <-chan time.Time
	ctxDone := ctx.Done()
	respond := func(id string, d claude.Decision) {
		decision := "decline"
		if d.Allow {
			decision = "accept"
		}
		b.appSend(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "result": map[string]any{"decision": decision}})
	}
	interrupt := func() {
		if interrupted {
			return
		}
		interrupted = true
		cancel()
		for id := range waiting {
			m.Answered(id, false)
			respond(id, claude.Decision{})
		}
		clear(waiting)
		if b.app.turnID != "" {
			b.appRequest("turn/interrupt", map[string]any{"threadId": b.thread, "turnId": b.app.turnID})
		}
		escalate = time.After(b.opts.Grace)
	}
	for {
		select {
		case line, ok := <-p.Lines():
			if !ok {
				<-p.Done()
				text := "codex app-server exited before the turn ended"
				if err := p.Err(); err != nil {
					text += " (" + err.Error() + ")"
				}
				text += "."
				tailText := tail(p)
				b.appReap()
				r := m.Finish(interrupted, text, tailText)
				for _, c := range r.Changes {
					h.Change(c)
				}
				if r.End == nil {
					return failBeforeStart(b.opts.NewID, h, text, tailText)
				}
				return r.End
			}
			resetIdle()
			if line.Oversize > 0 {
				it := archive.NewItem(archive.TypeNotice)
				it.Set("text", fmt.Sprintf("Skipped a line of %d bytes from codex: longer than the limit.", line.Oversize))
				h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: it})
				continue
			}
			msgLine := gjson.ParseBytes(line.Data)
			if msgLine.Get("method").String() == "" && msgLine.Get("id").Raw == startID {
				if e := msgLine.Get("error"); e.Exists() {
					r := m.Finish(false, "codex app-server refused the turn: "+e.Get("message").String(), "")
					for _, c := range r.Changes {
						h.Change(c)
					}
					if r.End == nil {
						return failBeforeStart(b.opts.NewID, h, "codex app-server refused the turn: "+e.Get("message").String(), "")
					}
					return r.End
				}
				b.app.turnID = msgLine.Get("result.turn.id").String()
				if interrupted {
					b.appRequest("turn/interrupt", map[string]any{"threadId": b.thread, "turnId": b.app.turnID})
				}
				continue
			}
			r := m.Line(line.Data)
			if r.Skipped {
				b.mu.Lock()
				b.skipped++
				b.mu.Unlock()
			}
			for _, c := range r.Changes {
				h.Change(c)
			}
			for _, cr := range r.ControlRequests {
				b.appSend(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(cr.RequestID),
					"error": map[string]any{"code": -32601, "message": "spbridge does not answer " + cr.Subtype}})
			}
			for _, a := range r.Approvals {
				if interrupted {
					m.Answered(a.RequestID, false)
					respond(a.RequestID, claude.Decision{})
					continue
				}
				waiting[a.RequestID] = true
				approvals.Add(1)
				go func(a itemmap.Approval) {
					defer approvals.Done()
					d := h.Approve(turnCtx, a)
					select {
					case answers <- appAnswer{a.RequestID, d}:
					case <-turnCtx.Done():
					}
				}(a)
			}
			if r.End != nil {
				b.app.turnID = ""
				return r.End
			}
		case a := <-answers:
			if !waiting[a.id] {
				continue
			}
			delete(waiting, a.id)
			m.Answered(a.id, a.decision.Allow)
			respond(a.id, a.decision)
			resetIdle()
		case <-interruptCh:
			interrupt()
		case <-ctxDone:
			ctxDone = nil
			interrupt()
		case <-escalate:
			escalate = nil
			go p.Close(b.opts.Grace) // the server did not end the turn: stop it
		case <-idle.C:
			if len(waiting) > 0 {
				continue
			}
			go p.Close(b.opts.Grace)
			r := m.Finish(false, fmt.Sprintf("codex printed nothing for %v; it was stopped.", b.opts.IdleTimeout), tail(p))
			for _, c := range r.Changes {
				h.Change(c)
			}
			b.appReap()
			if r.End == nil {
				return &itemmap.TurnEnd{Status: itemmap.TurnFailed}
			}
			return r.End
		}
	}
}

// appReap ends the app-server process, keeping the thread for the next one
// to resume.
func (b *Backend) appReap() {
	p := b.app.proc
	if p == nil {
		return
	}
	b.app.proc = nil
	b.app.turnID = ""
	p.CloseStdin()
	b.reap(p)
}
