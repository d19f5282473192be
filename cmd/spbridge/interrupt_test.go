package main

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestInterruptsExitRules: a command that reads exits at once on the first
// signal, saying so; inside a write section the first signal only cancels
// the context (its cause says which signal) and a second one exits; serve
// and run (once it holds its package) never exit on a signal (they end
// their turns and save), however many come; a section asked for after a
// signal does not run.
func TestInterruptsExitRules(t *testing.T) {
	newIn := func(args ...string) (context.Context, *interrupts, *bytes.Buffer, *[]int) {
		var stderr bytes.Buffer
		var codes []int
		ctx, in := newInterrupts(args, &stderr, func(code int) { codes = append(codes, code) })
		return ctx, in, &stderr, &codes
	}

	ctx, in, stderr, codes := newIn("fsck", "PKG")
	in.signal(syscall.SIGTERM)
	if len(*codes) != 1 || (*codes)[0] != 143 || stderr.String() != "spbridge: terminated (SIGTERM)\n" || ctx.Err() == nil {
		t.Errorf("fsck, SIGTERM: exits %v, stderr %q, ctx %v", *codes, stderr, ctx.Err())
	}

	ctx, in, _, codes = newIn("import", "ID", "PKG")
	ran := false
	err := writing(ctx, func() error {
		ran = true
		in.signal(syscall.SIGINT)
		var se *signalError
		if len(*codes) != 0 || !errors.As(context.Cause(ctx), &se) || se.code() != 130 {
			t.Errorf("import, SIGINT in a write section: exits %v, cause %v", *codes, context.Cause(ctx))
		}
		in.signal(syscall.SIGINT)
		if len(*codes) != 1 || (*codes)[0] != 130 {
			t.Errorf("import, a second SIGINT in a write section: exits %v", *codes)
		}
		return context.Cause(ctx)
	})
	if !ran || exitCode(err) != 130 {
		t.Errorf("write section: ran %v, %v (exit %d)", ran, err, exitCode(err))
	}
	if err := writing(ctx, func() error { t.Error("a write section ran after the signal"); return nil }); exitCode(err) != 130 {
		t.Errorf("a write section after the signal: %v", err)
	}

	for _, cmd := range []string{"serve", "run"} {
		ctx, in, _, codes := newIn(cmd)
		if err := takeInterrupts(ctx); cmd == "run" && err != nil {
			t.Fatal(err)
		}
		in.signal(syscall.SIGINT)
		in.signal(syscall.SIGTERM)
		if len(*codes) != 0 || ctx.Err() == nil {
			t.Errorf("%s: exits %v, ctx %v", cmd, *codes, ctx.Err())
		}
	}
}

// TestWritersGiveUpAfterSignal: import and conversation new do not start
// writing once a signal came (here
// before they ran): the package is as it was, and the exit code and the
// message say which signal. (Before, each went on and wrote.)
func TestWritersGiveUpAfterSignal(t *testing.T) {
	t.Setenv("SPBRIDGE_STATE_DIR", t.TempDir())
	session := filepath.Join("..", "..", "internal", "claude", "testdata", "history", "claude", "projects", "-work-project", "ca0632fd-a8b0-4a1c-9271-caa77e5d4c40.jsonl")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&signalError{syscall.SIGTERM})
	runIn := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := run(ctx, args, strings.NewReader(""), &out, &errb)
		return code, errb.String()
	}

	pkg := newPackage(t)
	before := snapshotDir(t, pkg)
	if code, errOut := runIn("import", session, pkg); code != 143 || !strings.Contains(errOut, "terminated (SIGTERM); "+pkg+" is as it was") {
		t.Errorf("import: exit %d, %q", code, errOut)
	}
	if after := snapshotDir(t, pkg); !maps.Equal(before, after) {
		t.Errorf("import changed the package: %v", after)
	}

	if code, _, _ := runCmd(t, "import", session, pkg); code != 0 {
		t.Fatalf("import without a signal: exit %d", code)
	}
	before = snapshotDir(t, pkg)
	if code, errOut := runIn("conversation", "new", pkg, "--yes"); code != 143 || !strings.Contains(errOut, "terminated (SIGTERM)") {
		t.Errorf("conversation new: exit %d, %q", code, errOut)
	}
	if after := snapshotDir(t, pkg); !maps.Equal(before, after) {
		t.Errorf("conversation new changed the package")
	}
}
