package history

import (
	"bytes"
	"path/filepath"
	"strings"

	"github.com/tidwall/gjson"
)

// codexCandidates are the rollouts of the Codex CLI's store under home:
// sessions/YYYY/MM/DD/rollout-*.jsonl.
func codexCandidates(home string) []candidate {
	if home == "" {
		return nil
	}
	var out []candidate
	for _, y := range subdirs(filepath.Join(home, "sessions")) {
		for _, m := range subdirs(y) {
			for _, d := range subdirs(m) {
				out = append(out, regularFiles(Codex, d, func(name string) bool {
					return strings.HasPrefix(name, "rollout-") && strings.HasSuffix(name, ".jsonl")
				})...)
			}
		}
	}
	return out
}

// codexFileID is the thread id in a rollout's name
// (rollout-2026-12-02T05-37-53-<id>.jsonl), "" when it has none.
func codexFileID(path string) string {
	name := strings.TrimSuffix(filepath.Base(path), ".jsonl")
	if len(name) < 36 {
		return ""
	}
	id := name[len(name)-36:]
	if strings.Count(id, "-") != 4 {
		return ""
	}
	return id
}

// maxIndex bounds how much of Codex's session_index.jsonl is read.
const maxIndex = 4 << 20

// codexThreadNames are the names the Codex CLI gave its threads (by thread
// id), from CODEX_HOME/session_index.jsonl, the last name of each; empty
// when there is none.
func codexThreadNames(home string) map[string]string {
	names := map[string]string{}
	if home == "" {
		return names
	}
	f, size, err := openRegular(filepath.Join(home, "session_index.jsonl"))
	if err != nil {
		return names
	}
	defer f.Close()
	from := max(size-maxIndex, 0)
	buf := make([]byte, size-from)
	n, _ := f.ReadAt(buf, from)
	for _, line := range bytes.Split(buf[:n], []byte("\n")) {
		if v, ok := object(line); ok {
			if id, name := v.Get("id").String(), v.Get("thread_name").String(); id != "" && name != "" {
				names[id] = name
			}
		}
	}
	return names
}

// summarizeCodex reads the head and tail of a rollout: its thread id,
// folder, title (the last the rollout gives, else the first message; the
// thread names of session_index.jsonl come before it, the caller's), and
// whether it is a session to list (a thread the user began, with a user
// message; a subagent's thread is not).
func summarizeCodex(c candidate) (Entry, bool) {
	f, size, err := openRegular(c.path)
	if err != nil {
		return Entry{}, false
	}
	defer f.Close()
	e := Entry{Backend: Codex, Path: c.path, UpdatedAt: c.mod, Size: size, ID: codexFileID(c.path)}
	var first string
	meta, sub := false, false
	headLines(f, size, func(line []byte) bool {
		if !meta && bytes.Contains(line, []byte(`"session_meta"`)) {
			if v, ok := object(line); ok && v.Get("type").String() == "session_meta" {
				meta = true
				p := v.Get("payload")
				e.Cwd = p.Get("cwd").String()
				if id := p.Get("id").String(); id != "" {
					e.ID = id
				}
				sub = codexSubagent(p)
			}
		}
		if first == "" && (bytes.Contains(line, []byte(`"UserMessage"`)) || bytes.Contains(line, []byte(`"user_message"`))) {
			if v, ok := object(line); ok {
				first, _ = codexPrompt(v)
			}
		}
		return (first == "" || !meta) && !sub
	})
	if first == "" || sub || e.ID == "" {
		return Entry{}, false
	}
	title := ""
	tailLines(f, size, func(line []byte) bool {
		if bytes.Contains(line, []byte(`"thread_name_updated"`)) {
			if v, ok := object(line); ok {
				title = v.Get("payload.thread_name").String()
			}
		}
		return title == ""
	})
	if title == "" {
		title = first
	}
	e.Title = cutTitle(title)
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
	t := strings.TrimSpace(text)
	switch {
	case t != "":
		return t, true
	case hasImage:
		return "[image]", true
	}
	return "", false
}
