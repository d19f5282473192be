package history

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"spbridge/internal/archive"
	"spbridge/internal/itemmap"
)

// ImportOptions tunes an import.
type ImportOptions struct {
	// NewID names the items made (nil: random UUIDs, as live turns do).
	NewID itemmap.IDFunc
	// Stores are the stores a file may be of, in the table's order.
	Stores []Store
	// MaxSize bounds the conversation made (0: archive.MaxConversationSize,
	// what a save writes and spbridge reads back); what does not fit is
	// left out (see archive.Conversation.Fit) and a notice says so.
	MaxSize int64
}

// Report says what an import read.
type Report struct {
	Backend string // the store's Name
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
	// Notices say what of the session could not be read (a part of it
	// missing or unreadable), as the conversation's notices do.
	Notices []string
	// Omitted says what was left out for the conversation to fit in what
	// spbridge keeps, as the notice that begins it says; "" when nothing.
	Omitted string
}

// ErrUnknownFormat is matched by the error of a file that is not a session
// file of any of the stores given.
var ErrUnknownFormat = errors.New("not a session file of a CLI spbridge reads")

// formatError is ErrUnknownFormat as the stores given say it: "not a
// <Display>, <Display> or <Display> session file".
type formatError struct{ stores []Store }

func (e *formatError) Error() string {
	if len(e.stores) == 0 {
		return ErrUnknownFormat.Error()
	}
	return "not a " + choices(e.stores, Store.Display) + " session file"
}

func (e *formatError) Is(target error) bool { return target == ErrUnknownFormat }

// Import reads the session e and returns it as a format-1 conversation:
// items as live turns make them, the history in the neutral form, usage,
// cost and model. The file is only read.
func Import(e Entry, o ImportOptions) (*archive.Conversation, *Report, error) {
	return ImportFile(e.Backend, e.Path, o)
}

// ImportFile imports the session file at path; backend names its store
// (of o.Stores), or is "" to tell by its content. A file that is not a regular file (a
// symbolic link is not followed), or does not look like a session of the
// CLI, is an error; lines it does not understand are skipped and counted.
func ImportFile(backend, path string, o ImportOptions) (*archive.Conversation, *Report, error) {
	var store Store
	if backend != "" {
		i := slices.IndexFunc(o.Stores, func(s Store) bool { return s.Name() == backend })
		if i < 0 {
			return nil, nil, fmt.Errorf("unknown backend %q: %s", backend, choices(o.Stores, Store.Name))
		}
		store = o.Stores[i]
	}
	if store == nil {
		sf, err := OpenSession(path, headScan)
		if err != nil {
			return nil, nil, err
		}
		store = sniff(o.Stores, sf)
		sf.Close()
		if store == nil {
			return nil, nil, fmt.Errorf("%s: %w", path, &formatError{o.Stores})
		}
	}
	src, err := openSource(store, path)
	if err != nil {
		return nil, nil, err
	}
	defer src.Close()
	newID := o.NewID
	if newID == nil {
		newID = archive.NewID
	}
	rep := &Report{Backend: store.Name(), Path: path}
	lr := NewLineReader(src)
	imp := store.NewImporter(newID, rep)
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
		if imp.Line(line) {
			understood++
		} else {
			rep.Skipped++
		}
	}
	if err := lr.Err(); err != nil {
		var ce *CorruptError
		var ee *ExpandError
		if errors.As(err, &ce) || errors.As(err, &ee) {
			return nil, nil, err // it names the file
		}
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	rep.TooLong = lr.TooLong
	rep.Skipped += lr.TooLong
	rep.Partial = lr.Partial && rep.Skipped > 0
	if understood == 0 {
		return nil, nil, fmt.Errorf("%s: %w (no line of it was understood as one)", path, &formatError{[]Store{store}})
	}
	conv := imp.Finish()
	for _, n := range src.Notices() {
		rep.Notices = append(rep.Notices, n)
		conv.Items = append(conv.Items, archive.ItemFromMap(map[string]any{"id": newID(), "type": archive.TypeNotice, "text": n}))
	}
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

// Importer maps one CLI's session file, a line at a time.
type Importer interface {
	// Line maps one line (its spaces trimmed, valid UTF-8, not empty),
	// false when it was not understood.
	Line(line []byte) bool
	// Finish ends the last turn and returns the conversation.
	Finish() *archive.Conversation
}

// Opener is a Store whose session is read from more than the one file
// it lists (a thread kept over several files): Open gives the session's
// lines, from its start, as one stream.
type Opener interface {
	Open(path string) (Source, error)
}

// Source is a session's content as an import reads it.
type Source interface {
	io.Reader
	Close() error
	// Notices say, once it was read, what of the session could not be
	// (a part missing or unreadable): each a sentence, shown as a
	// notice at the conversation's end.
	Notices() []string
}

// openSource opens the session at path of store: through its Opener,
// else the one file.
func openSource(store Store, path string) (Source, error) {
	if op, ok := store.(Opener); ok {
		return op.Open(path)
	}
	sf, err := OpenSession(path, 0)
	if err != nil {
		return nil, err
	}
	return fileSource{sf}, nil
}

type fileSource struct{ *SessionFile }

func (fileSource) Notices() []string { return nil }

// sniff is the store that wrote the file, told by its first lines: the
// first of stores a line of the first 20 shows; nil when none does.
func sniff(stores []Store, sf *SessionFile) Store {
	var found Store
	n := 0
	sf.Head(func(line []byte) bool {
		n++
		v, ok := Object(line)
		if !ok {
			return n < 20
		}
		for _, s := range stores {
			if s.Sniff(v) {
				found = s
				break
			}
		}
		return found == nil && n < 20
	})
	return found
}

// Turn is what one imported turn holds until it ends: the user's message
// for the history and the items the turn began with.
type Turn struct {
	User   *archive.Message
	First  int    // the conversation's item count when the turn began
	Model  string // the model, when the turn's end does not say it
	Active bool   // the turn has begun
}

// EndTurn brings a turn's end into conv as a live turn's end is brought:
// the strings given memory of their own, the user's message, then the
// turn's history, usage, cost and model; t begins again after it.
func EndTurn(conv *archive.Conversation, t *Turn, end *itemmap.TurnEnd, provider string) {
	if end == nil {
		return
	}
	if end.Model == "" {
		end.Model = t.Model
	}
	archive.CompactTurn(conv.Items[min(t.First, len(conv.Items)):], end.History)
	if t.User != nil {
		conv.History = append(conv.History, *t.User)
	}
	itemmap.Apply(conv, end, provider)
	*t = Turn{First: len(conv.Items)}
}

// ApplyResult brings a mapper's result's item changes into conv.
func ApplyResult(conv *archive.Conversation, r itemmap.Result) {
	for _, c := range r.Changes {
		itemmap.ApplyChange(conv, c)
	}
}
