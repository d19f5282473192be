package codex

import (
	"context"

	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
	"spbridge/internal/trust"
)

// Name is the Codex CLI's name as --backend, a session's _meta and the
// audit log say it.
const Name = "codex"

// The Codex CLI's own settings (backend.Setting).
const (
	SettingTransport = "transport" // TransportAppServer or TransportExec
	SettingHome      = "home"      // its CODEX_HOME, "" for the user's own
)

// Plugin is the Codex CLI's row in spbridge's table of CLIs.
var Plugin = backend.Plugin{
	Name: Name, Display: "the Codex CLI", Provider: Provider,
	Settings: []backend.Setting{
		{Name: SettingTransport, Usage: "how codex is driven: app-server or exec", Values: []string{TransportAppServer, TransportExec},
			Default: TransportAppServer, Serve: true},
		{Name: SettingHome, Usage: "the `DIR` codex runs with as CODEX_HOME (default: your own)"},
	},
	New: func(opts backend.Options, own map[string]string) backend.Backend {
		return New(Options{Options: opts, CodexHome: own[SettingHome], Transport: own[SettingTransport]})
	},
	Program:    func() (string, error) { return Program("") },
	LoginArgs:  LoginArgs,
	AuthStatus: func(ctx context.Context) (backend.AuthStatus, error) { return AuthStatus(ctx, "", nil) },
	Logout:     func(ctx context.Context) error { return Logout(ctx, "", nil) },
	StreamSettings: []backend.Setting{
		{Name: SettingTransport, Usage: "the codex stream's transport: exec (codex exec --json) or app-server (what codex app-server wrote; a recorded session's {\"dir\",\"msg\"} lines are unwrapped)",
			Values: []string{TransportAppServer, TransportExec}, Default: TransportExec},
	},
	Mapper: func(newID itemmap.IDFunc, own map[string]string) itemmap.Mapper {
		if own[SettingTransport] == TransportAppServer {
			return itemmap.NewCodexApp(newID)
		}
		return itemmap.NewCodex(newID)
	},
	Models:  []string{"default"},
	History: History,
	// The failure the mappers give a 401, or the provider's key variable
	// unset.
	NotLoggedIn: itemmap.CodexLoginFailure,
	Continue:    func(id string) string { return "codex resume " + id },
	Trust: trust.CLI{Name: Name, Who: "Codex", Record: trustRecord, Files: folderFiles,
		LeftOut: "config, hooks, MCP servers, exec policies", RunsWith: "Codex runs with your own configuration only"},
	Tools: backend.Tools{
		Commands: []string{itemmap.CodexShellTool},
		Patches:  []string{itemmap.CodexPatchTool},
		// Codex runs commands and patches in its sandbox without asking
		// (its approval policy is on-request in every mode that asks):
		// it asks about a command the model wants run outside
		// (sandbox_permissions require_escalated, network access) or
		// that its policy finds dangerous (which then runs inside:
		// Approval.Escalated tells them apart), and about a patch only
		// when it writes outside the sandbox's writable folders.
		AskedOutside: []string{itemmap.CodexPatchTool},
		SummaryFiles: []string{"view_image"},
		Kinds: map[string]string{
			// The model's own names (the history on app-server), the
			// panel's, and exec's item types.
			"exec_command": itemmap.KindExecute, itemmap.CodexShellTool: itemmap.KindExecute, "command_execution": itemmap.KindExecute,
			"view_image":           itemmap.KindRead,
			itemmap.CodexPatchTool: itemmap.KindEdit, "file_change": itemmap.KindEdit,
			"web_search": itemmap.KindFetch,
		},
	},
}

// exactCommand reports whether g covers one exact shell command (in its
// folder, and outside the sandbox only when Escalated) and nothing else:
// what codex's acceptForSession means.
func exactCommand(g backend.Grant) bool {
	return g.Exact != "" && g.Tool == itemmap.CodexShellTool
}
