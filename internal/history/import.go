package history

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"

	"spbridge/internal/archive"
	"spbridge/internal/itemmap"
)

// ImportOptions tunes an import.
type ImportOptions struct {
	// NewID names the items made (nil: random UUIDs, as live turns do).
	NewID itemmap.IDFunc
	// MaxSize bounds the conversation made (0: archive.MaxConversationSize,
	// what a save writes and spbridge reads back); what does not fit is
	// left out (see archive.Conversation.Fit) and a notice says so.
	MaxSize int64
}

// Report says what an import read.
type Report struct {
	Backend string // Claude or Codex
	ID      string // the CLI's session (thread) id, as the file holds it
	Path    string
	Cwd     string // the working folder the session ran in, "" when not recorded
	Model   string // the model of its last turn
	Lines   int    // lines read
	Turns   int    // the user's messages imported
	// Skipped counts the lines not understood (not JSON, cut short, too
	// long, or of a kind this spbridge does not know): a newer CLI's
	// additions. The conversation has one notice saying how many.
	Skipped int
	TooLong int  // of those, lines longer than 64 MiB
	Partial bool // the last line was cut short (the file was being written, or truncated)
	// Omitted says what was left out for the conversation to fit in what
	// spbridge keeps, as the notice that begins it says; "" when nothing.
	Omitted string
}

// ErrUnknownFormat is matched by the error of a file that is neither a
// Claude Code session file nor a Codex rollout.
var ErrUnknownFormat = errors.New("not a Claude Code session file or Codex rollout")

// Import reads the session e and returns it as a format-1 conversation:
// items as live turns make them, the history in the neutral form, usage,
// cost and model. The file is only read.
func Import(e Entry, o ImportOptions) (*archive.Conversation, *Report, error) {
	return ImportFile(e.Backend, e.Path, o)
}

// ImportFile imports the session file at path; backend is Claude, Codex,
// or "" to tell by its content. A file that is not a regular file (a
// symbolic link is not followed), or does not look like a session of the
// CLI, is an error; lines it does not understand are skipped and counted.
func ImportFile(backend, path string, o ImportOptions) (*archive.Conversation, *Report, error) {
	f, size, err := openRegular(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if backend == "" {
		backend = sniff(f, size)
		if backend == "" {
			return nil, nil, fmt.Errorf("%s: %w", path, ErrUnknownFormat)
		}
	}
	newID := o.NewID
	if newID == nil {
		newID = archive.NewID
	}
	rep := &Report{Backend: backend, Path: path}
	lr := newLineReader(io.NewSectionReader(f, 0, size))
	var imp importer
	switch backend {
	case Claude:
		imp = newClaudeImport(newID, rep)
	case Codex:
		imp = newCodexImport(newID, rep)
	default:
		return nil, nil, fmt.Errorf("unknown backend %q: claude or codex", backend)
	}
	understood := 0
	for {
		line, ok := lr.Next()
		if !ok {
			break
		}
		rep.Lines++
		if line = bytes.TrimSpace(line); len(line) == 0 {
			continue
		}
		if imp.line(line) {
			understood++
		} else {
			rep.Skipped++
		}
	}
	if err := lr.Err(); err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	rep.TooLong = lr.TooLong
	rep.Skipped += lr.TooLong
	rep.Partial = lr.Partial && rep.Skipped > 0
	if understood == 0 {
		return nil, nil, fmt.Errorf("%s: %w (no line of it was understood as one)", path, ErrUnknownFormat)
	}
	conv := imp.finish()
	if rep.Skipped > 0 {
		it := archive.ItemFromMap(map[string]any{"id": newID(), "type": archive.TypeNotice, "text": skippedText(rep)})
		conv.Items = append(conv.Items, it)
	}
	// A conversation a save could not write, or spbridge not read back,
	// keeps what fits: the newest.
	omitted, err := conv.Fit(o.MaxSize)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if omitted != "" {
		rep.Omitted = omitted
		it := archive.ItemFromMap(map[string]any{"id": newID(), "type": archive.TypeNotice, "text": omitted})
		conv.Items = append([]archive.Item{it}, conv.Items...)
	}
	rep.Model = conv.Model
	return conv, rep, nil
}

// skippedText is the notice of the lines an import skipped.
func skippedText(r *Report) string {
	s := "lines"
	if r.Skipped == 1 {
		s = "line"
	}
	text := strconv.Itoa(r.Skipped) + " " + s + " of the session file were not understood and were skipped"
	if r.Skipped == 1 {
		text = "1 line of the session file was not understood and was skipped"
	}
	if r.Partial {
		text += " (the last line was cut short)"
	}
	return text + "."
}

// importer maps one CLI's session file, a line at a time.
type importer interface {
	// line maps one line, false when it was not understood.
	line(line []byte) bool
	// finish ends the last turn and returns the conversation.
	finish() *archive.Conversation
}

// sniff tells which CLI wrote the file by its first lines: a Codex rollout
// begins with session_meta; Claude Code's lines carry a sessionId.
func sniff(f io.ReaderAt, size int64) string {
	found := ""
	n := 0
	headLines(f, size, func(line []byte) bool {
		n++
		v, ok := object(line)
		if !ok {
			return n < 20
		}
		switch {
		case v.Get("type").String() == "session_meta" && v.Get("payload").IsObject():
			found = Codex
		case v.Get("sessionId").Exists() || v.Get("type").String() == "summary" || v.Get("leafUuid").Exists():
			found = Claude
		}
		return found == "" && n < 20
	})
	return found
}

// turnState is what one imported turn holds until it ends: the user's
// message for the history and the items the turn began with.
type turnState struct {
	user   *archive.Message
	first  int // the conversation's item count when the turn began
	model  string
	active bool
}

// endTurn brings a turn's end into conv as a live turn's end is brought:
// the strings given memory of their own, the user's message, then the
// turn's history, usage, cost and model.
func endTurn(conv *archive.Conversation, t *turnState, end *itemmap.TurnEnd, provider string) {
	if end == nil {
		return
	}
	if end.Model == "" {
		end.Model = t.model
	}
	archive.CompactTurn(conv.Items[min(t.first, len(conv.Items)):], end.History)
	if t.user != nil {
		conv.History = append(conv.History, *t.user)
	}
	itemmap.Apply(conv, end, provider)
	*t = turnState{first: len(conv.Items)}
}

// apply brings a mapper's result's item changes into conv.
func apply(conv *archive.Conversation, r itemmap.Result) {
	for _, c := range r.Changes {
		itemmap.ApplyChange(conv, c)
	}
}
