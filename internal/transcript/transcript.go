// Package transcript renders a conversation's items as plain text, the form
// a fresh CLI session is told what was said before.
package transcript

import (
	"strings"

	"github.com/rivo/uniseg"

	"spbridge/internal/archive"
)

// Text is transcriptText(items): the conversation as plain text, one block
// per item in order, blocks joined by one blank line:
//
//	user        User: <text>  (and " [image]" when hasImage; each image the
//	            history holds as imageOmitted is archive.ImageOmittedText)
//	assistant   Assistant: <text>
//	tool        Tool <name>: <summary> (<statusText>), an empty part and its
//	            punctuation left out
//	failure     Failure: <text>
//	questions   Questions: and the questions joined by a space
//	directions  Plan: <text>
//	webSearch   Web search: <query>
//
// thinking, notice, toolApproval and the host's own types are left out.
// history is the conversation's history (nil when unknown): a user item's
// images are told apart there, since the item only says it had some.
func Text(items []archive.Item, history []archive.Message) string {
	return TextFrom(items, history, 0)
}

// TextFrom is Text of items[from:], whose user items are told apart in
// history as among all of items.
func TextFrom(items []archive.Item, history []archive.Message, from int) string {
	images := userImages(items, history)
	var b strings.Builder
	for i := max(from, 0); i < len(items); i++ {
		it := items[i]
		block, ok := itemText(it)
		if !ok {
			continue
		}
		if it.Type() == archive.TypeUser && it.Bool("hasImage") {
			if s, ok := images[i]; ok {
				block += s
			} else {
				block += " [image]"
			}
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(block)
	}
	return b.String()
}

// userImages returns, by item index, how the images of each user item with
// hasImage read in the transcript, as far as the history tells: " [image]"
// when it kept one, and the omitted-image placeholder for each it holds as
// imageOmitted. An item with no history message (UserMessages) is left out.
func userImages(items []archive.Item, history []archive.Message) map[int]string {
	var out map[int]string
	for i, msg := range UserMessages(items, history) {
		if !items[i].Bool("hasImage") {
			continue
		}
		var s string
		kept := false
		for _, b := range msg.Content {
			switch b.Type() {
			case archive.BlockImage:
				if !kept {
					s += " [image]"
					kept = true
				}
			case archive.BlockImageOmitted:
				s += " " + archive.ImageOmittedText
			}
		}
		if s == "" {
			continue
		}
		if out == nil {
			out = make(map[int]string)
		}
		out[i] = s
	}
	return out
}

// UserMessages pairs the user items with their history messages: by item
// index, the message each user item was sent as. A user item is matched
// with the next user message of the history whose text is the item's (or
// ends with it, as a host that adds context before the message writes
// it); an item with no match is left out.
func UserMessages(items []archive.Item, history []archive.Message) map[int]archive.Message {
	if len(history) == 0 {
		return nil
	}
	// The text of each user message, read once.
	var users []userMsg
	for _, m := range history {
		if m.Role != "user" {
			continue
		}
		var t strings.Builder
		for _, b := range m.Content {
			if b.Type() == archive.BlockText {
				t.WriteString(b.String("text"))
			}
		}
		users = append(users, userMsg{t.String(), m})
	}
	var out map[int]archive.Message
	next := 0 // the first user message not matched yet
	for i, it := range items {
		if it.Type() != archive.TypeUser {
			continue
		}
		j := matchUser(users[next:], it.String("text"))
		if j < 0 {
			continue
		}
		if out == nil {
			out = make(map[int]archive.Message)
		}
		out[i] = users[next+j].msg
		next += j + 1
	}
	return out
}

type userMsg struct {
	text string
	msg  archive.Message
}

// matchUser returns the index of the first of users whose text is text,
// else of the first whose text ends with it, else -1.
func matchUser(users []userMsg, text string) int {
	suffix := -1
	for j, u := range users {
		switch {
		case u.text == text:
			return j
		case suffix < 0 && text != "" && strings.HasSuffix(u.text, text):
			suffix = j
		}
	}
	return suffix
}

func itemText(it archive.Item) (string, bool) {
	switch it.Type() {
	case archive.TypeUser:
		return "User: " + it.String("text"), true
	case archive.TypeAssistant:
		return "Assistant: " + it.String("text"), true
	case archive.TypeTool:
		s := "Tool"
		if n := it.String("name"); n != "" {
			s += " " + n
		}
		if sum := it.String("summary"); sum != "" {
			s += ": " + sum
		}
		if st := it.String("statusText"); st != "" {
			s += " (" + st + ")"
		}
		return s, true
	case archive.TypeFailure:
		return "Failure: " + it.String("text"), true
	case archive.TypeQuestions:
		var qs []string
		list, _ := it.Get("questions").([]any)
		for _, q := range list {
			m, _ := q.(map[string]any)
			if s, _ := m["question"].(string); s != "" {
				qs = append(qs, s)
			}
		}
		return "Questions: " + strings.Join(qs, " "), true
	case archive.TypeDirections:
		return "Plan: " + it.String("text"), true
	case archive.TypeWebSearch:
		return "Web search: " + it.String("query"), true
	}
	return "", false
}

// TailLength is how many characters of the transcript a fresh session is
// told.
const TailLength = 20_000

// Tail returns the last n characters of s, counted as extended grapheme
// clusters (user-perceived characters, as Swift's String counts them), never
// splitting one.
func Tail(s string, n int) string {
	if n <= 0 {
		return ""
	}
	// Most transcripts are short: a cluster is at least one byte.
	if len(s) <= n {
		return s
	}
	// A grapheme boundary always follows a line feed (nothing joins to a
	// control character), so the count can start at a line feed near the
	// end instead of at the start of a long transcript.
	for w := 4 * n; w < len(s); w *= 2 {
		i := strings.IndexByte(s[len(s)-w:], '\n')
		if i < 0 {
			continue
		}
		if t, ok := lastClusters(s[len(s)-w+i+1:], n); ok {
			return t
		}
	}
	t, _ := lastClusters(s, n)
	return t
}

// lastClusters returns the last n grapheme clusters of s, and whether s had
// at least n (when not, all of s).
func lastClusters(s string, n int) (string, bool) {
	starts := make([]int, n) // where each of the last n clusters starts, as a ring
	count := 0
	g := uniseg.NewGraphemes(s)
	for g.Next() {
		from, _ := g.Positions()
		starts[count%n] = from
		count++
	}
	if count < n {
		return s, false
	}
	return s[starts[count%n]:], true
}
