package acp

import (
	"context"
	"encoding/json"

	"spbridge/internal/backend"
	"spbridge/internal/clis"
	"spbridge/internal/jsonrpc"
)

// This file holds the log-in: the methods offered, authenticate, and the
// answer to a prompt whose CLI is not logged in.

// authBackend is the CLI whose log-in method is id, false when none.
func authBackend(id string) (backend.Plugin, bool) {
	for _, c := range clis.All {
		if c.LoginMethod() == id {
			return c, true
		}
	}
	return backend.Plugin{}, false
}

// authMethodIDs are the ids of the log-in methods, in the order offered.
func authMethodIDs() []string {
	var ids []string
	for _, c := range clis.All {
		ids = append(ids, c.LoginMethod())
	}
	return ids
}

// notLoggedIn reports whether a turn's failure is the missing or refused
// credentials of its CLI, the one named backendName, as its row tells.
func notLoggedIn(backendName, failure string) bool {
	cli, ok := clis.Lookup(backendName)
	return ok && cli.NotLoggedIn(failure)
}

// authRequired is the answer to a prompt whose CLI is not logged in.
func authRequired(backendName, failure string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: CodeAuthRequired, Message: "authentication required: " + failure,
		Data: map[string]any{"authMethods": authMethodIDs(), "backend": backendName}}
}

// authenticate checks that the CLI of the method the client used is logged
// in: the log-in itself ran in the client's terminal.
func (s *Server) authenticate(ctx context.Context, params json.RawMessage) (any, error) {
	var p struct {
		MethodID string `json:"methodId"`
	}
	if err := jsonrpc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	cli, ok := authBackend(p.MethodID)
	backend := cli.Name
	if !ok {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: unknown methodId %q", p.MethodID)
	}
	if s.cfg.AuthStatus == nil {
		return struct{}{}, nil
	}
	in, err := s.cfg.AuthStatus(ctx, backend)
	if err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "%s auth status: %v", backend, err)
	}
	if !in {
		return nil, jsonrpc.Errorf(CodeAuthRequired, "authentication required: %s is not logged in; run spbridge login --backend %s", backend, backend)
	}
	return struct{}{}, nil
}
