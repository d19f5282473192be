package claude

import (
	"context"

	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
	"spbridge/internal/trust"
)

// Name is Claude Code's name as --backend, a session's _meta and the
// audit log say it.
const Name = "claude"

// Plugin is Claude Code's row in spbridge's table of CLIs.
var Plugin = backend.Plugin{
	Name: Name, Display: "Claude Code", Provider: Provider,
	New:        func(opts backend.Options, _ map[string]string) backend.Backend { return New(opts) },
	Program:    func() (string, error) { return Program("") },
	LoginArgs:  LoginArgs,
	AuthStatus: func(ctx context.Context) (backend.AuthStatus, error) { return AuthStatus(ctx, "", nil) },
	Logout:     func(ctx context.Context) error { return Logout(ctx, "", nil) },
	Mapper:     func(newID itemmap.IDFunc, _ map[string]string) itemmap.Mapper { return itemmap.NewClaude(newID) },
	Models:     []string{"default", "sonnet", "opus", "haiku"},
	// The failure the mapper gives a 401 or a refused key.
	NotLoggedIn: func(failure string) bool { return failure == itemmap.ClaudeNotLoggedIn },
	Continue:    func(id string) string { return "claude --resume " + id },
	Trust: trust.CLI{Name: Name, Who: "Claude Code", Record: trustRecord, Files: folderFiles,
		LeftOut: "hooks, MCP servers, environment, permission mode, instructions, commands", RunsWith: "Claude Code runs with your own settings only"},
	Tools: backend.Tools{
		Commands:     []string{"Bash", "Monitor", "PowerShell"},
		Edits:        []string{"Edit", "MultiEdit", "Write", "NotebookEdit"},
		Reads:        []string{"Read"},
		SummaryFiles: []string{"Read", "Write", "Edit", "MultiEdit", "NotebookEdit"},
		Kinds: map[string]string{
			"Bash": itemmap.KindExecute,
			"Read": itemmap.KindRead, "NotebookRead": itemmap.KindRead,
			"Write": itemmap.KindEdit, "Edit": itemmap.KindEdit, "MultiEdit": itemmap.KindEdit, "NotebookEdit": itemmap.KindEdit,
			"Grep": itemmap.KindSearch, "Glob": itemmap.KindSearch, "LS": itemmap.KindSearch,
			"WebFetch": itemmap.KindFetch, "WebSearch": itemmap.KindFetch,
			"Task": itemmap.KindThink, "Agent": itemmap.KindThink, "TodoWrite": itemmap.KindThink,
		},
	},
	History: History,
}
