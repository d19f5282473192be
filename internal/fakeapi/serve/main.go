// Command serve runs the fake model APIs as a process, for scripts that
// drive the real CLIs by hand (scripts/conformance):
//
//	go run ./internal/fakeapi/serve -dir DIR
//
// It starts the fake Anthropic Messages API and the fake OpenAI Responses
// API on 127.0.0.1 (ports the system chooses), each answering "ok" to
// every turn and holding a turn that carries fakeapi.HoldText until it is
// cancelled, and writes into DIR (made if missing) the environment each
// CLI needs to talk to them, one NAME=value a line:
//
//	DIR/claude.env   for claude (home DIR/claude/home)
//	DIR/codex.env    for codex (home and CODEX_HOME under DIR/codex)
//
// Then it prints "ready" and serves until its standard input ends or it
// gets SIGINT or SIGTERM.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"spbridge/internal/fakeapi"
)

func main() {
	dir := flag.String("dir", "", "the folder for the CLIs' homes and the .env files (required)")
	flag.Parse()
	if *dir == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: go run ./internal/fakeapi/serve -dir DIR")
		os.Exit(2)
	}
	if err := run(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "fakeapi serve:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	anthropic, err := fakeapi.NewAnthropic(fakeapi.HoldReplies(64)...)
	if err != nil {
		return err
	}
	defer anthropic.Close()
	openai, err := fakeapi.NewOpenAI(fakeapi.HoldResponses(64)...)
	if err != nil {
		return err
	}
	defer openai.Close()

	home := filepath.Join(dir, "claude", "home")
	if err := os.MkdirAll(filepath.Join(home, "tmp"), 0o700); err != nil {
		return err
	}
	codexEnv, err := openai.WriteCodexHome(filepath.Join(dir, "codex"))
	if err != nil {
		return err
	}
	for name, env := range map[string][]string{"claude.env": anthropic.ClaudeEnv(home), "codex.env": codexEnv} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(env, "\n")+"\n"), 0o600); err != nil {
			return err
		}
	}
	fmt.Println("ready")

	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		done <- struct{}{}
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sig
		done <- struct{}{}
	}()
	<-done
	return nil
}
