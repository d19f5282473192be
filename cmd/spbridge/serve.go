package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"spbridge/internal/acp"
	"spbridge/internal/audit"
	"spbridge/internal/backend"
	"spbridge/internal/cliproc"
	"spbridge/internal/clis"
	"spbridge/internal/gcpace"
	"spbridge/internal/history"
	"spbridge/internal/modelcache"
	"spbridge/internal/secretfile"
	"spbridge/internal/sessionindex"
)

func runServe(ctx context.Context, st stdio, args []string) error {
	f := newFlagSet("serve", "[--backend claude|codex] [--codex-transport app-server|exec] [--no-audit] [--login claude|codex]",
		"Speak the Agent Client Protocol (version 1) on standard input and output:\n"+
			"JSON-RPC 2.0, one message a line, so an editor can use spbridge as its\n"+
			"agent. Each session is one document package (named in session/new's\n"+
			"_meta.spbridge) and its own CLI; an editor that sends no _meta gets a\n"+
			"package of its own for each session under the state folder, which\n"+
			"session/load opens again by its id. Logs go to standard error. Closing\n"+
			"standard input, or SIGINT or SIGTERM, ends every CLI and saves every\n"+
			"conversation that changed; so does a client that goes away (standard\n"+
			"output closed). Once serve is ending, output the client does not take\n"+
			"within 1 s is dropped. With --login, it runs that CLI's log-in\n"+
			"instead (as `spbridge login --backend NAME` does): an editor's terminal\n"+
			"log-in appends it to the command it starts spbridge with.")
	noAudit := f.Bool("no-audit", false, "write no audit records")
	ckpt := addCheckpointFlags(f)
	backendName := f.String("backend", clis.Default(), "the backend of sessions that name none: "+clis.Choices())
	own := addCLIFlags(f, true, false)
	idle := f.Duration("idle-timeout", backend.DefaultIdleTimeout, "end a turn when its CLI prints nothing for this long")
	sleep := addSleepFlags(f)
	login := f.String("login", "", "run this CLI's log-in (claude or codex) instead of serving")
	if done, err := f.parse(args, st.out); done || err != nil {
		return err
	}
	if err := f.noArgs(); err != nil {
		return err
	}
	if *login != "" {
		return runLogin(ctx, st, []string{"--backend", *login})
	}
	if err := checkBackend(f, *backendName, own); err != nil {
		return err
	}
	cliIdle, maxLive, err := sleep.options(os.Getenv)
	if err != nil {
		return usagef(f.cmd, "%v", err)
	}
	// From here on a client that went away ends serve cleanly, whatever
	// it logs first.
	catchSIGPIPE()
	// Someone who typed `spbridge serve` in a terminal learns what the
	// silence means; an editor (a pipe) is told nothing.
	if in, ok := st.in.(*os.File); ok && isTerminal(in) {
		fmt.Fprint(st.err, serveTerminalNote)
	}
	state, err := audit.StateDir()
	if err != nil {
		return err
	}
	ckptDir, ckptPolicy, err := ckpt.options(state)
	if err != nil {
		return err
	}
	paceGC()
	// Logs never wait for an editor that does not read them.
	logs := newLogWriter(st.err)
	defer logs.Close(time.Second)
	cfg := acp.Config{
		Version:        versionString(),
		DefaultBackend: *backendName,
		SessionsDir:    filepath.Join(state, "sessions"),
		RecoveryDir:    filepath.Join(state, "recovery"),
		Index:          sessionindex.New(state),
		History:        &history.Options{Stores: clis.Stores(), Cache: history.NewHeadCache(state)},
		Log:            log.New(logs, "spbridge: ", log.LstdFlags),
		Backend:        backend.Options{IdleTimeout: *idle},
		Own:            own.all(),
		CheckpointDir:  ckptDir,
		Checkpoints:    ckptPolicy,
		CLIIdle:        cliIdle,
		MaxLiveCLIs:    maxLive,
	}
	// The files with secrets (the MCP servers given to claude) that a
	// spbridge killed before its CLI read them left behind.
	if _, err := secretfile.Sweep(state); err != nil {
		cfg.Log.Print(err)
	}
	if !*noAudit {
		cfg.AuditDir = state
	}
	cfg.Models = modelcache.New(state)
	cfg.AuthStatus = func(ctx context.Context, name string) (bool, error) {
		cli, ok := clis.Lookup(name)
		if !ok {
			return false, fmt.Errorf("unknown backend %s", name)
		}
		st, err := cli.AuthStatus(ctx)
		return st.LoggedIn, err
	}
	cfg.Logout = func(ctx context.Context) error {
		for _, cli := range clis.All {
			if err := cli.Logout(ctx); err != nil && !notInstalled(err) {
				return err
			}
		}
		return nil
	}
	out := st.out
	if f, ok := st.out.(*os.File); ok {
		// A burst of updates goes out without waiting for the editor to
		// read each 64 KiB of it.
		cliproc.GrowPipe(f)
		var restore func()
		out, restore = pollableOutput(f)
		defer restore()
	}
	srv := acp.NewServer(out, cfg)
	start := time.Now()
	err = srv.Serve(ctx, st.in)
	cfg.Log.Printf("served for %v", time.Since(start).Round(time.Millisecond))
	return err
}

// serveTerminalNote is what serve says, once, when its standard input is
// a terminal: nobody types JSON-RPC by hand.
const serveTerminalNote = "spbridge serve: waiting for an editor on standard input (Agent Client Protocol, JSON-RPC, one message a line).\n" +
	"Editors start it themselves; see `spbridge help editors`, or try a turn with `spbridge run`. Ctrl-D or Ctrl-C ends it.\n"

// gcHeadroom is how much memory serve, run and import let grow over their
// live heap before the garbage collector runs (internal/gcpace): each
// holds a conversation whole (serve each open one), and Go's default (a
// collection when the heap doubles) would let it peak near twice that. A
// GOGC or GOMEMLIMIT the user set is left alone.
const gcHeadroom = 16 << 20

// noGCPacing is set by the tests, which run commands in their own process
// beside tests of how the collector is paced.
var noGCPacing bool

func paceGC() {
	if !noGCPacing && os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		gcpace.Start(gcHeadroom)
	}
}
