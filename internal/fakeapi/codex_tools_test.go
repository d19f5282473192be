//go:build unix

package fakeapi

// Recordings of the real codex editing a file in two hunks, running a
// command whose output arrives while it runs, updating its plan and viewing
// an image, on both transports (app-server and exec --json), for the
// mappings of those items:
//
//	go test ./internal/fakeapi -run 'TestCodexTools' -record

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// codexToolNames returns the names of the tools a /v1/responses request
// offered.
func codexToolNames(body map[string]any) []string {
	var out []string
	tools, _ := body["tools"].([]any)
	for _, tl := range tools {
		if m, _ := tl.(map[string]any); m != nil {
			out = append(out, fmt.Sprint(m["name"]))
		}
	}
	return out
}

// twoHunkFile is the file the patch changes, and the patch: its lines 2
// and 11 change, far enough apart to be two hunks.
const twoHunkFile = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\neleven\ntwelve\n"

const twoHunkPatch = "*** Begin Patch\n*** Update File: numbers.txt\n@@\n one\n-two\n+TWO\n three\n@@\n ten\n-eleven\n+ELEVEN\n twelve\n*** End Patch\n"

const twoHunkAfter = "one\nTWO\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\nELEVEN\ntwelve\n"

// planTool turns on codex's update_plan tool, which 0.169.0 does not offer
// by default.
const planTool = "tools.update_plan.enabled=true"

// planCall is a call of codex's update_plan tool.
func planCall(id, explanation string, steps ...string) OutputItem {
	var plan []any
	for i := 0; i+1 < len(steps); i += 2 {
		plan = append(plan, map[string]any{"step": steps[i], "status": steps[i+1]})
	}
	return OutputItem{Type: "function_call", Name: "update_plan", CallID: id, Arguments: map[string]any{"explanation": explanation, "plan": plan}}
}

// planReplies is the model's script for the plan scenario.
func planReplies() []ResponsesReply {
	return []ResponsesReply{
		{Items: []OutputItem{planCall("call_plan_1", "First the plan.",
			"Read the code", "in_progress", "Write the fix", "pending", "Run the tests", "pending")}},
		{Items: []OutputItem{planCall("call_plan_2", "",
			"Read the code", "completed", "Write the fix", "completed", "Run the tests", "in_progress")}},
		{Items: []OutputItem{MessageItem("Planned.")}},
	}
}

// imageReplies is the model's script for the view_image scenario.
func imageReplies(path string) []ResponsesReply {
	return []ResponsesReply{
		{Items: []OutputItem{{Type: "function_call", Name: "view_image", CallID: "call_view_1", Arguments: map[string]any{"path": path}}}},
		{Items: []OutputItem{MessageItem("A red square.")}},
	}
}

func TestCodexToolsList(t *testing.T) {
	t.Parallel()
	srv := startOpenAI(t, ResponsesReply{Items: []OutputItem{MessageItem("ok")}})
	run := runCodex(t, srv, "", "", "hi", args("--sandbox", "workspace-write")...)
	if run.err != nil {
		t.Fatalf("codex: %v\n%s", run.err, run.dump())
	}
	names := codexToolNames(responsesBodies(t, srv)[0])
	t.Logf("exec tools: %v", names)
	for _, want := range []string{"exec_command", "apply_patch", "view_image"} {
		if !slices.Contains(names, want) {
			t.Errorf("exec offers no %s", want)
		}
	}
	if slices.Contains(names, "update_plan") {
		t.Errorf("exec offers update_plan by default")
	}
	run = runCodex(t, srv, "", "", "hi", args("--sandbox", "workspace-write", "-c", planTool)...)
	if run.err != nil {
		t.Fatalf("codex with %s: %v\n%s", planTool, run.err, run.dump())
	}
	if names := codexToolNames(responsesBodies(t, srv)[1]); !slices.Contains(names, "update_plan") {
		t.Errorf("with %s: tools %v", planTool, names)
	}
}

