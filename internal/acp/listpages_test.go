package acp

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"spbridge/internal/catalog"
	"spbridge/internal/clis"
	"spbridge/internal/history"
	"spbridge/internal/sessionindex"
)

// mungeDir is the folder of Claude Code's store that holds dir's sessions.
func mungeDir(dir string) string {
	return regexp.MustCompile(`[^A-Za-z0-9]`).ReplaceAllString(dir, "-")
}

// manyCLISessions makes n Claude Code sessions of the folder cwd in a new
// store (the newest first by name: s0000 is the newest), and returns the
// store.
func manyCLISessions(tb testing.TB, cwd string, n int) string {
	tb.Helper()
	store := tb.TempDir()
	dir := filepath.Join(store, "projects", mungeDir(cwd))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i := range n {
		id := fmt.Sprintf("s%04d", i)
		data := `{"type":"user","sessionId":"` + id + `","cwd":"` + cwd + `","message":{"role":"user","content":"message ` + id + `"}}` + "\n" +
			`{"type":"assistant","sessionId":"` + id + `","message":{"id":"m1","model":"claude-x","role":"assistant","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":2}}}` + "\n"
		p := filepath.Join(dir, id+".jsonl")
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			tb.Fatal(err)
		}
		mod := base.Add(-time.Duration(i) * time.Minute)
		if err := os.Chtimes(p, mod, mod); err != nil {
			tb.Fatal(err)
		}
	}
	return store
}

// TestListPagesOneListing: the pages after the first are cut from the
// listing the first page made, not from a new one: a session that
// appeared or went meanwhile does not shift them (none is shown twice or
// skipped), and reading them reads no session file. A first page lists
// anew; so does a page whose listing is no longer kept, and any page
// after a session/delete.
func TestListPagesOneListing(t *testing.T) {
	cwd := t.TempDir()
	store := manyCLISessions(t, cwd, 60)
	state := t.TempDir()
	c := startServerWith(t, Config{History: &history.Options{Stores: clis.Stores(), Dirs: map[string]string{"claude": store, "codex": t.TempDir()}, Cache: history.NewHeadCache(state)},
		SessionsDir: filepath.Join(state, "sessions"), Index: sessionindex.New(state)})
	page := func(cursor string) ([]string, string) {
		t.Helper()
		params := map[string]any{"cwd": cwd}
		if cursor != "" {
			params["cursor"] = cursor
		}
		res, _ := c.request("session/list", params)
		var ids []string
		for _, s := range res["sessions"].([]any) {
			ids = append(ids, s.(map[string]any)["sessionId"].(string))
		}
		next, _ := res["nextCursor"].(string)
		return ids, next
	}
	first, next := page("")
	if len(first) != catalog.PageSize || first[0] != "claude:s0000" || next == "" {
		t.Fatalf("first page %v, next %q", first, next)
	}
	// Every session file gone: the next pages are still the first
	// listing's.
	dir := filepath.Join(store, "projects", mungeDir(cwd))
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	var rest []string
	for cursor := next; cursor != ""; {
		var ids []string
		ids, cursor = page(cursor)
		rest = append(rest, ids...)
	}
	if len(rest) != 60-catalog.PageSize || rest[0] != fmt.Sprintf("claude:s%04d", catalog.PageSize) || rest[len(rest)-1] != "claude:s0059" {
		t.Errorf("the pages after the first: %d, %v", len(rest), rest)
	}
	// A first page lists anew.
	if ids, next := page(""); len(ids) != 0 || next != "" {
		t.Errorf("a new first page: %v, %q", ids, next)
	}
	// A cursor of a listing no longer kept lists anew, from its place.
	store2 := manyCLISessions(t, cwd, 60)
	if err := os.Rename(filepath.Join(store2, "projects", mungeDir(cwd)), dir); err != nil {
		t.Fatal(err)
	}
	_, next = page("")
	var cur catalog.Cursor
	data, _ := base64.RawURLEncoding.DecodeString(next)
	if err := json.Unmarshal(data, &cur); err != nil || cur.Snapshot == 0 {
		t.Fatalf("cursor %s: %v", data, err)
	}
	for range catalog.MaxSnapshots {
		page("")
	}
	if ids, _ := page(next); len(ids) != catalog.PageSize || ids[0] != fmt.Sprintf("claude:s%04d", catalog.PageSize) {
		t.Errorf("a page of a listing no longer kept: %v", ids)
	}
	// After a session/delete, the next page lists anew: the session
	// deleted is not in it.
	_, next = page("")
	c.request("session/delete", map[string]any{"sessionId": fmt.Sprintf("claude:s%04d", catalog.PageSize)})
	if ids, _ := page(next); len(ids) == 0 || ids[0] != fmt.Sprintf("claude:s%04d", catalog.PageSize+1) {
		t.Errorf("a page after a delete: %v", ids)
	}
}

// BenchmarkSessionList: session/list's first page and a page after it
// over the CLI sessions of one folder, 100 and 10,000 of them (the head
// cache warm, as after a first listing).
func BenchmarkSessionList(b *testing.B) {
	for _, n := range []int{100, 10000} {
		cwd := b.TempDir()
		state := b.TempDir()
		s := NewServer(io.Discard, Config{History: &history.Options{Stores: clis.Stores(), Dirs: map[string]string{"claude": manyCLISessions(b, cwd, n), "codex": b.TempDir()}, Cache: history.NewHeadCache(state)},
			SessionsDir: filepath.Join(state, "sessions"), Index: sessionindex.New(state)})
		list := func(cursor string) (int, string) {
			params, _ := json.Marshal(map[string]any{"cwd": cwd, "cursor": cursor})
			r, err := s.listSessions(params)
			if err != nil {
				b.Fatal(err)
			}
			m := r.(map[string]any)
			next, _ := m["nextCursor"].(string)
			return len(m["sessions"].([]any)), next
		}
		list("") // the head cache filled
		b.Run(fmt.Sprintf("%d/first-page", n), func(b *testing.B) {
			for b.Loop() {
				if got, _ := list(""); got != catalog.PageSize {
					b.Fatal(got)
				}
			}
		})
		b.Run(fmt.Sprintf("%d/next-page", n), func(b *testing.B) {
			_, next := list("")
			for b.Loop() {
				if got, _ := list(next); got != catalog.PageSize {
					b.Fatal(got)
				}
			}
		})
	}
}
