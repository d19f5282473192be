package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"spbridge/internal/fakeapi"
)

// editorConfig is what one editor configuration in the README starts: a
// program, its arguments and the environment it adds.
type editorConfig struct {
	editor  string
	command string
	args    []string
	env     map[string]string
}

// readmeBlocks returns the fenced code blocks of a document's section
// "### heading", by their language tag.
func readmeBlocks(t *testing.T, readme, heading string) map[string][]string {
	t.Helper()
	start := strings.Index(readme, "\n### "+heading+"\n")
	if start < 0 {
		t.Fatalf("the document has no section %q", heading)
	}
	section := readme[start+1:]
	if end := strings.Index(section[4:], "\n## "); end >= 0 {
		section = section[:end+4]
	}
	if end := strings.Index(section[4:], "\n### "); end >= 0 {
		section = section[:end+4]
	}
	blocks := map[string][]string{}
	for _, m := range regexp.MustCompile("(?s)```([a-z]+)\n(.*?)```").FindAllStringSubmatch(section, -1) {
		blocks[m[1]] = append(blocks[m[1]], m[2])
	}
	return blocks
}

// jsonAgentServers reads an "agent_servers" JSON configuration (Zed's
// settings.json, JetBrains' acp.json).
func jsonAgentServers(t *testing.T, editor, block string, wantType bool) []editorConfig {
	t.Helper()
	var doc struct {
		AgentServers map[string]struct {
			Type    *string           `json:"type"`
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"agent_servers"`
	}
	dec := json.NewDecoder(strings.NewReader(block))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("%s: the README's configuration is not valid: %v", editor, err)
	}
	var out []editorConfig
	for name, s := range doc.AgentServers {
		if wantType && (s.Type == nil || *s.Type != "custom") {
			t.Errorf("%s %q: a custom agent needs \"type\": \"custom\"", editor, name)
		}
		if !wantType && s.Type != nil {
			t.Errorf("%s %q: no \"type\" field in this format", editor, name)
		}
		out = append(out, editorConfig{editor: editor + " " + name, command: s.Command, args: s.Args, env: s.Env})
	}
	if len(out) == 0 {
		t.Fatalf("%s: no agent_servers", editor)
	}
	return out
}

var (
	quoted  = regexp.MustCompile(`"([^"]*)"`)
	luaCmds = regexp.MustCompile(`(?m)^\s*(\w+) = \{ ("[^}]*") \},$`)
	luaEnv  = regexp.MustCompile(`env = \{([^}]*)\}`)
	luaPair = regexp.MustCompile(`(\w+) = "([^"]*)"`)
	elCmd   = regexp.MustCompile(`:command "([^"]*)"`)
	elArgs  = regexp.MustCompile(`:command-params '\(([^)]*)\)`)
	elEnv   = regexp.MustCompile(`(?s)\(agent-shell-make-environment-variables(.*?):inherit-env t\)`)
)

func quotedList(s string) []string {
	var out []string
	for _, m := range quoted.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// checkSyntax parses a configuration with the language's own tool when the
// machine has it.
func checkSyntax(t *testing.T, lang, block string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "config."+lang)
	os.WriteFile(file, []byte(block), 0o644)
	var cmd *exec.Cmd
	switch lang {
	case "lua":
		for _, luac := range []string{"luac", "luac5.4", "luac5.3"} {
			if p, err := exec.LookPath(luac); err == nil {
				cmd = exec.Command(p, "-p", file)
				break
			}
		}
	case "elisp":
		if p, err := exec.LookPath("emacs"); err == nil {
			// Read every form of the file: an unbalanced or unreadable one
			// fails.
			cmd = exec.Command(p, "--batch", "-Q", "--eval",
				`(with-temp-buffer (insert-file-contents (car command-line-args-left)) (goto-char (point-min))
				   (condition-case nil (while t (read (current-buffer))) (end-of-file (princ "ok"))))`, file)
		}
	}
	if cmd == nil {
		t.Logf("no parser for %s on this machine: its syntax is not checked", lang)
		return
	}
	if out, err := cmd.CombinedOutput(); err != nil || (lang == "elisp" && !strings.Contains(string(out), "ok")) {
		t.Errorf("the README's %s configuration does not parse: %v\n%s", lang, err, out)
	}
}

