package wire

import (
	"time"

	"spbridge/internal/catalog"
)

// SessionInfo is one session of session/list's answer: its id, folder,
// last change, title and additional folders, and spbridge's _meta
// (listMeta).
func SessionInfo(e catalog.Entry) map[string]any {
	info := map[string]any{"sessionId": e.ID, "cwd": e.Cwd, "updatedAt": e.UpdatedAt.UTC().Format(time.RFC3339)}
	if e.Title != "" {
		info["title"] = e.Title
	}
	if len(e.Dirs) > 0 {
		info["additionalDirectories"] = e.Dirs
	}
	info["_meta"] = map[string]any{"spbridge": listMeta(e)}
	return info
}

// listMeta is an entry's _meta.spbridge: a package's path, the CLI
// session it was imported from and the one it last ran on (and how a
// terminal continues that one while that CLI still has it); a CLI's own
// session's CLI and id, and how a terminal continues it.
func listMeta(e catalog.Entry) map[string]any {
	meta := map[string]any{}
	if e.Package != "" {
		meta["package"] = e.Package
	}
	if e.From != nil {
		meta["backend"], meta["cliSession"] = e.From.CLI, e.From.ID
		if e.Package == "" {
			if c := e.From.Continue(); c != "" {
				meta["continueCommand"] = c
			}
		}
	}
	if c := e.LastRan; c != nil {
		last := map[string]any{"backend": c.CLI, "id": c.ID}
		if cmd := c.Continue(); cmd != "" {
			last["continueCommand"] = cmd
		}
		meta["lastCLISession"] = last
	}
	return meta
}