func TestCodexToolsExecFileChange(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	file := filepath.Join(work, "numbers.txt")
	if err := os.WriteFile(file, []byte(twoHunkFile), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startOpenAI(t,
		ResponsesReply{Items: []OutputItem{{Type: "custom_tool_call", Name: "apply_patch", CallID: "call_patch_1", Input: twoHunkPatch}}},
		ResponsesReply{Items: []OutputItem{MessageItem("Changed two lines.")}},
	)
	run := runCodex(t, srv, "", work, "capitalize two and eleven", args("--sandbox", "workspace-write")...)
	saveExecRecording(t, run, "file_change_two_hunks")
	if run.err != nil {
		t.Errorf("codex: %v\n%s", run.err, run.dump())
	}
	if b, _ := os.ReadFile(file); string(b) != twoHunkAfter {
		t.Errorf("numbers.txt = %q", b)
	}
	t.Logf("file_change items: %v", run.items("file_change"))
}

func TestCodexToolsExecPlan(t *testing.T) {
	t.Parallel()
	srv := startOpenAI(t, planReplies()...)
	run := runCodex(t, srv, "", "", "plan the fix", args("--sandbox", "workspace-write", "-c", planTool)...)
	saveExecRecording(t, run, "todo_list")
	if run.err != nil {
		t.Errorf("codex: %v\n%s", run.err, run.dump())
	}
	var types []string
	for _, l := range run.lines {
		it, _ := l["item"].(map[string]any)
		types = append(types, fmt.Sprint(l["type"], " ", it["type"]))
	}
	t.Logf("lines: %q", types)
	if len(run.items("todo_list")) == 0 {
		t.Errorf("no todo_list item:\n%s", run.dump())
	}
}

func TestCodexToolsExecViewImage(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	path := filepath.Join(work, "red.png")
	writePNG(t, path)
	srv := startOpenAI(t, imageReplies(path)...)
	run := runCodex(t, srv, "", work, "look at red.png", args("--sandbox", "workspace-write")...)
	saveExecRecording(t, run, "view_image")
	if run.err != nil {
		t.Errorf("codex: %v\n%s", run.err, run.dump())
	}
	t.Logf("stdout:\n%s", run.dump())
	bodies := responsesBodies(t, srv)
	if len(bodies) == 2 {
		outs := inputOfType(bodies[1], "function_call_output")
		t.Logf("view_image output sent to the model: %.400v", outs)
	}
}

func TestCodexToolsAppFileChange(t *testing.T) {
	t.Parallel()
	srv := startOpenAI(t,
		ResponsesReply{Items: []OutputItem{{Type: "custom_tool_call", Name: "apply_patch", CallID: "call_patch_1", Input: twoHunkPatch}}},
		ResponsesReply{Items: []OutputItem{MessageItem("Changed two lines.")}},
	)
	a := startAppServer(t, srv, "", "")
	file := filepath.Join(a.work, "numbers.txt")
	if err := os.WriteFile(file, []byte(twoHunkFile), 0o644); err != nil {
		t.Fatal(err)
	}
	a.initialize()
	thread := a.startThread()
	tr := a.runTurn(map[string]any{"threadId": thread, "input": textInput("capitalize two and eleven")}, nil)
	defer a.save("file_change_two_hunks")
	if b, _ := os.ReadFile(file); string(b) != twoHunkAfter {
		t.Errorf("numbers.txt = %q", b)
	}
	fcs := completedItems(tr.msgs, "fileChange")
	if len(fcs) != 1 || fcs[0]["status"] != "completed" {
		t.Errorf("fileChange items = %v", fcs)
	}
	t.Logf("fileChange: %v", fcs)
	t.Logf("turn/diff/updated: %v", notifications(tr.msgs, "turn/diff/updated"))
}

func TestCodexToolsAppPlan(t *testing.T) {
	t.Parallel()
	srv := startOpenAI(t, planReplies()...)
	a := startAppServer(t, srv, "", "", "-c", planTool)
	a.initialize()
	thread := a.startThread()
	tr := a.runTurn(map[string]any{"threadId": thread, "input": textInput("plan the fix")}, nil)
	defer a.save("plan_updates")
	plans := notifications(tr.msgs, "turn/plan/updated")
	if len(plans) != 2 {
		t.Errorf("%d turn/plan/updated, want 2: %v", len(plans), methods(tr.msgs))
	}
	t.Logf("plans: %v", plans)
	t.Logf("methods: %v", methods(tr.msgs))
}

func TestCodexToolsAppViewImage(t *testing.T) {
	t.Parallel()
	a0 := t.TempDir()
	path := filepath.Join(a0, "red.png")
	srv := startOpenAI(t, imageReplies(path)...)
	a := startAppServer(t, srv, "", a0)
	writePNG(t, path)
	a.initialize()
	thread := a.startThread()
	tr := a.runTurn(map[string]any{"threadId": thread, "input": textInput("look at red.png")}, nil)
	defer a.save("view_image")
	var items []any
	for _, p := range notifications(tr.msgs, "item/completed") {
		items = append(items, p["item"])
	}
	t.Logf("items: %v", items)
	if len(completedItems(tr.msgs, "imageView")) != 1 {
		t.Errorf("no imageView item: %v", methods(tr.msgs))
	}
}

func TestCodexToolsAppOutputDeltas(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	fifo := filepath.Join(work, "ticks.fifo")
	mkfifo(t, fifo)
	srv := startOpenAI(t,
		ResponsesReply{Items: []OutputItem{{Type: "function_call", Name: "exec_command", CallID: "call_slow_1", Arguments: map[string]any{
			"cmd": "echo start; while read -r line; do echo \"got $line\"; done < ticks.fifo; echo end", "yield_time_ms": 30000}}}},
		ResponsesReply{Items: []OutputItem{MessageItem("It printed three ticks.")}},
	)
	a := startAppServer(t, srv, "", work)
	a.initialize()
	thread := a.startThread()
	a.call("turn/start", map[string]any{"threadId": thread, "input": textInput("run the slow command")})
	a.until(func(m map[string]any) bool {
		it, _ := paramsOf(m)["item"].(map[string]any)
		return m["method"] == "item/started" && it["type"] == "commandExecution"
	})
	// Opening the pipe waits for the command to open its end.
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		tick := fmt.Sprintf("tick %d", i)
		if _, err := fmt.Fprintln(w, tick); err != nil {
			t.Fatal(err)
		}
		// Each line goes on once the server has streamed the one before.
		a.until(func(m map[string]any) bool {
			d, _ := paramsOf(m)["delta"].(string)
			return m["method"] == "item/commandExecution/outputDelta" && strings.Contains(d, tick)
		})
	}
	w.Close()
	done, _ := a.until(func(m map[string]any) bool { return m["method"] == "turn/completed" })
	a.stop()
	a.save("command_output_deltas")
	if tc, _ := paramsOf(done)["turn"].(map[string]any); tc["status"] != "completed" {
		t.Errorf("turn = %v", tc)
	}
}

