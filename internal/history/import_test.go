package history_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/history"
	"spbridge/internal/history/historytest"
	"spbridge/internal/itemmap"
)

const (
	claudeUser  = `{"type":"user","sessionId":"s1","cwd":"/w","message":{"role":"user","content":"hello"}}`
	claudeReply = `{"type":"assistant","sessionId":"s1","message":{"id":"m1","model":"claude-x","role":"assistant","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":2}}}`
)

// TestImportBadInput: lines that are not understood are skipped and
// counted in one notice; a cut last line, invalid UTF-8, a file that is
// not a session, a symbolic link and a missing file give clear results.
func TestImportBadInput(t *testing.T) {
	dir := t.TempDir()
	t.Run("unknown lines", func(t *testing.T) {
		p := historytest.Write(t, dir, "u.jsonl", claudeUser+"\nnot json\n"+`{"type":"brand-new-kind"}`+"\n"+claudeReply+"\n")
		conv, rep := historytest.Import(t, stores, "", p)
		if rep.Skipped != 2 || rep.Partial {
			t.Errorf("report %+v", rep)
		}
		got := historytest.Kinds(conv)
		if len(got) != 3 || got[0] != "user hello" || got[1] != "assistant hi" ||
			got[2] != "notice 2 lines of the session file were not understood and were skipped." {
			t.Errorf("items %q", got)
		}
	})
	t.Run("cut last line", func(t *testing.T) {
		p := historytest.Write(t, dir, "c.jsonl", claudeUser+"\n"+claudeReply+"\n"+claudeReply[:40])
		conv, rep := historytest.Import(t, stores, "claude", p)
		if rep.Skipped != 1 || !rep.Partial {
			t.Errorf("report %+v", rep)
		}
		if got := historytest.Kinds(conv); len(got) != 3 || !strings.Contains(got[2], "(the last line was cut short)") {
			t.Errorf("items %q", got)
		}
	})
	t.Run("invalid UTF-8", func(t *testing.T) {
		p := historytest.Write(t, dir, "i.jsonl", strings.Replace(claudeUser, "hello", "hel\xff\xfelo", 1)+"\n"+claudeReply+"\n")
		conv, _ := historytest.Import(t, stores, "claude", p)
		if got := historytest.Kinds(conv); len(got) != 2 || got[0] != "user hel\uFFFDlo" {
			t.Errorf("items %q", got)
		}
		if _, err := conv.Encode(); err != nil {
			t.Error(err)
		}
	})
	t.Run("not a session", func(t *testing.T) {
		p := historytest.Write(t, dir, "n.jsonl", "hello\nworld\n")
		if _, _, err := history.ImportFile("", p, history.ImportOptions{Stores: stores}); !errors.Is(err, history.ErrUnknownFormat) {
			t.Errorf("err %v", err)
		}
		if _, _, err := history.ImportFile("claude", p, history.ImportOptions{Stores: stores}); !errors.Is(err, history.ErrUnknownFormat) {
			t.Errorf("err %v", err)
		}
		if _, _, err := history.ImportFile("", historytest.Write(t, dir, "e.jsonl", ""), history.ImportOptions{Stores: stores}); !errors.Is(err, history.ErrUnknownFormat) {
			t.Errorf("empty: err %v", err)
		}
	})
	t.Run("symbolic link", func(t *testing.T) {
		target := historytest.Write(t, t.TempDir(), "outside.jsonl", claudeUser+"\n"+claudeReply+"\n")
		link := filepath.Join(dir, "link.jsonl")
		if err := os.Symlink(target, link); err != nil {
			t.Skip(err)
		}
		var ns *history.NotSessionError
		if _, _, err := history.ImportFile("", link, history.ImportOptions{Stores: stores}); !errors.As(err, &ns) || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("err %v", err)
		}
	})
	t.Run("missing", func(t *testing.T) {
		if _, _, err := history.ImportFile("", filepath.Join(dir, "none.jsonl"), history.ImportOptions{Stores: stores}); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("err %v", err)
		}
	})
	t.Run("interrupted", func(t *testing.T) {
		call := `{"type":"assistant","sessionId":"s1","message":{"id":"m2","model":"claude-x","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"sleep 9"}}],"stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":2}}}`
		// As Claude Code writes an interrupt during a tool: the call's
		// error result, then the mark.
		res := `{"type":"user","sessionId":"s1","message":{"role":"user","content":[{"type":"tool_result","content":"[Request interrupted by user for tool use]","is_error":true,"tool_use_id":"t1"}]}}`
		stop := `{"type":"user","sessionId":"s1","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user for tool use]"}]}}`
		p := historytest.Write(t, dir, "x.jsonl", claudeUser+"\n"+call+"\n"+res+"\n"+stop+"\n"+strings.Replace(claudeUser, "hello", "again", 1)+"\n"+claudeReply+"\n")
		conv, rep := historytest.Import(t, stores, "claude", p)
		got := strings.Join(historytest.Kinds(conv), "\n")
		if rep.Turns != 2 || got != "user hello\ntool Bash cancelled\nnotice Interrupted.\nuser again\nassistant hi" {
			t.Errorf("turns %d items\n%s", rep.Turns, got)
		}
		// The call has a result, so that the history can be sent again.
		var results int
		for _, m := range conv.History {
			for _, b := range m.Content {
				if b.Type() == archive.BlockToolResult {
					results++
				}
			}
		}
		if results != 1 {
			t.Errorf("%d results", results)
		}
	})
}

// FuzzImport: any bytes as a session file of either CLI import without a
// panic, and what they give encodes as format 1.
func FuzzImport(f *testing.F) {
	for _, p := range []string{claudeFixture, codexFixture} {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		lines := bytes.Split(data, []byte("\n"))
		for i := 0; i < len(lines); i += 7 {
			f.Add(bytes.Join(lines[i:min(i+7, len(lines))], []byte("\n")))
		}
	}
	f.Add([]byte(claudeUser + "\n" + claudeReply))
	f.Add([]byte("{\"type\":\"user\"\n\xff\n{}"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "s.jsonl")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, backend := range []string{"", "claude", "codex"} {
			conv, _, err := history.ImportFile(backend, p, history.ImportOptions{Stores: stores, NewID: itemmap.SequentialIDs()})
			if err != nil {
				continue
			}
			if _, err := conv.Encode(); err != nil {
				t.Fatalf("%s: encode: %v", backend, err)
			}
		}
	})
}
