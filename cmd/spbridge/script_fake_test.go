package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"spbridge/internal/restore"
)

// scriptClaude plays claude in stream-json mode for the test scripts
// (testdata/script, as the command fakeclaude): --version prints a version;
// else it answers each user message with "reply N", N counting the
// messages this process took, in the session it was told to --resume or
// in a new one (named by its process), and says in which folder and
// whether it resumed or was told the conversation so far. A message
// holding scriptEditWord has it write scriptEdited into main.go first.
const (
	scriptEditWord = "edit main.go"
	scriptEdited   = "package main // edited\n"
)

func scriptClaude() int {
	args := os.Args[1:]
	if slices.Contains(args, "--version") {
		fmt.Println("0.0.1 (fake Claude Code)")
		return 0
	}
	session, how := fmt.Sprintf("fake-%d", os.Getpid()), "a new session"
	if i := slices.Index(args, "--resume"); i >= 0 && i+1 < len(args) {
		session, how = args[i+1], "resumed"
	}
	f := newFakeStream()
	for n := 1; f.in.Scan(); {
		line := f.in.Text()
		var m struct{ Type string }
		if json.Unmarshal([]byte(line), &m) != nil || m.Type != "user" {
			continue
		}
		told := ""
		if strings.Contains(line, strings.TrimSpace(restore.Heading)) {
			told = ", told the conversation so far"
		}
		cwd, _ := os.Getwd()
		f.emit(map[string]any{"type": "system", "subtype": "init", "session_id": session, "model": "claude-sonnet-4-5", "cwd": cwd})
		if strings.Contains(line, scriptEditWord) {
			// An edit, made as the CLI makes one: the file written, the
			// tool's call and result told.
			id := fmt.Sprintf("toolu_%d", n)
			f.tool(fmt.Sprintf("t%d", n), id, "Write", map[string]any{"file_path": "main.go", "content": scriptEdited})
			if err := os.WriteFile("main.go", []byte(scriptEdited), 0o644); err != nil {
				f.result(id, err.Error(), true)
			} else {
				f.result(id, "The file main.go has been updated.", false)
			}
		}
		f.emit(map[string]any{"type": "assistant", "message": map[string]any{"id": fmt.Sprintf("m%d", n), "role": "assistant", "model": "claude-sonnet-4-5",
			"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("reply %d in %s, %s%s", n, cwd, how, told)}}}})
		f.emit(map[string]any{"type": "result", "subtype": "success", "is_error": false, "session_id": session, "total_cost_usd": 0.001,
			"usage": map[string]any{"input_tokens": 10, "output_tokens": 5}})
		n++
	}
	return 0
}
