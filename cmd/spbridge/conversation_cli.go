package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"spbridge/internal/canonjson"
	"spbridge/internal/clis"
	"spbridge/internal/history"
	"spbridge/internal/statedir"
)

// runConversationListAll is "conversation list": with --cli the CLIs' own
// sessions, else the packages under a folder.
func runConversationListAll(ctx context.Context, st stdio, args []string) error {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--cli" || strings.HasPrefix(a, "--cli=") {
			return runConversationListCLI(ctx, st, args)
		}
	}
	return runConversationList(ctx, st, args)
}

func runConversationListCLI(_ context.Context, st stdio, args []string) error {
	f := newFlagSet("conversation list", "--cli [--cwd DIR] [--backend claude|codex] [--json]",
		"List the sessions Claude Code and the Codex CLI keep themselves (Claude Code's\n"+
			"in $CLAUDE_CONFIG_DIR, else ~/.claude; Codex's in $CODEX_HOME, else ~/.codex),\n"+
			"newest first, one a line: backend, id, when it last changed (UTC) and its\n"+
			"title (the CLI's own, else the first message). --cwd DIR lists only those\n"+
			"that ran in DIR. 'spbridge import ID PKG' brings one into a package. With\n"+
			"--json, one JSON object a line, with the folder and the file.")
	f.Bool("cli", false, "list the CLIs' own sessions")
	cwd := f.String("cwd", "", "only the sessions that ran in this `DIR`")
	backend := f.String("backend", "", "only this CLI's sessions: claude or codex")
	asJSON := f.Bool("json", false, "print one JSON object a line")
	if done, err := f.parse(args, st.out); done || err != nil {
		return err
	}
	if err := f.noArgs(); err != nil {
		return err
	}
	if _, ok := clis.Lookup(*backend); *backend != "" && !ok {
		return usagef(f.cmd, "--backend: %q is not %s", *backend, clis.Choices())
	}
	opts := history.Options{Stores: clis.Stores(), Backend: *backend, Cwd: *cwd}
	if state, err := statedir.Dir(); err == nil {
		opts.Cache = history.NewHeadCache(state) // what was read of each file, for the next listing
	}
	list, err := history.List(opts)
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, e := range list {
		updated := e.UpdatedAt.UTC().Format(time.RFC3339)
		if *asJSON {
			line, err := canonjson.EncodeCompact(map[string]any{"backend": e.Backend, "id": e.ID, "updated": updated,
				"title": e.Title, "cwd": e.Cwd, "path": e.Path, "size": json.Number(strconv.FormatInt(e.Size, 10))})
			if err != nil {
				return fmt.Errorf("encode session %s: %w", e.ID, err)
			}
			b.Write(line)
			b.WriteByte('\n')
			continue
		}
		b.WriteString(strings.Join([]string{e.Backend, e.ID, updated, e.Title}, "\t"))
		b.WriteByte('\n')
	}
	_, err = fmt.Fprint(st.out, b.String())
	return err
}
