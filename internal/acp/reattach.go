package acp

import (
	"spbridge/internal/acp/wire"
	"spbridge/internal/jsonrpc"
)

// This file holds what a client may ask of a session that is already open
// on its connection, as the protocol's conformance kit expects: a
// session/load or session/resume of it attaches to it again, and a
// session/delete of it closes it first.

// reattach answers a session/load or session/resume of the session,
// already open on this connection (a job of its own, after what came
// before it): the open session goes on as it is (the request's cwd, MCP
// servers, backend and model are not applied). A load replays the
// conversation and tells the commands before it answers; a resume sends
// nothing but its answer. Both answer as an open does: the modes and the
// configuration options.
func (ss *acpSession) reattach(how openHow) (any, error) {
	ss.mu.Lock()
	conv, cwd, closed := ss.conv, ss.set.cwd, ss.closed
	ss.mu.Unlock()
	if conv == nil || closed {
		return nil, jsonrpc.Errorf(CodeNotFound, "session %q has ended", ss.id)
	}
	res := map[string]any{"configOptions": wire.ConfigOptions(conv, ss.srv.booleans.Load())}
	if modes := wire.ModeState(conv); modes != nil {
		res["modes"] = modes
	}
	if how == openLoad {
		ss.send.replay(conv.Replay(), cwd)
		if conv.HasControls() {
			ss.send.update(map[string]any{"sessionUpdate": "available_commands_update", "availableCommands": wire.CommandList(ownCommands, conv)})
		}
	}
	return res, nil
}

// deleteOpen handles a session/delete of a session open on this
// connection: a job of the session's own (after what came before it) that
// closes it as session/close does, then deletes it. It reports false when
// no session of that id is open (or it ended meanwhile): the caller
// deletes it as a session not open.
func (s *Server) deleteOpen(m *jsonrpc.Message) bool {
	ss, err := s.session(m.Params)
	if err != nil {
		return false
	}
	return ss.work.enqueue(&job{m: m, run: func(ss *acpSession, j *job) (any, error) {
		if _, err := ss.closeSession(j); err != nil {
			return nil, err
		}
		return ss.srv.deleteSession(j.m.Params)
	}})
}
