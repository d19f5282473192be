package codex

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"spbridge/internal/backend"
	"spbridge/internal/trust"
)

// trustArgs tell codex whether the folder's own project configuration
// (.codex/config.toml, hooks, exec policies) may act: the folder it runs
// in and every folder above it, as one override of its projects table
// (projects={"/dir"={trust_level="…"}, …}; a dotted key would split the
// path at its dots), "trusted" when spbridge counts the folder as trusted
// (trust.Folder), else "untrusted". Codex 0.169.0 reads a project's
// configuration only when its trust_level says trusted, but its
// app-server marks the folder of a thread it starts as trusted in the
// user's config.toml, and so reads it, unless it is explicitly untrusted:
// with this override it writes nothing and reads nothing of an untrusted
// folder.
func trustArgs(dir string, trusted bool) []string {
	level := "untrusted"
	if trusted {
		level = "trusted"
	}
	var keys []string
	seen := map[string]bool{}
	for _, start := range []string{dir, keyOf(dir)} {
		for d := start; d != ""; {
			if !seen[d] {
				seen[d] = true
				keys = append(keys, tomlQuote(d)+`={trust_level="`+level+`"}`)
			}
			parent := filepath.Dir(d)
			if parent == d {
				break
			}
			d = parent
		}
	}
	return []string{"-c", "projects={" + strings.Join(keys, ",") + "}"}
}

// keyOf is dir as the trust store names it (links followed), or dir.
func keyOf(dir string) string {
	if k, err := trust.Key(dir); err == nil {
		return k
	}
	return dir
}

// tomlQuote quotes s as a TOML basic string.
func tomlQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// settleTrust asks, the first time in the session, whether to trust the
// folder (backend.FolderTrust); an app-server started with another trust
// (early, as the session opened, to list the models) is ended, and the
// turn starts another.
func (b *Backend) settleTrust(ctx context.Context, h backend.Host) {
	f := b.Opts.Folder
	backend.FolderTrust(ctx, f, Name, h, b.Opts.NewID)
	if b.app.proc != nil && !b.app.threaded && b.app.trusted != f.Trusted(Name) {
		b.appReap()
	}
}
