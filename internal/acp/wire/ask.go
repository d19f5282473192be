package wire

import (
	"strings"

	"spbridge/internal/backend"
	"spbridge/internal/trust"
)

// This file holds what spbridge asks the client, as ACP shows it: a
// permission request's options, the question whether to trust a folder,
// the log-in methods offered.

// PermissionOptions are a permission request's options: allow once;
// always allow what (a command with its folder, a tool) when the request
// can be granted for the session (canAlways); every edit in the session's
// folders, for an edit inside them (canEdits); reject; always reject what.
func PermissionOptions(what string, canAlways, canEdits bool) []any {
	options := []any{map[string]any{"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"}}
	if canAlways {
		options = append(options, map[string]any{"optionId": "allow_always", "name": "Always allow " + what + " in this session", "kind": "allow_always"})
	}
	if canEdits {
		// An edit inside the session's folders: or every such edit.
		options = append(options, map[string]any{"optionId": "allow_all_edits", "name": "Allow all edits in this session", "kind": "allow_always"})
	}
	options = append(options, map[string]any{"optionId": "reject_once", "name": "Reject", "kind": "reject_once"})
	if canAlways {
		options = append(options, map[string]any{"optionId": "reject_always", "name": "Always reject " + what + " in this session", "kind": "reject_always"})
	}
	return options
}

// AuthMethods are the log-ins spbridge offers, one a CLI of rows. To a client that runs
// terminal log-ins (clientCapabilities.auth.terminal), each CLI's own,
// run as the command the client started spbridge with plus `--login NAME`
// (`spbridge serve --login claude`); to any other client, agent methods
// whose description names the command to run.
func AuthMethods(rows []backend.Plugin, terminal bool) []any {
	var out []any
	for _, c := range rows {
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

// Trust options: the optionIds of the trust question.
const (
	TrustAlways = "trust"      // allow_always: trusted, kept in the state folder
	TrustOnce   = "trust_once" // allow_once: trusted for this session
	TrustNotNow = "not_now"    // reject_once: untrusted; asked again next session
	TrustNever  = "never"      // reject_always: untrusted, kept; never asked again
)

// TrustCall is the tool call, of id, of the question whether to trust
// the folder q.Dir, whose own configuration would act: "Trust this
// folder?", kind other, what would act in its content, the folder and its
// files in _meta.spbridge.trust.
func TrustCall(id string, q trust.Question) map[string]any {
	dir, files := q.Dir, q.Files
	text := "This folder's own " + q.Who + " configuration would act: " + strings.Join(trust.RelNames(dir, files), ", ") +
		". Until you trust the folder, " + q.Who + " runs with your own configuration only."
	return map[string]any{"toolCallId": id, "title": "Trust this folder? " + dir, "kind": "other", "status": "pending",
		"content":   []any{map[string]any{"type": "content", "content": map[string]any{"type": "text", "text": text}}},
		"locations": []any{map[string]any{"path": dir}},
		"_meta":     map[string]any{"spbridge": map[string]any{"trust": map[string]any{"folder": dir, "files": files}}}}
}

// TrustOptions are the trust question's options.
func TrustOptions() []any {
	return []any{
		map[string]any{"optionId": TrustAlways, "name": "Trust this folder", "kind": "allow_always"},
		map[string]any{"optionId": TrustOnce, "name": "Trust it for this session", "kind": "allow_once"},
		map[string]any{"optionId": TrustNotNow, "name": "Not now", "kind": "reject_once"},
		map[string]any{"optionId": TrustNever, "name": "Never trust this folder", "kind": "reject_always"},
	}
}
