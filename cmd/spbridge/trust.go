package main

import (
	"context"
	"fmt"

	"spbridge/internal/clis"
	"spbridge/internal/statedir"
	"spbridge/internal/trust"
)

// trustCommands returns the subcommands of "spbridge trust".
func trustCommands() []command {
	return []command{
		{"list", "list the folders trusted, and those refused", runTrustList},
		{"add", "trust a folder's own agent configuration", runTrustAdd},
		{"revoke", "forget spbridge's answer for a folder", runTrustRevoke},
	}
}

// trustAbout says what trusting a folder means, for the help texts.
const trustAbout = "A folder's own Claude Code configuration (.claude/settings.json and\n" +
	".claude/settings.local.json there: hooks, env, permission mode; its commands,\n" +
	"skills and agents; the CLAUDE.md and .mcp.json there or above: instructions,\n" +
	"MCP servers), and its Codex configuration (a .codex folder), act only once\n" +
	"you trust the folder: until then spbridge runs the CLI with your own\n" +
	"configuration only, asks the first time a session opens there (the editor's\n" +
	"permission request, run's question), and says once what it left out. A\n" +
	"folder Claude Code or Codex already trusts (its own record) counts as\n" +
	"trusted for that CLI; spbridge never writes their files. Answers are kept in\n" +
	"the state folder's trust.json and hold for both CLIs."

func runTrust(ctx context.Context, st stdio, args []string) error {
	return runGroup(ctx, st, args, "trust", "Show, give and take back the trust of folders.\n\n"+trustAbout, trustCommands())
}

func runTrustList(_ context.Context, st stdio, args []string) error {
	f := newFlagSet("trust list", "",
		"List the folders whose own configuration may act: those you trusted\n"+
			"(spbridge's answers first), those you told spbridge never to trust, then those\n"+
			"Claude Code's or Codex's own record trusts (each covers the folders below\n"+
			"it). One line a folder: trusted or never, the folder, who said so.")
	if done, err := f.parse(args, st.out); done || err != nil {
		return err
	}
	if err := f.noArgs(); err != nil {
		return err
	}
	list, err := trust.List(nil, clis.Trust())
	if err != nil {
		return err
	}
	if len(list) == 0 {
		fmt.Fprintln(st.out, "no folder is trusted")
		return nil
	}
	for _, s := range list {
		word := "trusted"
		if s.Refused {
			word = "never"
		}
		fmt.Fprintf(st.out, "%-7s  %s  (%s)\n", word, s.Dir, trustSource(s))
	}
	return nil
}

// trustSource says who trusts or refused a folder, and where.
func trustSource(s trust.Status) string {
	if s.By == trust.BySpbridge {
		return "spbridge"
	}
	return s.By + "'s own record, " + s.Record
}

func runTrustAdd(_ context.Context, st stdio, args []string) error {
	f := newFlagSet("trust add", "FOLDER [--never]",
		"Trust FOLDER: its own configuration acts from the next session that opens\n"+
			"there (a session open now keeps what it started with). With --never, keep\n"+
			"the opposite answer: FOLDER is never trusted and never asked about, whatever\n"+
			"Claude Code's or Codex's own record says.")
	never := f.Bool("never", false, "never trust FOLDER, and never ask")
	if done, err := f.parse(args, st.out); done || err != nil {
		return err
	}
	if f.NArg() != 1 {
		return usagef(f.cmd, "trust add needs one folder")
	}
	dir := f.Arg(0)
	if err := checkDir(dir); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	state, err := statedir.Dir()
	if err != nil {
		return err
	}
	if err := trust.Set(state, dir, !*never); err != nil {
		return err
	}
	key, _ := trust.Key(dir)
	if *never {
		fmt.Fprintf(st.out, "never trusting %s\n", key)
	} else {
		fmt.Fprintf(st.out, "trusted %s\n", key)
	}
	return nil
}

func runTrustRevoke(_ context.Context, st stdio, args []string) error {
	f := newFlagSet("trust revoke", "FOLDER",
		"Forget spbridge's answer for FOLDER (trusted or never): the next session\n"+
			"there asks again. A folder Claude Code or Codex itself trusts stays trusted\n"+
			"(spbridge never writes their files): `spbridge trust add --never FOLDER`\n"+
			"refuses it whatever they say.")
	if done, err := f.parse(args, st.out); done || err != nil {
		return err
	}
	if f.NArg() != 1 {
		return usagef(f.cmd, "trust revoke needs one folder")
	}
	dir := f.Arg(0)
	state, err := statedir.Dir()
	if err != nil {
		return err
	}
	found, err := trust.Remove(state, dir)
	if err != nil {
		return err
	}
	key, _ := trust.Key(dir)
	if !found {
		fmt.Fprintf(st.out, "spbridge had no answer for %s\n", key)
	} else {
		fmt.Fprintf(st.out, "forgot the answer for %s\n", key)
	}
	if s := trust.Check(dir, nil, clis.Trust()); s.Trusted {
		fmt.Fprintf(st.out, "%s is still trusted by %s (spbridge never writes it); to refuse it: spbridge trust add --never %s\n", key, trustSource(s), key)
	}
	return nil
}