// manyFilesPatch updates numbers.txt in two hunks, adds added.txt, deletes
// gone.txt and moves old/name.txt to new/name.txt with a change: every kind
// of change one apply_patch call makes.
const manyFilesPatch = "*** Begin Patch\n" +
	"*** Update File: numbers.txt\n@@\n one\n-two\n+TWO\n three\n@@\n ten\n-eleven\n+ELEVEN\n twelve\n" +
	"*** Add File: added.txt\n+first\n+second\n" +
	"*** Delete File: gone.txt\n" +
	"*** Update File: old/name.txt\n*** Move to: new/name.txt\n@@\n alpha\n-beta\n+BETA\n*** End Patch\n"

// TestCodexToolsExecPatchRollout records what codex exec prints for a
// patch that changes four files in every way, and codex's own log of the
// thread (its rollout file), which is where the patch text is.
func TestCodexToolsExecPatchRollout(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	files := map[string]string{"numbers.txt": twoHunkFile, "gone.txt": "bye\n", "old/name.txt": "alpha\nbeta\n"}
	for name, text := range files {
		p := filepath.Join(work, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := startOpenAI(t,
		ResponsesReply{Items: []OutputItem{{Type: "custom_tool_call", Name: "apply_patch", CallID: "call_patch_1", Input: manyFilesPatch}}},
		ResponsesReply{Items: []OutputItem{MessageItem("Changed four files.")}},
	)
	dir := t.TempDir()
	run := runCodex(t, srv, dir, work, "change the files", args("--sandbox", "workspace-write")...)
	saveExecRecording(t, run, "patch_rollout")
	if run.err != nil {
		t.Fatalf("codex: %v\n%s", run.err, run.dump())
	}
	want := map[string]string{"numbers.txt": twoHunkAfter, "added.txt": "first\nsecond\n", "new/name.txt": "alpha\nBETA\n"}
	for name, text := range want {
		if b, err := os.ReadFile(filepath.Join(work, name)); string(b) != text {
			t.Errorf("%s = %q, %v", name, b, err)
		}
	}
	for _, name := range []string{"gone.txt", "old/name.txt"} {
		if _, err := os.Stat(filepath.Join(work, name)); err == nil {
			t.Errorf("%s is still there", name)
		}
	}
	t.Logf("file_change items: %v", run.items("file_change"))
	logs, _ := filepath.Glob(filepath.Join(dir, "codex-home", "sessions", "*", "*", "*", "rollout-*.jsonl"))
	if len(logs) != 1 {
		t.Fatalf("rollout files: %v", logs)
	}
	data, err := os.ReadFile(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"apply_patch"`) || !strings.Contains(string(data), "*** Move to: new/name.txt") {
		t.Errorf("the rollout has no apply_patch call with the patch:\n%s", data)
	}
	if *record {
		writeTestdata(t, filepath.Join("codex", "exec", "patch_rollout.rollout.jsonl"), rewritePaths(data, run.dir, run.work))
	}
}