// TestEditorConfigs: each editor configuration docs/editors.md shows
// starts spbridge serve the way it says: the command is spbridge by an
// absolute path, the arguments choose the backend, the environment names
// the CLI; run with this machine's paths under the official ACP client
// (which does not know spbridge's _meta, as an editor does not), each
// answers a turn from its CLI. The README's Zed configuration is the same
// as docs/editors.md's.
func TestEditorConfigs(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../docs/editors.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	front, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var configs []editorConfig
	zed := readmeBlocks(t, readme, "Zed")["json"]
	if frontZed := readmeBlocks(t, string(front), "Zed")["json"]; len(frontZed) != 1 || len(zed) != 1 || frontZed[0] != zed[0] {
		t.Errorf("README.md's Zed configuration differs from docs/editors.md's:\n%q\n%q", frontZed, zed)
	}
	jetbrains := readmeBlocks(t, readme, "JetBrains IDEs (AI Assistant)")["json"]
	if len(zed) != 1 || len(jetbrains) != 1 {
		t.Fatalf("want one JSON block each for Zed and JetBrains, got %d and %d", len(zed), len(jetbrains))
	}
	configs = append(configs, jsonAgentServers(t, "Zed", zed[0], true)...)
	configs = append(configs, jsonAgentServers(t, "JetBrains", jetbrains[0], false)...)

	lua := readmeBlocks(t, readme, "Neovim (CodeCompanion)")["lua"]
	if len(lua) != 1 {
		t.Fatalf("want one Lua block for CodeCompanion, got %d", len(lua))
	}
	checkSyntax(t, "lua", lua[0])
	luaEnvMap := map[string]string{}
	if m := luaEnv.FindStringSubmatch(lua[0]); m != nil {
		for _, p := range luaPair.FindAllStringSubmatch(m[1], -1) {
			luaEnvMap[p[1]] = p[2]
		}
	}
	cmds := luaCmds.FindAllStringSubmatch(lua[0], -1)
	if len(cmds) == 0 {
		t.Fatal("CodeCompanion: no commands in the README's configuration")
	}
	for _, m := range cmds {
		argv := quotedList(m[2])
		configs = append(configs, editorConfig{editor: "CodeCompanion " + m[1], command: argv[0], args: argv[1:], env: luaEnvMap})
	}

	el := readmeBlocks(t, readme, "Emacs (agent-shell)")["elisp"]
	if len(el) != 1 {
		t.Fatalf("want one Emacs Lisp block for agent-shell, got %d", len(el))
	}
	checkSyntax(t, "elisp", el[0])
	cmd, args, env := elCmd.FindStringSubmatch(el[0]), elArgs.FindStringSubmatch(el[0]), elEnv.FindStringSubmatch(el[0])
	if cmd == nil || args == nil || env == nil {
		t.Fatal("agent-shell: command, parameters or environment not found in the README's configuration")
	}
	elEnvMap := map[string]string{}
	if kv := quotedList(env[1]); len(kv)%2 == 0 {
		for i := 0; i < len(kv); i += 2 {
			elEnvMap[kv[i]] = kv[i+1]
		}
	}
	configs = append(configs, editorConfig{editor: "agent-shell", command: cmd[1], args: quotedList(args[1]), env: elEnvMap})

	for _, c := range configs {
		t.Run(strings.ReplaceAll(c.editor, " ", "_"), func(t *testing.T) {
			t.Parallel() // each its own spbridge, CLI, fake API and folders
			if !filepath.IsAbs(c.command) || filepath.Base(c.command) != "spbridge" {
				t.Errorf("command %q: spbridge by its absolute path", c.command)
			}
			if len(c.args) == 0 || c.args[0] != "serve" {
				t.Fatalf("args %q do not run spbridge serve", c.args)
			}
			backend := "claude"
			if strings.Join(c.args, " ") == "serve --backend codex" {
				backend = "codex"
			} else if len(c.args) != 1 {
				t.Fatalf("args %q: not a configuration this test knows", c.args)
			}
			wantVar := map[string]string{"claude": "SPBRIDGE_CLAUDE", "codex": "SPBRIDGE_CODEX"}[backend]
			if c.env[wantVar] == "" {
				t.Errorf("env %v: no %s for the %s backend", c.env, wantVar, backend)
			}
			for k, v := range c.env {
				if (k != "SPBRIDGE_CLAUDE" && k != "SPBRIDGE_CODEX") || !filepath.IsAbs(v) {
					t.Errorf("env %s=%s: want SPBRIDGE_CLAUDE or SPBRIDGE_CODEX, an absolute path", k, v)
				}
			}
			runEditorConfig(t, c, backend)
		})
	}
}

// runEditorConfig starts spbridge with c's arguments, and c's environment
// variable set to this machine's CLI, under the official ACP client, and
// runs one turn in a folder with no package of its own.
func runEditorConfig(t *testing.T, c editorConfig, backend string) {
	t.Helper()
	var env []string
	want := "Hello from the editor's agent."
	if backend == "claude" {
		e := newE2E(t, fakeapi.Reply{Blocks: []fakeapi.Block{{Text: want}}})
		env = e.env
	} else {
		e, _ := newCodexE2E(t, fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem(want)}})
		env = e.env
	}
	envMap := acpEnv(env)
	// The editor's environment has no PATH to the CLI: the variables the
	// configuration sets, given this machine's paths, are what find it
	// (null removes one the client would inherit from this test).
	cli := map[string]any{"SPBRIDGE_CLAUDE": envMap["SPBRIDGE_CLAUDE"], "SPBRIDGE_CODEX": envMap["SPBRIDGE_CODEX"]}
	envMap["SPBRIDGE_CLAUDE"], envMap["SPBRIDGE_CODEX"] = nil, nil
	for k := range c.env {
		envMap[k] = cli[k]
	}
	envMap["PATH"] = "/usr/bin:/bin"
	if backend == "codex" {
		// codex's launcher is a node script.
		if node, err := exec.LookPath("node"); err == nil {
			envMap["PATH"] = filepath.Dir(node) + ":/usr/bin:/bin"
		}
	}
	work := t.TempDir()
	events := runACPClient(t, map[string]any{
		"command": append([]string{spbridgeBin(t)}, c.args...), "env": envMap, "cwd": work,
		"steps": []any{
			map[string]any{"op": "initialize"},
			map[string]any{"op": "newSession", "cwd": work, "saveAs": "s1"},
			map[string]any{"op": "prompt", "session": "s1", "text": "hello"},
			map[string]any{"op": "closeStdin"},
		},
	})
	if r := response(t, events, 2); r["stopReason"] != "end_turn" {
		t.Errorf("prompt: %v", r)
	}
	if _, text := updatesOf(events); text != want {
		t.Errorf("the reply streamed as %q, want %q", text, want)
	}
}
