package transcript

import (
	"strings"
	"testing"

	"github.com/rivo/uniseg"

	"spbridge/internal/archive"
)

func item(fields map[string]any) archive.Item { return archive.ItemFromMap(fields) }

func TestText(t *testing.T) {
	items := []archive.Item{
		item(map[string]any{"id": "1", "type": "user", "text": "Make a card", "hasImage": true}),
		item(map[string]any{"id": "2", "type": "thinking", "text": "hidden"}),
		item(map[string]any{"id": "3", "type": "tool", "name": "Bash", "summary": "ls", "statusText": "exit 0"}),
		item(map[string]any{"id": "4", "type": "tool", "name": "Read", "summary": "a.txt"}),
		item(map[string]any{"id": "5", "type": "tool", "name": "Glob", "statusText": "3 files"}),
		item(map[string]any{"id": "6", "type": "tool", "name": "Task"}),
		item(map[string]any{"id": "7", "type": "notice", "text": "hidden"}),
		item(map[string]any{"id": "8", "type": "toolApproval", "name": "Bash", "summary": "hidden"}),
		item(map[string]any{"id": "9", "type": "questions", "questions": []any{map[string]any{"question": "Which?", "options": []any{"a"}}, map[string]any{"question": "When?"}}}),
		item(map[string]any{"id": "10", "type": "directions", "text": "1. a"}),
		item(map[string]any{"id": "11", "type": "webSearch", "query": "go flock"}),
		item(map[string]any{"id": "12", "type": "failure", "text": "API Error"}),
		item(map[string]any{"id": "13", "type": "skillProposal", "text": "hidden"}),
		item(map[string]any{"id": "14", "type": "assistant", "text": "Made a card."}),
		item(map[string]any{"id": "15", "type": "user", "text": "plain"}),
	}
	want := "User: Make a card [image]\n\nTool Bash: ls (exit 0)\n\nTool Read: a.txt\n\nTool Glob (3 files)\n\nTool Task\n\n" +
		"Questions: Which? When?\n\nPlan: 1. a\n\nWeb search: go flock\n\nFailure: API Error\n\nAssistant: Made a card.\n\nUser: plain"
	if got := Text(items, nil); got != want {
		t.Errorf("Text =\n%q\nwant\n%q", got, want)
	}
	if got := Text(nil, nil); got != "" {
		t.Errorf("Text(nil) = %q", got)
	}
}

// TestTextImages: the history tells a kept image from one the saved
// conversation dropped, for each user item that had images.
func TestTextImages(t *testing.T) {
	img, err := archive.NewImageBlock("image/png", []byte("png bytes"))
	if err != nil {
		t.Fatal(err)
	}
	omitted := archive.BlockFromMap(map[string]any{"type": archive.BlockImageOmitted, "mimeType": "image/png"})
	msg := func(role, text string, blocks ...archive.Block) archive.Message {
		return archive.Message{Role: role, Content: append([]archive.Block{archive.NewTextBlock(text)}, blocks...)}
	}
	user := func(id, text string, image bool) archive.Item {
		f := map[string]any{"id": id, "type": "user", "text": text}
		if image {
			f["hasImage"] = true
		}
		return item(f)
	}
	o := archive.ImageOmittedText
	tests := []struct {
		name    string
		items   []archive.Item
		history []archive.Message
		want    string
	}{
		{"kept", []archive.Item{user("1", "a", true)}, []archive.Message{msg("user", "a", img)}, "User: a [image]"},
		{"omitted", []archive.Item{user("1", "a", true)}, []archive.Message{msg("user", "a", omitted)}, "User: a " + o},
		{"two omitted, one kept", []archive.Item{user("1", "a", true)}, []archive.Message{msg("user", "a", omitted, img, omitted)}, "User: a " + o + " [image] " + o},
		{"no history", []archive.Item{user("1", "a", true)}, nil, "User: a [image]"},
		{"no match", []archive.Item{user("1", "a", true)}, []archive.Message{msg("user", "b", omitted)}, "User: a [image]"},
		{"in order, same text twice",
			[]archive.Item{user("1", "a", true), user("2", "a", true)},
			[]archive.Message{msg("user", "a", img), msg("assistant", "ok"), msg("user", "a", omitted)},
			"User: a [image]\n\nUser: a " + o},
		{"a message without image between",
			[]archive.Item{user("1", "x", false), user("2", "y", true)},
			[]archive.Message{msg("user", "x"), msg("user", "y", omitted)},
			"User: x\n\nUser: y " + o},
		{"the host's context before the text, and a user message without an item",
			[]archive.Item{user("1", "Make a card", true), user("2", "next", true)},
			[]archive.Message{msg("user", "# This turn\n\nMake a card", img), msg("user", "Here is the image", omitted), msg("user", "next", omitted)},
			"User: Make a card [image]\n\nUser: next " + o},
	}
	for _, tt := range tests {
		if got := Text(tt.items, tt.history); got != tt.want {
			t.Errorf("%s: Text = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestTailBoundaries(t *testing.T) {
	family := "👨‍👩‍👧‍👦"    // ZWJ sequence: one character
	thumbs := "👍🏽"         // skin tone: one character
	flag := "🇯🇵"           // regional indicators: one character
	combining := "e\u0301" // e + combining acute: one character
	crlf := "\r\n"         // one character
	for _, ch := range []string{family, thumbs, flag, combining, crlf, "a", "é"} {
		if n := uniseg.GraphemeClusterCount(ch); n != 1 {
			t.Fatalf("%q is %d clusters", ch, n)
		}
		// A transcript of exactly TailLength characters comes back whole.
		exact := strings.Repeat(ch, TailLength)
		if got := Tail(exact, TailLength); got != exact {
			t.Errorf("%q × %d: tail is %d characters", ch, TailLength, uniseg.GraphemeClusterCount(got))
		}
		// One more: the first character goes, whole.
		over := "X" + exact
		if got := Tail(over, TailLength); got != exact {
			t.Errorf("%q: X + %d: tail starts with %q", ch, TailLength, got[:min(8, len(got))])
		}
		// Cut just inside a character: never split it.
		mixed := strings.Repeat("ab", 5) + ch + "cd"
		for n := 1; n <= 13; n++ {
			got := Tail(mixed, n)
			if uniseg.GraphemeClusterCount(got) != n || !strings.HasSuffix(mixed, got) {
				t.Errorf("Tail(%q, %d) = %q", mixed, n, got)
			}
		}
	}
	if got := Tail("abc", 0); got != "" {
		t.Errorf("Tail(n=0) = %q", got)
	}
	if got := Tail("abc", 5); got != "abc" {
		t.Errorf("Tail(short) = %q", got)
	}
}

func BenchmarkTail(b *testing.B) {
	s := strings.Repeat("User: hello 👍🏽 wörld\n\n", 20000)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		Tail(s, TailLength)
	}
}

// TestTailMatchesFullCount checks the line-feed shortcut against counting
// every cluster from the start.
func TestTailMatchesFullCount(t *testing.T) {
	unit := "User: héllo 👨‍👩‍👧‍👦 e\u0301\r\n\r\nAssistant: 🇯🇵👍🏽 ok\n\n"
	for _, reps := range []int{1, 7, 300, 2000} {
		s := strings.Repeat(unit, reps)
		for _, n := range []int{1, 5, 37, 1000, TailLength} {
			want, _ := lastClusters(s, n)
			if got := Tail(s, n); got != want {
				t.Errorf("reps %d n %d: Tail differs from the full count", reps, n)
			}
		}
	}
}
