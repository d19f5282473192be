package main

import (
	"context"
	"errors"
	"fmt"

	"spbridge/internal/backend"
	"spbridge/internal/canonjson"
	"spbridge/internal/clis"
)

// authCommands returns the subcommands of "spbridge auth".
func authCommands() []command {
	return []command{
		{"status", "say whether claude and codex are logged in", runAuthStatus},
		{"logout", "log out of claude and codex", runAuthLogout},
	}
}

// logout logs the CLI name out (claude auth logout, codex logout).
func logout(ctx context.Context, name string) error {
	cli, ok := clis.Lookup(name)
	if !ok {
		return fmt.Errorf("unknown backend %q (want %s)", name, clis.Choices())
	}
	return cli.Logout(ctx)
}

func runAuthLogout(ctx context.Context, st stdio, args []string) error {
	f := newFlagSet("auth logout", "[--backend claude|codex]",
		"Log out of each CLI (claude auth logout, codex logout): the CLI forgets the\n"+
			"log-in it stored, for every program that uses it, not only spbridge. A CLI\n"+
			"that is not installed is skipped; one logged out already stays so.")
	backend := f.String("backend", "", "only this CLI: claude or codex")
	backends, done, err := authBackends(f, args, st, backend)
	if done || err != nil {
		return err
	}
	var failed error
	for _, name := range backends {
		switch err := logout(ctx, name); {
		case err == nil:
			fmt.Fprintf(st.out, "%s: logged out\n", name)
		case *backend == "" && notInstalled(err):
			fmt.Fprintf(st.out, "%s: not installed\n", name)
		default:
			fmt.Fprintf(st.err, "%s: %v\n", name, err)
			failed = err
		}
	}
	return failed
}

// notInstalled reports whether err says a CLI is not installed.
func notInstalled(err error) bool {
	return errors.Is(err, backend.ErrNoProgram)
}

func runAuth(ctx context.Context, st stdio, args []string) error {
	return runGroup(ctx, st, args, "auth",
		"Check the CLIs' log-in, or log out of them. To log in, use spbridge login.", authCommands())
}

// notLoggedIn is the error of auth status when a CLI is not logged in.
type notLoggedIn struct{}

func (notLoggedIn) Error() string { return "not logged in" }

func runAuthStatus(ctx context.Context, st stdio, args []string) error {
	f := newFlagSet("auth status", "[--backend claude|codex] [--json]",
		"Ask each CLI (claude auth status, codex login status) whether it is logged\n"+
			"in, and how, never printing a secret. Exit 0 when every CLI asked is\n"+
			"logged in, 1 otherwise.")
	backend := f.String("backend", "", "only this CLI: claude or codex")
	asJSON := f.Bool("json", false, "one JSON object a line")
	backends, done, err := authBackends(f, args, st, backend)
	if done || err != nil {
		return err
	}
	all := true
	for _, name := range backends {
		var problem string
		cli, _ := clis.Lookup(name) // authBackends knows it
		s, err := cli.AuthStatus(ctx)
		loggedIn, method, source := s.LoggedIn, s.Method, s.Source
		if err != nil {
			problem = err.Error()
		}
		all = all && loggedIn
		if *asJSON {
			v := map[string]any{"backend": name, "loggedIn": loggedIn}
			if method != "" {
				v["method"] = method
			}
			if source != "" {
				v["source"] = source
			}
			if problem != "" {
				v["error"] = problem
			}
			line, _ := canonjson.EncodeCompact(v)
			fmt.Fprintf(st.out, "%s\n", line)
			continue
		}
		switch {
		case problem != "":
			fmt.Fprintf(st.out, "%s: unknown (%s)\n", name, problem)
		case loggedIn:
			how := method
			if source != "" {
				how += " from " + source
			}
			if how != "" {
				how = " (" + how + ")"
			}
			fmt.Fprintf(st.out, "%s: logged in%s\n", name, how)
		case source != "" && method == "api_key":
			fmt.Fprintf(st.out, "%s: not logged in: the environment variable %s (its model provider's env_key) is not set; set it, or log in with spbridge login --backend %s\n", name, source, name)
		default:
			fmt.Fprintf(st.out, "%s: not logged in; log in with spbridge login --backend %s\n", name, name)
		}
	}
	if !all {
		return notLoggedIn{}
	}
	return nil
}

// authBackends parses an auth command's arguments and returns the CLIs
// its --backend names (both when it names none); done is set when the
// arguments asked for help only.
func authBackends(f *flagSet, args []string, st stdio, backend *string) (backends []string, done bool, err error) {
	if done, err := f.parse(args, st.out); done || err != nil {
		return nil, done, err
	}
	if err := f.noArgs(); err != nil {
		return nil, false, err
	}
	if *backend == "" {
		return clis.Names(), false, nil
	}
	if _, ok := clis.Lookup(*backend); ok {
		return []string{*backend}, false, nil
	}
	return nil, false, usagef(f.cmd, "unknown backend %q (want %s)", *backend, clis.Choices())
}
