package claude

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"

	"github.com/tidwall/gjson"

	"spbridge/internal/history"
	"spbridge/internal/itemmap"
	"spbridge/internal/jsonline"
	"spbridge/internal/restore"
)

// History is Claude Code's store of past sessions: $CLAUDE_CONFIG_DIR
// (else ~/.claude) /projects/<folder>/<session id>.jsonl, where <folder>
// is the session's working folder with every character that is not an
// ASCII letter or digit turned into "-" (munge). A session's subagents
// are in <session id>/subagents/, and are not sessions of their own. Its
// lines are those of `claude -p --output-format stream-json`, so an
// import maps them with the live turns' mapper (see claudeImport).
var History history.Store = historyStore{}

type historyStore struct{}

func (historyStore) Name() string    { return Name }
func (historyStore) Display() string { return "Claude Code" }

// Dir is where Claude Code keeps its state: $CLAUDE_CONFIG_DIR, else
// ~/.claude; "" when neither can be told.
func (historyStore) Dir() string { return configDir(nil) }

func (historyStore) Where(dir string) string { return filepath.Join(dir, "projects") }

// Files are the session files of the store under config
// (projects/<folder>/<id>.jsonl), only those of cwd's folder when cwd is
// set and that folder exists. Subagents' files (agent-*.jsonl, and
// everything under a session's own folder) are not sessions.
func (historyStore) Files(config, cwd string) []history.File {
	if config == "" {
		return nil
	}
	projects := filepath.Join(config, "projects")
	dirs := []string{}
	if cwd != "" {
		if d := filepath.Join(projects, munge(cwd)); isDir(d) {
			dirs = append(dirs, d)
		}
	}
	if len(dirs) == 0 {
		dirs = history.Subdirs(projects)
	}
	var out []history.File
	for _, d := range dirs {
		out = append(out, history.RegularFiles(d, func(name string) bool {
			return strings.HasSuffix(name, ".jsonl") && !strings.HasPrefix(name, "agent-")
		})...)
	}
	return out
}

// FileID is the session id of a session file: its name, which `claude
// --resume` opens.
func (historyStore) FileID(path string) string {
	return strings.TrimSuffix(filepath.Base(path), ".jsonl")
}

// Sniff: Claude Code's lines carry a sessionId (or are a summary).
func (historyStore) Sniff(v gjson.Result) bool {
	return v.Get("sessionId").Exists() || v.Get("type").String() == "summary" || v.Get("leafUuid").Exists()
}

func (historyStore) NewImporter(newID itemmap.IDFunc, rep *history.Report) history.Importer {
	return newClaudeImport(newID, rep)
}

// munge is the name Claude Code gives the folder of a working folder's
// sessions under its projects/: every character that is not an ASCII
// letter or digit becomes "-".
func munge(dir string) string {
	b := []byte(dir)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b[i] = '-'
		}
	}
	return string(b)
}

func isDir(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.IsDir()
}

// Summarize reads the head and tail of a Claude Code session file: its
// id, folder, title, and whether it is a session at all (a main
// conversation with a user message).
func (st historyStore) Summarize(c history.File) (history.Entry, bool) {
	f, size, err := history.OpenRegular(c.Path)
	if err != nil {
		return history.Entry{}, false
	}
	defer f.Close()
	// The id is the file's name, which `claude --resume` opens: a session
	// that resumed another begins with the other's lines, and their id.
	e := history.Entry{Backend: st.Name(), Path: c.Path, UpdatedAt: c.Mod, Size: size, ID: st.FileID(c.Path)}
	var first, title string
	titleRank := 0
	sidechain := false
	var doc jsonline.Doc
	consider := func(line []byte) {
		if t, rank := claudeTitleLine(line); rank > titleRank {
			title, titleRank = t, rank
		}
	}
	history.HeadLines(f, size, func(line []byte) bool {
		consider(line)
		if e.Cwd == "" && bytes.Contains(line, []byte(`"cwd"`)) {
			if v, ok := history.Object(line); ok {
				e.Cwd = v.Get("cwd").String()
			}
		}
		if first == "" && bytes.Contains(line, []byte(`"user"`)) {
			if v, ok := parseObject(&doc, line); ok {
				if l := readClaudeLine(v); l.typ == "user" {
					text, ok := claudePrompt(l)
					if !ok {
						return true
					}
					first = text
					sidechain = l.sidechain
				}
			}
		}
		return first == "" || e.Cwd == ""
	})
	if first == "" || sidechain {
		return history.Entry{}, false
	}
	history.TailLines(f, size, func(line []byte) bool {
		if t, rank := claudeTitleLine(line); rank > titleRank {
			title, titleRank = t, rank
		}
		return titleRank < rankCustom
	})
	if title == "" {
		title = first
	}
	e.Title = history.CutTitle(title)
	return e, true
}

