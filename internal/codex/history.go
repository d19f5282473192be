package codex

import (
	"bytes"
	"path/filepath"
	"strings"

	"github.com/tidwall/gjson"

	"spbridge/internal/history"
	"spbridge/internal/itemmap"
	"spbridge/internal/restore"
)

// History is the Codex CLI's store of past sessions: $CODEX_HOME (else
// ~/.codex) /sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl, whose
// first line (session_meta) names the working folder; the names codex
// gave its threads are in session_index.jsonl beside them (a
// history.TitleIndex). A rollout's lines are what the app-server tells a
// client, in another dress, so an import maps them with the live
// app-server mapper (see codexImport).
var History history.Store = historyStore{}

type historyStore struct{}

func (historyStore) Name() string    { return Name }
func (historyStore) Display() string { return "Codex" }

// Dir is where the Codex CLI keeps its state: $CODEX_HOME, else
// ~/.codex; "" when neither can be told.
func (historyStore) Dir() string { return homeDir(nil) }

func (historyStore) Where(dir string) string { return filepath.Join(dir, "sessions") }

// Files are the rollouts of the store under home:
// sessions/YYYY/MM/DD/rollout-*.jsonl (or .jsonl.zst), of each thread its
// newest (see threadfiles.go); a rollout's folder is told by its first
// line only, so cwd picks none out.
func (historyStore) Files(home, _ string) []history.File {
	if home == "" {
		return nil
	}
	var out []history.File
	for _, y := range history.Subdirs(filepath.Join(home, "sessions")) {
		for _, m := range history.Subdirs(y) {
			for _, d := range history.Subdirs(m) {
				out = append(out, history.RegularFiles(d, isRollout)...)
			}
		}
	}
	return currentFiles(out)
}

func (historyStore) FileID(path string) string { return codexFileID(path) }

// Sniff: a rollout begins with session_meta.
func (historyStore) Sniff(v gjson.Result) bool {
	return v.Get("type").String() == "session_meta" && v.Get("payload").IsObject()
}

func (historyStore) NewImporter(newID itemmap.IDFunc, rep *history.Report) history.Importer {
	return newCodexImport(newID, rep)
}

// TitleIndex is codex's session_index.jsonl under home.
func (historyStore) TitleIndex(home string) string {
	if home == "" {
		return ""
	}
	return filepath.Join(home, "session_index.jsonl")
}

// ReadTitles reads codex's thread names (codexThreadNames).
func (historyStore) ReadTitles(path string) map[string]string { return codexThreadNames(path) }

// codexFileID is the thread id in a rollout's name
// (rollout-2026-12-02T05-37-53-<id>.jsonl, or -<id>_<rollout>.jsonl, or
// either .zst), "" when it has none.
func codexFileID(path string) string {
	id, _, _ := rolloutName(path)
	return id
}

// maxIndex bounds how much of Codex's session_index.jsonl is read.
const maxIndex = 4 << 20

// codexThreadNames are the names the Codex CLI gave its threads (by thread
// id), from its index at path (CODEX_HOME/session_index.jsonl), the last
// name of each; empty when there is none.
func codexThreadNames(path string) map[string]string {
	names := map[string]string{}
	f, size, err := history.OpenRegular(path)
	if err != nil {
		return names
	}
	defer f.Close()
	from := max(size-maxIndex, 0)
	buf := make([]byte, size-from)
	n, _ := f.ReadAt(buf, from)
	for _, line := range bytes.Split(buf[:n], []byte("\n")) {
		if v, ok := history.Object(line); ok {
			if id, name := v.Get("id").String(), v.Get("thread_name").String(); id != "" && name != "" {
				names[id] = name
			}
		}
	}
	return names
}

// Summarize reads the head and tail of a rollout: its thread id, folder,
// title (the last the rollout gives, else the first message; the thread
// names of session_index.jsonl come before it, the listing's), and
// whether it is a session to list (a thread the user began, with a user
// message; a subagent's thread is not).
func (st historyStore) Summarize(c history.File) (history.Entry, bool) {
	// The head is the thread's (its first file's, when it goes on in
	// others), the tail its newest file's.
	f, err := history.OpenSession(c.Path, 0)
	if err != nil {
		return history.Entry{}, false
	}
	defer f.Close()
	e := history.Entry{Backend: st.Name(), Path: c.Path, UpdatedAt: c.Mod, Size: c.Size, ID: codexFileID(c.Path)}
	var first string
	meta, sub, paged := false, false, false
	head := func(line []byte) bool {
		if !meta && bytes.Contains(line, []byte(`"session_meta"`)) {
			if v, ok := history.Object(line); ok && v.Get("type").String() == "session_meta" {
				meta = true
				p := v.Get("payload")
				if p.Get("history_base").IsObject() && !paged {
					// The thread goes on from another file: its head is
					// that file's.
					paged = true
					return false
				}
				e.Cwd = p.Get("cwd").String()
				if id := p.Get("id").String(); id != "" {
					e.ID = id
				}
				sub = codexSubagent(p)
			}
		}
		if first == "" && (bytes.Contains(line, []byte(`"UserMessage"`)) || bytes.Contains(line, []byte(`"user_message"`))) {
			if v, ok := history.Object(line); ok {
				first, _ = codexPrompt(v)
			}
		}
		return (first == "" || !meta) && !sub
	}
	f.Head(head)
	if paged {
		src, err := st.Open(c.Path)
		if err != nil {
			return history.Entry{}, false
		}
		// The thread is the newest file's (a fork's first file continues
		// its parent's): its id stays the one the file's name gives.
		id := e.ID
		meta = false
		history.ReaderHead(src, head)
		src.Close()
		e.ID = id
	}
	if first == "" || sub || e.ID == "" {
		return history.Entry{}, false
	}
	title := ""
	f.Tail(func(line []byte) bool {
		if bytes.Contains(line, []byte(`"thread_name_updated"`)) {
			if v, ok := history.Object(line); ok {
				title = v.Get("payload.thread_name").String()
			}
		}
		return title == ""
	})
	if title == "" {
		title = first
	}
	e.Title = history.CutTitle(title)
	return e, true
}

// codexSubagent reports whether a session_meta's payload is a subagent's
// thread (one codex spawned, not the user).
func codexSubagent(p gjson.Result) bool {
	if ts := p.Get("thread_source").String(); ts != "" && ts != "user" {
		return true
	}
	return p.Get("source.subagent").Exists()
}

// codexPrompt is the text of a rollout line that is a message the user
// sent (event_msg user_message, or the UserMessage item completed), false
// for any other line. A message of images alone reads "[image]".
func codexPrompt(v gjson.Result) (string, bool) {
	if v.Get("type").String() != "event_msg" {
		return "", false
	}
	p := v.Get("payload")
	var text string
	hasImage := false
	switch p.Get("type").String() {
	case "user_message":
		text = p.Get("message").String()
		hasImage = len(p.Get("images").Array()) > 0 || len(p.Get("local_images").Array()) > 0
	case "item_completed":
		if p.Get("item.type").String() != "UserMessage" {
			return "", false
		}
		for _, c := range p.Get("item.content").Array() {
			switch c.Get("type").String() {
			case "text":
				if text == "" {
					text = c.Get("text").String()
				}
			case "image", "local_image":
				hasImage = true
			}
		}
	default:
		return "", false
	}
	text, _ = restore.Split(text) // the user's words, without a restore prefix
	t := strings.TrimSpace(text)
	switch {
	case t != "":
		return t, true
	case hasImage:
		return "[image]", true
	}
	return "", false
}
