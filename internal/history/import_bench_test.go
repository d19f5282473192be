package history_test

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"spbridge/internal/archive"
	"spbridge/internal/history"
)

// importBenchSize is the size of the session files BenchmarkImport makes.
const importBenchSize = 100 << 20

// jstr is s as a JSON string.
func jstr(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// benchText makes n bytes or so of text lines as a command's output, a
// file or a model's prose has them: words, paths, numbers, tabs, quotes,
// a terminal's colour escapes and some non-ASCII.
func benchText(r *rand.Rand, n int) string {
	words := []string{"func", "return", "internal/history/claude_import.go", "ok", "FAIL", "spbridge", "\t", "\"quoted\"",
		"--- PASS: TestImport (0.01s)", "\x1b[32mgreen\x1b[0m", "naïve", "→", "0x7ffd", "error:", "42", "import", "{", "}",
		"the", "conversation", "package", "session", "file", "line", "a", "of", "and", "to", "is"}
	var sb strings.Builder
	sb.Grow(n + 80)
	for sb.Len() < n {
		ln := 3 + r.IntN(12)
		for j := range ln {
			if j > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(words[r.IntN(len(words))])
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}

// benchPNG is a PNG of w×h pixels of noise (so that it does not compress),
// as a screenshot's size is.
func benchPNG(r *rand.Rand, w, h int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(r.IntN(256)), uint8(r.IntN(256)), uint8(r.IntN(256)), 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// writeClaudeBench writes a Claude Code session file of at least size
// bytes in Claude Code 2.1.328's format (as the recorded one in testdata):
// turns of a typed message (every 20th with a pasted screenshot), the
// CLI's bookkeeping (queue operations, attachments, API request logs,
// costs), thinking, a command with tens of KB of output (recorded twice,
// as the tool result and as toolUseResult), a file read (the file twice
// too), an edit (with the whole original file), every 20th turn a PNG
// read, and an answer.
func writeClaudeBench(b testing.TB, path string, size int) {
	b.Helper()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	r := rand.New(rand.NewPCG(1, 2))
	shot := base64.StdEncoding.EncodeToString(benchPNG(r, 200, 150))
	const sid = "7b0c3c52-7c3e-4a55-9f0e-3b1d6f0c2a11"
	tail := `"userType":"external","entrypoint":"cli","cwd":"/work/project","sessionId":"` + sid + `","version":"2.1.328","gitBranch":"main"}`
	uuid := func(turn, n int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012x", turn, n) }
	written := 0
	put := func(s string) {
		n, _ := w.WriteString(s)
		w.WriteByte('\n')
		written += n + 1
	}
	usage := func(out int) string {
		return fmt.Sprintf(`"usage":{"input_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,"output_tokens":%d,"service_tier":"standard"}`,
			3+r.IntN(10), 500+r.IntN(5000), 20000+r.IntN(100000), out)
	}
	for turn := 0; written < size; turn++ {
		prev := uuid(turn-1, 99)
		ts := fmt.Sprintf("2026-12-01T%02d:%02d:%02d.000Z", 8+turn/3600%12, turn/60%60, turn%60)
		prompt := fmt.Sprintf("Turn %d: %s", turn, strings.TrimSpace(benchText(r, 200)))
		put(`{"type":"queue-operation","operation":"enqueue","timestamp":"` + ts + `","sessionId":"` + sid + `","content":` + jstr(prompt) + `}`)
		put(`{"type":"queue-operation","operation":"dequeue","timestamp":"` + ts + `","sessionId":"` + sid + `"}`)
		content := jstr(prompt)
		if turn%20 == 7 {
			content = `[{"type":"text","text":` + jstr(prompt) + `},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + shot + `"}}]`
		}
		put(`{"parentUuid":"` + prev + `","isSidechain":false,"promptId":"` + uuid(turn, 0) + `","type":"user","message":{"role":"user","content":` + content + `},"uuid":"` + uuid(turn, 1) + `","timestamp":"` + ts + `","permissionMode":"default","promptSource":"cli","turnOrigin":"cli",` + tail)
		put(`{"parentUuid":"` + uuid(turn, 1) + `","isSidechain":false,"attachment":{"type":"date","date":"2026-12-01"},"type":"attachment","uuid":"` + uuid(turn, 2) + `","timestamp":"` + ts + `","rendered":[{"content":"<system-reminder>\nToday's date is 2026-12-01.\n</system-reminder>"}],"renderedRole":"system",` + tail)
		put(`{"type":"api-request","sessionId":"` + sid + `","id":"` + uuid(turn, 3) + `","timestamp":"` + ts + `","version":"2.1.328","querySource":"repl_main_thread","params":{"model":"claude-opus-5-5","betas":["claude-code-20250219","interleaved-thinking-2025-05-14"],"max_tokens":32000,"messages":` + fmt.Sprint(turn*8) + `,"system":` + jstr(benchText(r, 1500)) + `}}`)
		msg := func(n int, block, stop string, out int) {
			put(`{"parentUuid":"` + uuid(turn, n-1) + `","isSidechain":false,"message":{"id":"msg_` + uuid(turn, n/10) + `","type":"message","role":"assistant","model":"claude-opus-5-5","content":[` + block + `],"stop_reason":"` + stop + `","stop_sequence":null,` + usage(out) + `},"requestId":"req_` + uuid(turn, n) + `","type":"assistant","uuid":"` + uuid(turn, n) + `","timestamp":"` + ts + `",` + tail)
		}
		result := func(n int, id, content, toolUseResult string) {
			put(`{"parentUuid":"` + uuid(turn, n-1) + `","isSidechain":false,"promptId":"` + uuid(turn, 0) + `","type":"user","message":{"role":"user","content":[{"tool_use_id":"` + id + `","type":"tool_result","content":` + content + `,"is_error":false}]},"uuid":"` + uuid(turn, n) + `","timestamp":"` + ts + `","toolUseResult":` + toolUseResult + `,"sourceToolAssistantUUID":"` + uuid(turn, n-1) + `",` + tail)
		}
		msg(11, `{"type":"thinking","thinking":`+jstr(benchText(r, 1500))+`,"signature":"`+strings.Repeat("c2lnbmF0dXJl", 40)+`"}`, "tool_use", 300)
		msg(12, `{"type":"text","text":`+jstr(benchText(r, 300))+`}`, "tool_use", 300)
		bash := fmt.Sprintf("toolu_bash_%d", turn)
		msg(13, `{"type":"tool_use","id":"`+bash+`","name":"Bash","input":{"command":"go test ./internal/history 2>&1 | tail -n 400","description":"Run the tests"}}`, "tool_use", 300)
		out := benchText(r, 20<<10+r.IntN(40<<10))
		result(14, bash, jstr(out), `{"stdout":`+jstr(out)+`,"stderr":"","interrupted":false,"isImage":false,"noOutputExpected":false}`)
		put(`{"type":"tools-used","tools":["Bash","Read","Edit"],"sessionId":"` + sid + `"}`)
		read := fmt.Sprintf("toolu_read_%d", turn)
		file := fmt.Sprintf("/work/project/internal/pkg%d/file.go", turn%50)
		msg(21, `{"type":"tool_use","id":"`+read+`","name":"Read","input":{"file_path":"`+file+`"}}`, "tool_use", 80)
		src := benchText(r, 10<<10+r.IntN(30<<10))
		var numbered strings.Builder
		for i, ln := range strings.Split(strings.TrimSuffix(src, "\n"), "\n") {
			fmt.Fprintf(&numbered, "%6d\t%s\n", i+1, ln)
		}
		lines := strings.Count(src, "\n")
		result(22, read, jstr(numbered.String()), `{"type":"text","file":{"filePath":"`+file+`","content":`+jstr(src)+`,"numLines":`+fmt.Sprint(lines)+`,"startLine":1,"totalLines":`+fmt.Sprint(lines)+`}}`)
		edit := fmt.Sprintf("toolu_edit_%d", turn)
		old, nw := src[:strings.IndexByte(src, '\n')], "// changed in turn "+fmt.Sprint(turn)
		msg(31, `{"type":"tool_use","id":"`+edit+`","name":"Edit","input":{"replace_all":false,"file_path":"`+file+`","old_string":`+jstr(old)+`,"new_string":`+jstr(nw)+`}}`, "tool_use", 120)
		patch := `[{"oldStart":1,"oldLines":1,"newStart":1,"newLines":1,"lines":[` + jstr("-"+old) + `,` + jstr("+"+nw) + `]}]`
		result(32, edit, jstr("The file "+file+" has been updated successfully."), `{"filePath":"`+file+`","oldString":`+jstr(old)+`,"newString":`+jstr(nw)+`,"originalFile":`+jstr(src)+`,"structuredPatch":`+patch+`,"userModified":false,"replaceAll":false}`)
		if turn%20 == 13 {
			img := fmt.Sprintf("toolu_img_%d", turn)
			msg(41, `{"type":"tool_use","id":"`+img+`","name":"Read","input":{"file_path":"/work/project/shot.png"}}`, "tool_use", 60)
			result(42, img, `[{"type":"image","source":{"type":"base64","data":"`+shot+`","media_type":"image/png"}}]`, `{"type":"image","file":{"base64":"`+shot+`","type":"image/png","originalSize":`+fmt.Sprint(len(shot)*3/4)+`}}`)
		}
		msg(91, `{"type":"text","text":`+jstr(benchText(r, 1500))+`}`, "end_turn", 400)
		put(`{"type":"last-prompt","lastPrompt":` + jstr(prompt[:40]) + `,"leafUuid":"` + uuid(turn, 91) + `","sessionId":"` + sid + `"}`)
		put(fmt.Sprintf(`{"type":"cost-state","sessionId":"%s","totalCostUSD":%.4f,"totalAPIDuration":%d,"totalToolDuration":%d,"totalLinesAdded":%d,"totalLinesRemoved":%d,"modelUsage":{"claude-opus-5-5":{"inputTokens":%d,"outputTokens":%d,"costUSD":%.4f}},"hasUnknownModelCost":false}`,
			sid, 0.05*float64(turn+1), 1000*turn, 300*turn, turn, turn, 1000*turn, 200*turn, 0.05*float64(turn+1)))
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// writeCodexBench writes a Codex rollout of at least size bytes in Codex
// 0.169.0's format (as the recorded ones in testdata): turns of a typed
// message (every 20th with an image), the turn's context, reasoning, a
// message, a command with tens of KB of output (recorded twice, as the
// completed item's output and as the function call's output), a patch (a
// diff of KBs, twice again), the token counts and the turn's end.
func writeCodexBench(b testing.TB, path string, size int) {
	b.Helper()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	r := rand.New(rand.NewPCG(3, 4))
	shot := "data:image/png;base64," + base64.StdEncoding.EncodeToString(benchPNG(r, 200, 150))
	const tid = "01a23542-6502-7f33-80f4-cae31bfb0ab9"
	written, ord := 0, 0
	put := func(ts, typ, payload string) {
		ord++
		n, _ := fmt.Fprintf(w, `{"timestamp":"%s","ordinal":%d,"type":"%s","payload":%s}`+"\n", ts, ord, typ, payload)
		written += n
	}
	put("2026-12-01T08:00:00.000Z", "session_meta", `{"id":"`+tid+`","timestamp":"2026-12-01T08:00:00.000Z","cwd":"/work/project","originator":"codex_exec","cli_version":"0.169.0","source":"exec","model_provider":"openai","base_instructions":{"text":`+jstr(benchText(r, 20<<10))+`}}`)
	tokens := func(in, out int) string {
		return fmt.Sprintf(`{"input_tokens":%d,"cached_input_tokens":%d,"cache_write_input_tokens":0,"output_tokens":%d,"reasoning_output_tokens":%d,"total_tokens":%d}`, in, in/2, out, out/3, in+out)
	}
	total := 0
	tokenCount := func(ts string) {
		in, out := 20000+r.IntN(50000), 100+r.IntN(2000)
		total += in + out
		put(ts, "event_msg", `{"type":"token_count","info":{"total_token_usage":`+tokens(total, total/50)+`,"last_token_usage":`+tokens(in, out)+`,"last_usage_includes_reasoning":false,"model_context_window":258400},"rate_limits":{"limit_id":"codex","limit_name":null,"primary":null,"secondary":null,"credits":null,"individual_limit":null,"spend_control_reached":null,"plan_type":null,"rate_limit_reached_type":null}}`)
	}
	for turn := 0; written < size; turn++ {
		ts := fmt.Sprintf("2026-12-01T%02d:%02d:%02d.000Z", 8+turn/3600%12, turn/60%60, turn%60)
		turnID := fmt.Sprintf("01a23542-0000-7000-8000-%012x", turn)
		meta := `"internal_chat_message_metadata_passthrough":{"turn_id":"` + turnID + `"}`
		item := func(it string) {
			put(ts, "event_msg", `{"type":"item_completed","thread_id":"`+tid+`","turn_id":"`+turnID+`","item":`+it+`,"started_at_ms":1796189873671,"completed_at_ms":1796189873671}`)
		}
		put(ts, "event_msg", `{"type":"task_started","turn_id":"`+turnID+`","started_at":1796189873,"model_context_window":258400,"collaboration_mode_kind":"default"}`)
		put(ts, "turn_context", `{"turn_id":"`+turnID+`","cwd":"/work/project","approval_policy":"never","sandbox_policy":{"type":"workspace-write"},"model":"gpt-5.5-codex","effort":"medium","summary":"auto","user_instructions":`+jstr(benchText(r, 1500))+`}`)
		prompt := fmt.Sprintf("Turn %d: %s", turn, strings.TrimSpace(benchText(r, 200)))
		content := `[{"type":"input_text","text":` + jstr(prompt) + `}]`
		if turn%20 == 7 {
			content = `[{"type":"input_text","text":` + jstr(prompt) + `},{"type":"input_image","image_url":"` + shot + `"}]`
		}
		put(ts, "response_item", `{"type":"message","id":"msg_u`+turnID+`","role":"user","content":`+content+`,`+meta+`}`)
		item(`{"type":"UserMessage","id":"u` + turnID + `","content":[{"type":"text","text":` + jstr(prompt) + `,"text_elements":[]}]}`)
		summary := jstr(benchText(r, 600))
		item(`{"type":"Reasoning","id":"rs_` + turnID + `","summary_text":[` + summary + `],"raw_content":[]}`)
		put(ts, "response_item", `{"type":"reasoning","id":"rs_`+turnID+`","summary":[{"type":"summary_text","text":`+summary+`}],"content":null,"encrypted_content":"`+strings.Repeat("ZW5jcnlwdGVk", 200)+`",`+meta+`}`)
		say := func(n int, text string) {
			id := fmt.Sprintf("msg_%s_%d", turnID, n)
			item(`{"type":"AgentMessage","id":"` + id + `","content":[{"type":"Text","text":` + jstr(text) + `}]}`)
			put(ts, "response_item", `{"type":"message","status":"completed","id":"`+id+`","role":"assistant","content":[{"type":"output_text","text":`+jstr(text)+`,"annotations":[]}],`+meta+`}`)
		}
		say(1, benchText(r, 300))
		call := "call_exec_" + turnID
		put(ts, "response_item", `{"type":"function_call","status":"completed","id":"fc_`+turnID+`","name":"exec_command","arguments":"{\"cmd\":\"go test ./... 2\u003e\u00261 | tail -n 400\"}","call_id":"`+call+`",`+meta+`}`)
		tokenCount(ts)
		out := benchText(r, 20<<10+r.IntN(40<<10))
		item(`{"type":"CommandExecution","id":"` + call + `","process_id":"12162","command":["/bin/bash","-lc","go test ./... 2>&1 | tail -n 400"],"cwd":"file:///work/project","parsed_cmd":[{"type":"unknown","cmd":"go test ./... 2>&1 | tail -n 400"}],"source":"unified_exec_startup","status":"completed","aggregated_output":` + jstr(out) + `,"exit_code":0,"duration":{"secs":0,"nanos":58058811}}`)
		put(ts, "response_item", `{"type":"function_call_output","id":"fco_`+turnID+`","call_id":"`+call+`","output":`+jstr("Chunk ID: 8c7e81\nWall time: 0.0581 seconds\nProcess exited with code 0\nOriginal token count: 5000\nOutput:\n"+out)+`,`+meta+`}`)
		tokenCount(ts)
		patch := "call_patch_" + turnID
		file := fmt.Sprintf("internal/pkg%d/file.go", turn%50)
		var diff strings.Builder
		diff.WriteString("@@ -1,40 +1,40 @@\n")
		for _, ln := range strings.Split(benchText(r, 3<<10), "\n") {
			diff.WriteString([]string{" ", "-", "+"}[r.IntN(3)] + ln + "\n")
		}
		put(ts, "response_item", `{"type":"custom_tool_call","id":"ctc_`+turnID+`","status":"completed","call_id":"`+patch+`","name":"apply_patch","input":`+jstr("*** Begin Patch\n*** Update File: "+file+"\n"+diff.String()+"*** End Patch\n")+`,`+meta+`}`)
		item(`{"type":"FileChange","id":"` + patch + `","changes":{"/work/project/` + file + `":{"type":"update","unified_diff":` + jstr(diff.String()) + `,"move_path":null}},"status":"completed","stdout":"Success. Updated the following files:\nM ` + file + `\n","stderr":""}`)
		put(ts, "response_item", `{"type":"custom_tool_call_output","id":"ctco_`+turnID+`","call_id":"`+patch+`","output":"Exit code: 0\nWall time: 0.2 seconds\nOutput:\nSuccess. Updated the following files:\nM `+file+`\n",`+meta+`}`)
		tokenCount(ts)
		say(2, benchText(r, 1500))
		put(ts, "token_usage_record", `{"thread_id":"`+tid+`","turn_id":"`+turnID+`","usage":`+tokens(30000, 500)+`}`)
		put(ts, "event_msg", `{"type":"task_complete","turn_id":"`+turnID+`","last_agent_message":"done","duration_ms":1200}`)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// peakHeap samples the heap in use (HeapInuse: the spans holding objects,
// live or not yet swept) every 200 µs until stop is called, which returns
// the highest it saw (a benchmark's figure, not a test's).
func peakHeap() (stop func() uint64) {
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
	var peak uint64
	done, finished := make(chan struct{}), make(chan struct{})
	read := func() {
		metrics.Read(samples)
		if n := samples[0].Value.Uint64() + samples[1].Value.Uint64(); n > peak {
			peak = n
		}
	}
	go func() {
		defer close(finished)
		t := time.NewTicker(200 * time.Microsecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			read()
		}
	}()
	var once sync.Once
	return func() uint64 {
		once.Do(func() { close(done); <-finished; read() })
		return peak
	}
}

// heapObjects is the bytes of the heap's objects (HeapAlloc): after a
// collection, those live.
func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// convSize is the size of a conversation as its package holds it: its
// conversation.json and its images' files.
func convSize(b testing.TB, conv *archive.Conversation) int {
	data, err := conv.Encode()
	if err != nil {
		b.Fatal(err)
	}
	n := len(data)
	seen := map[string]bool{}
	for _, m := range conv.History {
		for _, bl := range m.Content {
			if d := bl.ImageData(); d != nil && !seen[bl.String("sha256")] {
				seen[bl.String("sha256")] = true
				n += len(d)
			}
		}
	}
	return n
}

// BenchmarkImport imports a session file of 100 MB of each CLI (see
// writeClaudeBench and writeCodexBench), whole. Besides time and
// allocations it reports the file's and the conversation's sizes
// (file-MB, conv-MB: its conversation.json and images), the peak of the
// heap in use while importing (peak-heap-MB, sampled) and the heap the
// conversation keeps once imported (live-MB).
func BenchmarkImport(b *testing.B) {
	for _, backend := range []string{"claude", "codex"} {
		b.Run(backend, func(b *testing.B) {
			p := filepath.Join(b.TempDir(), "s.jsonl")
			if backend == "claude" {
				writeClaudeBench(b, p, importBenchSize)
			} else {
				writeCodexBench(b, p, importBenchSize)
			}
			fi, err := os.Stat(p)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(fi.Size())
			b.ReportAllocs()
			var peak, live uint64
			var conv *archive.Conversation
			for b.Loop() {
				conv = nil
				runtime.GC()
				base := heapObjects()
				stop := peakHeap()
				var rep *history.Report
				conv, rep, err = history.ImportFile(backend, p, history.ImportOptions{Stores: stores})
				peak = max(peak, stop())
				if err != nil || rep.Skipped != 0 || rep.Turns < 100 {
					b.Fatal(err, rep)
				}
				b.StopTimer()
				runtime.GC()
				live = max(live, heapObjects()-min(base, heapObjects()))
				b.StartTimer()
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
			b.ReportMetric(float64(live)/(1<<20), "live-MB")
			b.ReportMetric(float64(fi.Size())/(1<<20), "file-MB")
			b.ReportMetric(float64(convSize(b, conv))/(1<<20), "conv-MB")
		})
	}
}
