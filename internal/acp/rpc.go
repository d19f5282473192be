// Package acp serves spbridge as an Agent Client Protocol (version 1)
// agent: JSON-RPC 2.0, one message per line, on a reader and a writer
// (internal/jsonrpc carries the messages; acp says what they mean). It
// translates: each session's worker (its messages handled in arrival
// order), one handler per method, a turn's updates and the
// permission questions the session puts to the editor (the session.Front
// of its turns; the session decides by its grants and keeps the answer),
// what the CLI does
// between turns (the session.Between the session tells once it brought it
// in), configuration options (the session's settings as ACP's modes,
// configOptions and available_commands: acp keeps no copy of them);
// what an item looks like over ACP, and its encoding, is
// internal/acp/wire's. Each ACP session is one internal/session.Session, which owns
// the open document package, its CLI and the settings it runs with, its
// turns and what happens between them; what ACP
// has no words for travels as `_spbridge/…` extension methods and
// notifications.
package acp

// ACP's own error codes (JSON-RPC's are internal/jsonrpc's).
const (
	CodeBusy     = -32001 // New Conversation while a prompt runs
	CodeNotFound = -32002 // ACP: resource not found (an unknown session)
)
