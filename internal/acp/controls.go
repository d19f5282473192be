package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"spbridge/internal/backend"
	"spbridge/internal/clis"
	"spbridge/internal/itemmap"
)

// This file holds what an editor controls of a session besides its
// prompts: modes, slash commands, the editor's MCP servers, the session
// history (list, resume, close) and the log-in methods.

// Own commands: a prompt that is exactly "/new" or "/save" runs spbridge's
// New Conversation or save instead of going to the CLI.
const (
	commandNew  = "new"
	commandSave = "save"
)

// ownCommands are spbridge's commands, listed before the CLI's.
var ownCommands = []backend.Command{
	{Name: commandNew, Description: "New Conversation: start over with a new CLI session (the document's conversation is cleared)"},
	{Name: commandSave, Description: "Save the conversation into the document now"},
}

// parseMCPServers reads ACP's mcpServers (stdio, http, sse) into the
// backends' neutral form. A missing or null list is none.
func parseMCPServers(raw json.RawMessage) ([]backend.MCPServer, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var list []struct {
		Type    string                         `json:"type"`
		Name    string                         `json:"name"`
		Command string                         `json:"command"`
		Args    []string                       `json:"args"`
		Env     []struct{ Name, Value string } `json:"env"`
		URL     string                         `json:"url"`
		Headers []struct{ Name, Value string } `json:"headers"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, rpcErrorf(CodeInvalidParams, "invalid params: mcpServers: %v", err)
	}
	var out []backend.MCPServer
	for i, s := range list {
		if s.Name == "" {
			return nil, rpcErrorf(CodeInvalidParams, "invalid params: mcpServers[%d]: name is required", i)
		}
		m := backend.MCPServer{Name: s.Name}
		switch s.Type {
		case "", backend.MCPStdio:
			if s.Command == "" {
				return nil, rpcErrorf(CodeInvalidParams, "invalid params: mcpServers[%d]: command is required", i)
			}
			m.Transport, m.Command, m.Args = backend.MCPStdio, s.Command, s.Args
			for _, e := range s.Env {
				m.Env = append(m.Env, backend.NameValue{Name: e.Name, Value: e.Value})
			}
		case backend.MCPHTTP, backend.MCPSSE:
			if s.URL == "" {
				return nil, rpcErrorf(CodeInvalidParams, "invalid params: mcpServers[%d]: url is required", i)
			}
			m.Transport, m.URL = s.Type, s.URL
			for _, h := range s.Headers {
				m.Headers = append(m.Headers, backend.NameValue{Name: h.Name, Value: h.Value})
			}
		default:
			return nil, rpcErrorf(CodeInvalidParams, "invalid params: mcpServers[%d]: unknown type %q", i, s.Type)
		}
		out = append(out, m)
	}
	return out, nil
}

// events are what the session's backend tells it besides items. They run
// on the backend's goroutines: they only send notifications.
func (ss *acpSession) events() backend.Events {
	return backend.Events{
		ModeChanged: func(id string) {
			ss.ctl.mu.Lock()
			changed := ss.ctl.mode != id
			ss.ctl.mode = id
			ss.ctl.mu.Unlock()
			if changed {
				ss.modeChanged()
			}
		},
		CommandsChanged: func(cmds []backend.Command) {
			ss.ctl.mu.Lock()
			ss.ctl.commands = slices.Clone(cmds)
			ss.ctl.mu.Unlock()
			ss.sendCommands()
		},
		ModelsChanged: func(list []backend.Model) {
			ss.ctl.mu.Lock()
			ss.ctl.models = slices.Clone(list)
			name, program := ss.ctl.listedBy, ss.ctl.program
			ss.ctl.mu.Unlock()
			if ss.ctl.modelsSeen != nil {
				ss.ctl.modelsOnce.Do(func() { close(ss.ctl.modelsSeen) })
			}
			ss.configChanged()
			if cache := ss.srv.cfg.Models; cache != nil && program != "" {
				// Kept for the next session's answer (a small file,
				// written once a CLI start).
				if err := cache.Store(name, program, list); err != nil {
					ss.srv.cfg.Log.Printf("session %s: keep the model list: %v", ss.id, err)
				}
			}
		},
	}
}

// modeChanged tells the client the session's mode changed.
func (ss *acpSession) modeChanged() {
	ss.ctl.mu.Lock()
	mode := ss.ctl.mode
	ss.ctl.mu.Unlock()
	ss.update(map[string]any{"sessionUpdate": "current_mode_update", "currentModeId": mode})
	ss.update(map[string]any{"sessionUpdate": "config_option_update", "configOptions": ss.configOptions()})
}

// update sends one session/update.
func (ss *acpSession) update(u map[string]any) {
	ss.srv.w.notify("session/update", map[string]any{"sessionId": ss.id, "update": u})
}

// modeState is session/new's modes: the backend's modes and the current
// one; nil when the backend has none.
func (ss *acpSession) modeState() any {
	avail, current := ss.modeEntries("id")
	if avail == nil {
		return nil
	}
	return map[string]any{"currentModeId": current, "availableModes": avail}
}

// modeOption is the mode as a config option, nil without modes.
func (ss *acpSession) modeOption() any {
	opts, current := ss.modeEntries("value")
	if opts == nil {
		return nil
	}
	return map[string]any{"id": "mode", "name": "Mode", "category": "mode", "type": "select",
		"currentValue": current, "options": opts}
}

// modeEntries lists the backend's modes, each named by idKey ("id" for
// modes, "value" for a config option's options), with the current mode;
// nil without modes.
func (ss *acpSession) modeEntries(idKey string) ([]any, string) {
	ss.ctl.mu.Lock()
	defer ss.ctl.mu.Unlock()
	if len(ss.ctl.modes) == 0 {
		return nil, ""
	}
	var entries []any
	for _, m := range ss.ctl.modes {
		e := map[string]any{idKey: m.ID, "name": m.Name}
		if m.Description != "" {
			e["description"] = m.Description
		}
		entries = append(entries, e)
	}
	return entries, ss.ctl.mode
}

// controls returns the session's backend's controls, nil when it has none.
func (ss *acpSession) controls() backend.Controls {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.conv == nil {
		return nil
	}
	c, _ := ss.conv.CurrentBackend().(backend.Controls)
	return c
}

// takeControls reads what the backend's controls offer at open.
func (ss *acpSession) takeControls(c backend.Controls) {
	if c == nil {
		return
	}
	modes, mode, cmds, models, effort := c.Modes(), c.Mode(), c.Commands(), c.Models(), c.Effort()
	ss.ctl.mu.Lock()
	ss.ctl.modes, ss.ctl.mode, ss.ctl.commands, ss.ctl.models, ss.ctl.effort = modes, mode, cmds, models, effort
	ss.ctl.mu.Unlock()
}

// setMode handles session/set_mode.
func (ss *acpSession) setMode(j *job) (any, error) {
	var p struct {
		ModeID string `json:"modeId"`
	}
	if err := decode(j.m.Params, &p); err != nil {
		return nil, err
	}
	if err := ss.switchMode(p.ModeID); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

// switchMode asks the backend for mode id; the backend's ModeChanged tells
// the client.
func (ss *acpSession) switchMode(id string) error {
	c := ss.controls()
	if c == nil {
		return rpcErrorf(CodeInvalidParams, "invalid params: this session has no modes")
	}
	err := c.SetMode(context.Background(), id)
	switch {
	case errors.Is(err, backend.ErrUnknownMode):
		return rpcErrorf(CodeInvalidParams, "invalid params: unknown mode %q", id)
	case err != nil:
		return rpcErrorf(CodeInternalError, "set mode %s: %v", id, err)
	}
	// A backend that fires no ModeChanged (the mode was already id) leaves
	// the session's mode as it is.
	ss.ctl.mu.Lock()
	changed := ss.ctl.mode != id
	ss.ctl.mode = id
	ss.ctl.mu.Unlock()
	if changed {
		ss.modeChanged()
	}
	return nil
}

// commandList is the available_commands_update's list: spbridge's own
// commands, then the CLI's (one of the same name as spbridge's is left
// out).
func (ss *acpSession) commandList() []any {
	ss.ctl.mu.Lock()
	cmds := slices.Concat(ownCommands, ss.ctl.commands)
	ss.ctl.mu.Unlock()
	seen := make(map[string]bool)
	list := []any{}
	for _, c := range cmds {
		if c.Name == "" || seen[c.Name] {
			continue
		}
		seen[c.Name] = true
		desc := c.Description
		if desc == "" {
			desc = "/" + c.Name
		}
		e := map[string]any{"name": c.Name, "description": desc}
		if c.InputHint != "" {
			e["input"] = map[string]any{"hint": c.InputHint}
		}
		list = append(list, e)
	}
	return list
}

// sendCommands sends available_commands_update, once the client knows the
// session (its session/new or load was answered).
func (ss *acpSession) sendCommands() {
	ss.ctl.mu.Lock()
	announced := ss.ctl.announced
	ss.ctl.mu.Unlock()
	if !announced {
		return
	}
	ss.update(map[string]any{"sessionUpdate": "available_commands_update", "availableCommands": ss.commandList()})
}

// afterOpen runs once the client has the answer to the session's open: the
// commands known so far go out, and the CLI starts in the background so
// that its own commands follow.
func (ss *acpSession) afterOpen() {
	c := ss.controls()
	if c == nil {
		// A backend without controls (a test's) has no commands to run.
		return
	}
	ss.ctl.mu.Lock()
	ss.ctl.announced = true
	ss.ctl.mu.Unlock()
	ss.sendCommands()
	select {
	case <-ss.ctl.modelsSeen:
		// The CLI listed its models before the answer, which carried
		// them; a client that waits for the list hears of it too.
		ss.configChanged()
	default:
	}
	ss.prepare(c)
}

// modelsWait is how long an open's answer waits for a CLI that lists its
// models, when no list of its program is kept.
const modelsWait = 3 * time.Second

// openModels gives the open's answer the CLI's own models: those its
// program listed last (kept by Config.Models), else, for a backend whose
// CLI lists them as it starts (claude; codex app-server), what it lists
// within modelsWait of its early start (less when the CLI cannot start). The list that arrives later
// replaces them with a config_option_update as before.
func (ss *acpSession) openModels(name string, be backend.Backend, c backend.Controls) {
	program, err := be.Program()
	if c == nil || err != nil {
		return
	}
	ss.ctl.mu.Lock()
	ss.ctl.listedBy, ss.ctl.program = name, program
	ss.ctl.mu.Unlock()
	if cache := ss.srv.cfg.Models; cache != nil {
		if list := cache.Load(name, program); len(list) > 0 {
			ss.ctl.mu.Lock()
			ss.ctl.models = list // in place of the backend's list from before its CLI said
			ss.ctl.mu.Unlock()
			return
		}
	}
	if l, ok := be.(interface{ ListsModels() bool }); !ok || !l.ListsModels() {
		return
	}
	failed := ss.prepare(c)
	t := time.NewTimer(modelsWait)
	defer t.Stop()
	select {
	case <-ss.ctl.modelsSeen:
	case <-failed: // the CLI could not start (missing, say): no list comes
	case <-t.C:
	}
}

// prepare starts the CLI ahead of the first turn (Controls.Prepare), once,
// in the background: from the open when its answer waits for the CLI's
// models, else after it. The channel it returns is closed when the start
// failed (nil when it was started before).
func (ss *acpSession) prepare(c backend.Controls) <-chan struct{} {
	ss.mu.Lock()
	if ss.closed || ss.bg.cancel != nil {
		ss.mu.Unlock()
		return nil
	}
	failed := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	ss.bg.cancel = cancel
	ss.bg.preparing.Add(1)
	ss.mu.Unlock()
	go func() {
		defer ss.bg.preparing.Done()
		defer cancel()
		defer func() {
			if r := recover(); r != nil {
				ss.srv.recovered("the CLI's start of session "+ss.id, r)
			}
		}()
		if err := c.Prepare(ctx); err != nil {
			close(failed)
			if ctx.Err() == nil {
				ss.srv.cfg.Log.Printf("session %s: start the CLI: %v", ss.id, err)
			}
		}
	}()
	return failed
}

// ownCommand reports which of spbridge's commands a prompt is ("" for
// none): the whole prompt is "/new" or "/save".
func ownCommand(text string) string {
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "/") {
		return ""
	}
	switch name := t[1:]; name {
	case commandNew, commandSave:
		return name
	}
	return ""
}

// runOwnCommand runs spbridge's own command for a prompt and answers it as
// a turn that ended, with a line saying what was done.
func (ss *acpSession) runOwnCommand(j *job, name string) (any, error) {
	var say string
	switch name {
	case commandNew:
		if _, err := ss.newConversation(&job{m: &message{Params: json.RawMessage("{}")}}); err != nil {
			return nil, err
		}
		say = "Started a new conversation."
	case commandSave:
		r, err := ss.save(&job{m: &message{Params: json.RawMessage("{}")}})
		if err != nil {
			return nil, err
		}
		n := len(r.(map[string]any)["written"].([]string))
		say = fmt.Sprintf("Saved the conversation (%d files written).", n)
	}
	ss.chunk(agentMessageChunk, say)
	return map[string]any{"stopReason": "end_turn"}, nil
}

// ---------------------------------------------------------------- history

// listSessions handles session/list: the packages opened through serve
// (those that no longer exist left out) and the CLIs' own sessions not
// imported into one, newest first (listAll).
func (s *Server) listSessions(params json.RawMessage) (any, error) {
	var p struct {
		Cwd    string `json:"cwd"`
		Cursor string `json:"cursor"`
	}
	if len(params) > 0 && string(params) != "null" {
		if err := decode(params, &p); err != nil {
			return nil, err
		}
	}
	if p.Cwd != "" && !filepath.IsAbs(p.Cwd) {
		return nil, rpcErrorf(CodeInvalidParams, "invalid params: cwd must be an absolute path")
	}
	cursor, err := parseListCursor(p.Cursor)
	if err != nil {
		return nil, rpcErrorf(CodeInvalidParams, "invalid params: cursor: %v", err)
	}
	// A page after the first is cut from the listing the first page was,
	// while it is kept; else (and for a first page) every session is
	// listed anew.
	var all []listEntry
	var snapshot uint64
	if cursor != nil && cursor.Snapshot != 0 {
		if all = s.lists.get(cursor.Snapshot, p.Cwd); all != nil {
			snapshot = cursor.Snapshot
		}
	}
	if snapshot == 0 {
		if all, err = s.listAll(p.Cwd); err != nil {
			return nil, rpcErrorf(CodeInternalError, "list sessions: %v", err)
		}
		if len(all) > listPageSize {
			snapshot = s.lists.put(p.Cwd, all)
		}
	}
	page, next := listPage(all, cursor, snapshot)
	if next == "" && snapshot != 0 {
		s.lists.drop(snapshot) // its last page: the editor has it all
	}
	sessions := []any{}
	for _, e := range page {
		info := map[string]any{"sessionId": e.id, "cwd": e.cwd, "updatedAt": e.updated.UTC().Format(time.RFC3339)}
		if e.title != "" {
			info["title"] = e.title
		}
		if len(e.dirs) > 0 {
			info["additionalDirectories"] = e.dirs
		}
		if e.meta != nil {
			info["_meta"] = map[string]any{"spbridge": e.meta}
		}
		sessions = append(sessions, info)
	}
	res := map[string]any{"sessions": sessions}
	if next != "" {
		res["nextCursor"] = next
	}
	return res, nil
}

// touch records the session's open in the index, and reads its title.
func (ss *acpSession) touch() {
	ix := ss.srv.cfg.Index
	if ix == nil {
		return
	}
	if err := ix.Touch(ss.set.pkg, ss.set.cwd, ss.set.addDirs); err != nil {
		ss.srv.cfg.Log.Printf("session %s: sessions index: %v", ss.id, err)
		return
	}
	if e, ok, err := ix.Get(ss.set.pkg); err == nil && ok {
		ss.ctl.mu.Lock()
		ss.ctl.title = e.Title
		ss.ctl.mu.Unlock()
	}
}

// recordTurn records a turn that ran in the index and, when it gave the
// session its title, tells the client.
func (ss *acpSession) recordTurn(text, cliSession string) {
	ix := ss.srv.cfg.Index
	if ix == nil {
		return
	}
	ss.ctl.mu.Lock()
	newCLISession := cliSession != "" && cliSession != ss.ctl.ranOn
	ss.ctl.ranOn = cliSession
	ss.ctl.mu.Unlock()
	if newCLISession {
		// The CLI keeps this session in its own list too: session/list
		// shows it as this package, not twice.
		if err := ix.Ran(ss.set.pkg, ss.backendName(), cliSession); err != nil {
			ss.srv.cfg.Log.Printf("session %s: sessions index: %v", ss.id, err)
		}
	}
	ss.ctl.mu.Lock()
	titled := ss.ctl.title != ""
	ss.ctl.mu.Unlock()
	if titled {
		ss.bg.recorder.Later(ix, ss.set.pkg, ss.set.cwd, text, func(err error) {
			ss.srv.cfg.Log.Printf("session %s: sessions index: %v", ss.id, err)
		})
		return
	}
	ss.bg.recorder.Wait()
	if err := ix.Record(ss.set.pkg, ss.set.cwd, text); err != nil {
		ss.srv.cfg.Log.Printf("session %s: sessions index: %v", ss.id, err)
		return
	}
	e, ok, err := ix.Get(ss.set.pkg)
	if err != nil || !ok {
		return
	}
	ss.ctl.mu.Lock()
	changed := e.Title != "" && e.Title != ss.ctl.title
	ss.ctl.title = e.Title
	ss.ctl.mu.Unlock()
	if changed {
		ss.update(map[string]any{"sessionUpdate": "session_info_update", "title": e.Title,
			"updatedAt": e.UpdatedAt.UTC().Format(time.RFC3339)})
	}
}

// clearTitle forgets the title after New Conversation: the next turn gives
// the next one.
func (ss *acpSession) clearTitle() {
	ss.bg.recorder.Wait() // a turn recorded later must not give the old title back
	ss.ctl.mu.Lock()
	ss.ctl.title = ""
	ss.ctl.mu.Unlock()
	if ix := ss.srv.cfg.Index; ix != nil {
		if err := ix.SetTitle(ss.set.pkg, ""); err != nil {
			ss.srv.cfg.Log.Printf("session %s: sessions index: %v", ss.id, err)
		}
	}
}

// closeSession handles session/close (a job of the session's own, so what
// came before it is handled first): the prompts are cancelled, the running
// turn ends, then the conversation is saved, the CLI ended, the lock
// released and the session forgotten. What was queued behind it is
// answered as for an unknown session.
func (ss *acpSession) closeSession(j *job) (any, error) {
	var p struct{}
	if err := decode(j.m.Params, &p); err != nil {
		return nil, err
	}
	ss.cancelPrompts()
	if conv := ss.openConv(); conv != nil {
		conv.Stop()
		conv.WaitTurns()
	}
	jobs := ss.abandon()
	err := ss.close()
	ss.endJobs(jobs, fmt.Sprintf("session %q was closed", ss.id))
	if err != nil {
		return nil, rpcErrorf(CodeInternalError, "close: %v", err)
	}
	return struct{}{}, nil
}

// ---------------------------------------------------------------- log-in

// authBackend is the CLI whose log-in method is id, false when none.
func authBackend(id string) (clis.CLI, bool) {
	for _, c := range clis.All {
		if c.LoginMethod() == id {
			return c, true
		}
	}
	return clis.CLI{}, false
}

// authMethodIDs are the ids of the log-in methods, in the order offered.
func authMethodIDs() []string {
	var ids []string
	for _, c := range clis.All {
		ids = append(ids, c.LoginMethod())
	}
	return ids
}

// authMethods are the log-ins spbridge offers. To a client that runs
// terminal log-ins (clientCapabilities.auth.terminal), each CLI's own,
// run as the command the client started spbridge with plus `--login NAME`
// (`spbridge serve --login claude`); to any other client, agent methods
// whose description names the command to run.
func authMethods(terminal bool) []any {
	var out []any
	for _, c := range clis.All {
		m := map[string]any{"id": c.LoginMethod(), "name": "Log in to " + c.Display}
		if terminal {
			m["type"] = "terminal"
			m["description"] = "Runs " + c.Display + "'s own log-in in a terminal."
			m["args"] = []string{"--login", c.Name}
		} else {
			m["description"] = "Run `spbridge login --backend " + c.Name + "` in a terminal, then try again."
		}
		out = append(out, m)
	}
	return out
}

// wantsTerminalAuth reports whether initialize's params say the client runs
// terminal log-ins: clientCapabilities.auth.terminal is true.
func wantsTerminalAuth(params json.RawMessage) bool {
	var p struct {
		ClientCapabilities struct {
			Auth struct {
				Terminal bool `json:"terminal"`
			} `json:"auth"`
		} `json:"clientCapabilities"`
	}
	return json.Unmarshal(params, &p) == nil && p.ClientCapabilities.Auth.Terminal
}

// notLoggedIn reports whether a turn's failure is its CLI's missing or
// refused credentials: the failure the mappers give a 401, or Codex's
// provider key variable unset (itemmap's ClaudeNotLoggedIn,
// CodexLoginFailure).
func notLoggedIn(failure string) bool {
	return failure == itemmap.ClaudeNotLoggedIn || itemmap.CodexLoginFailure(failure)
}

// authRequired is the answer to a prompt whose CLI is not logged in.
func authRequired(backendName, failure string) *RPCError {
	return &RPCError{Code: CodeAuthRequired, Message: "authentication required: " + failure,
		Data: map[string]any{"authMethods": authMethodIDs(), "backend": backendName}}
}