// Ranks of the titles a Claude Code session file may hold: the user's own
// (custom-title) over the CLI's (ai-title, summary).
const (
	rankSummary = 1
	rankAI      = 2
	rankCustom  = 3
)

func claudeTitleLine(line []byte) (string, int) {
	if !bytes.Contains(line, []byte(`"type":"summary"`)) && !bytes.Contains(line, []byte(`-title"`)) {
		return "", 0
	}
	v, ok := history.Object(line)
	if !ok {
		return "", 0
	}
	switch v.Get("type").String() {
	case "custom-title":
		if s := v.Get("customTitle").String(); s != "" {
			return s, rankCustom
		}
	case "ai-title":
		if s := v.Get("aiTitle").String(); s != "" {
			return s, rankAI
		}
	case "summary":
		if s := v.Get("summary").String(); s != "" {
			return s, rankSummary
		}
	}
	return "", 0
}

// claudeLine is the top-level fields of a Claude Code session line that
// spbridge reads, found in one pass over the line (a field a line lacks
// would otherwise cost a scan of the whole line for each lookup). Its
// values are the line's Doc's: valid until the Doc reads another line.
type claudeLine struct {
	typ, subtype, sessionID, cwd             string
	sidechain, meta, compactSummary, hidden  bool
	origin, message, toolUseResult, apiError jsonline.Value
	cost, compactMetadata                    jsonline.Value
}

func readClaudeLine(v jsonline.Value) *claudeLine {
	l := &claudeLine{}
	// Of a field given twice, the last counts.
	for m := v.Members(); m.Next(); {
		x := m.Value()
		switch m.Key() {
		case "type":
			l.typ = x.String()
		case "subtype":
			l.subtype = x.String()
		case "sessionId":
			l.sessionID = x.String()
		case "cwd":
			l.cwd = x.String()
		case "isSidechain":
			l.sidechain = x.Bool()
		case "isMeta":
			l.meta = x.Bool()
		case "isCompactSummary":
			l.compactSummary = x.Bool()
		case "isVisibleInTranscriptOnly":
			l.hidden = x.Bool()
		case "origin":
			l.origin = x
		case "message":
			l.message = x
		case "toolUseResult":
			l.toolUseResult = x
		case "isApiErrorMessage":
			l.apiError = x
		case "totalCostUSD":
			l.cost = x
		case "compactMetadata":
			l.compactMetadata = x
		}
	}
	return l
}

// parseObject reads line (spaces around it aside) into d when it is a
// JSON object (valid, nested no deeper than jsonline.MaxDepth, as
// history.Object checks): its values borrow line's bytes.
func parseObject(d *jsonline.Doc, line []byte) (jsonline.Value, bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' || !d.Parse(line) {
		return jsonline.Value{}, false
	}
	return d.Root(), true
}

// claudePrompt is the text of a user line that is a message the user
// typed (or sent with images), false for the CLI's own user lines: tool
// results, meta lines, compaction summaries, slash commands' echoes,
// interrupt marks and background task notifications.
func claudePrompt(l *claudeLine) (string, bool) {
	if l.meta || l.compactSummary || l.hidden || l.origin.Get("kind").String() == "task-notification" {
		return "", false
	}
	content := l.message.Get("content")
	var text string
	hasImage := false
	switch {
	case content.Type() == gjson.String:
		text = content.String()
	case content.IsArray():
		for _, b := range content.Array() {
			switch b.Get("type").String() {
			case "text":
				if text == "" {
					text = b.Get("text").String()
				}
			case "image":
				hasImage = true
			case "tool_result":
				return "", false
			}
		}
	default:
		return "", false
	}
	text, _ = restore.Split(text) // the user's words, without a restore prefix
	t := strings.TrimSpace(text)
	for _, p := range []string{"<command-", "<local-command", "[Request interrupted", "<task-notification", "<system-reminder"} {
		if strings.HasPrefix(t, p) {
			return "", false
		}
	}
	if t == "" && !hasImage {
		return "", false
	}
	if t == "" {
		t = "[image]"
	}
	return t, true
}
