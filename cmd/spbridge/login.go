package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"spbridge/internal/cliproc"
	"spbridge/internal/clis"
)

// exitStatusError carries a program's exit status out as spbridge's own.
type exitStatusError struct{ code int }

func (e *exitStatusError) Error() string {
	return fmt.Sprintf("the log-in ended with status %d", e.code)
}

func runLogin(ctx context.Context, st stdio, args []string) error {
	f := newFlagSet("login", "--backend claude|codex [--size ROWSxCOLS]",
		"Log in to a CLI with its own log-in flow (claude auth login, codex login),\n"+
			"run inside a pseudo-terminal connected to this one: keys and output pass\n"+
			"through, the window size follows, and the terminal is restored however it\n"+
			"ends. Without a terminal (pipes from an editor), the CLI still gets one,\n"+
			"sized by --size. The CLI's exit status is spbridge's.")
	backend := f.String("backend", "", "the CLI to log in to: claude or codex")
	size := f.String("size", "24x80", "the terminal's `ROWSxCOLS` when standard input is not a terminal")
	if done, err := f.parse(args, st.out); done || err != nil {
		return err
	}
	if err := f.noArgs(); err != nil {
		return err
	}
	rows, cols, err := parseSize(*size)
	if err != nil {
		return usagef(f.cmd, "--size: %v", err)
	}
	if *backend == "" {
		return usagef(f.cmd, "login needs --backend claude or --backend codex")
	}
	cli, ok := clis.Lookup(*backend)
	if !ok {
		return usagef(f.cmd, "unknown backend %q (want %s)", *backend, clis.Choices())
	}
	path, err := cli.Program()
	loginArgs := cli.LoginArgs
	if err != nil {
		return err
	}
	in := st.in
	if st.in == nil {
		in = os.Stdin
	}
	code, err := cliproc.RunPTY(ctx, cliproc.PTYConfig{Path: path, Args: loginArgs, Rows: rows, Cols: cols}, in, st.out)
	if err != nil {
		return err
	}
	if code != 0 {
		return &exitStatusError{code}
	}
	return nil
}

// parseSize reads ROWSxCOLS.
func parseSize(s string) (uint16, uint16, error) {
	r, c, ok := strings.Cut(strings.ToLower(s), "x")
	rows, err1 := strconv.ParseUint(r, 10, 16)
	cols, err2 := strconv.ParseUint(c, 10, 16)
	if !ok || err1 != nil || err2 != nil || rows == 0 || cols == 0 {
		return 0, 0, errors.New("want ROWSxCOLS, such as 24x80")
	}
	return uint16(rows), uint16(cols), nil
}
