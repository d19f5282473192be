package search

import (
	"bufio"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"unicode/utf8"

	"spbridge/internal/archive"
	"spbridge/internal/restore"
)

// Bounds of what is indexed of a conversation: a tool's arguments and
// output, and a thinking block, are kept to their first maxDetail bytes; a
// message to its first maxText bytes; a conversation to its first maxDoc
// bytes of text (the rest is not searched).
const (
	maxDetail = 8 << 10
	maxText   = 256 << 10
	maxDoc    = 16 << 20
)

// Segment is one part of a conversation's text as the index keeps it: what
// it is (Label: "User", "Assistant", "Tool Bash"…) and its text.
type Segment struct {
	Label string
	Text  string
}

// Segments is the text of items that a search looks in: the user's and
// the assistant's messages, thinking, each tool's name, summary, status,
// arguments and output (bounded), failures, questions, plans and web
// searches. Notices, approvals and the host's own items are left out, as
// is the "# Conversation so far" prefix a reopened conversation told a new
// CLI session (it is in no item spbridge makes; a CLI's own session that
// recorded it as the user's message keeps only the words after it).
// Invalid UTF-8 reads as U+FFFD.
func Segments(items []archive.Item) []Segment {
	var out []Segment
	total := 0
	add := func(label, text string, limit int) bool {
		text = cut(text, limit)
		if strings.TrimSpace(text) == "" {
			return true
		}
		if total+len(text) > maxDoc {
			text = cut(text, maxDoc-total)
		}
		total += len(text)
		out = append(out, Segment{Label: label, Text: text})
		return total < maxDoc
	}
	for _, it := range items {
		var more bool
		switch it.Type() {
		case archive.TypeUser:
			more = add("User", userWords(it.String("text")), maxText)
		case archive.TypeAssistant:
			more = add("Assistant", it.String("text"), maxText)
		case archive.TypeThinking:
			more = add("Thinking", it.String("text"), maxDetail)
		case archive.TypeTool:
			label := "Tool"
			if n := it.String("name"); n != "" {
				label += " " + cut(n, 200)
			}
			var b strings.Builder
			for _, part := range []string{it.String("summary"), it.String("statusText"), cut(it.String("detail"), maxDetail)} {
				if part == "" {
					continue
				}
				if b.Len() > 0 {
					b.WriteByte('\n')
				}
				b.WriteString(part)
			}
			more = add(label, b.String(), maxDetail+2048)
		case archive.TypeFailure:
			more = add("Failure", it.String("text"), maxText)
		case archive.TypeQuestions:
			var qs []string
			list, _ := it.Get("questions").([]any)
			for _, q := range list {
				m, _ := q.(map[string]any)
				if s, _ := m["question"].(string); s != "" {
					qs = append(qs, s)
				}
			}
			more = add("Questions", strings.Join(qs, "\n"), maxText)
		case archive.TypeDirections:
			more = add("Plan", it.String("text"), maxText)
		case archive.TypeWebSearch:
			more = add("Web search", it.String("query"), maxDetail)
		default:
			more = true
		}
		if !more {
			break
		}
	}
	return out
}

// userWords is a user item's text without a restore prefix: when the text
// opens with the prefix's heading (a CLI's own session of a turn that was
// told the conversation so far), only what follows its last blank line,
// which is the user's words or their end, never the prefix.
func userWords(text string) string {
	if !strings.HasPrefix(text, restore.Heading) {
		return text
	}
	i := strings.LastIndex(text, "\n\n")
	if i < 0 {
		return ""
	}
	return text[i+2:]
}

// cut is s made valid UTF-8 and cut to at most n bytes on a character
// boundary.
func cut(s string, n int) string {
	if len(s) > n {
		i := max(n, 0)
		for i > 0 && i > n-utf8.UTFMax && !utf8.RuneStart(s[i]) {
			i--
		}
		s = s[:i]
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return s
}

// body is the segments' text as the full-text index reads it.
func body(segs []Segment) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteString(s.Text)
		b.WriteByte('\n')
	}
	return b.String()
}

// encodeSegments is the segments as the index stores them for snippets:
// each label and text length-prefixed, compressed.
func encodeSegments(segs []Segment) ([]byte, error) {
	var buf bytes.Buffer
	w, err := flate.NewWriter(&buf, flate.BestSpeed)
	if err != nil {
		return nil, err
	}
	var n [binary.MaxVarintLen64]byte
	for _, s := range segs {
		for _, f := range []string{s.Label, s.Text} {
			w.Write(n[:binary.PutUvarint(n[:], uint64(len(f)))])
			io.WriteString(w, f)
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

var errBadText = errors.New("stored text is damaged")

// decodeSegments reads what encodeSegments wrote.
func decodeSegments(data []byte) ([]Segment, error) {
	var out []Segment
	err := readSegments(data, func(s Segment) bool {
		out = append(out, s)
		return true
	})
	return out, err
}

// readSegments calls fn with each segment encodeSegments wrote in data,
// in order, until fn returns false, decompressing no more than it reads.
func readSegments(data []byte, fn func(Segment) bool) error {
	fr := flate.NewReader(bytes.NewReader(data))
	defer fr.Close()
	r := bufio.NewReaderSize(io.LimitReader(fr, 2*maxDoc), 64<<10)
	field := func() (string, error) {
		n, err := binary.ReadUvarint(r)
		if err != nil {
			return "", err
		}
		if n > maxDoc {
			return "", errBadText
		}
		buf := make([]byte, n)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", errBadText
		}
		return string(buf), nil
	}
	for {
		label, err := field()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return errBadText
		}
		text, err := field()
		if err != nil {
			return errBadText
		}
		if !fn(Segment{Label: label, Text: text}) {
			return nil
		}
	}
}
