package restore

import (
	"strings"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/transcript"
)

func items(pairs ...string) []archive.Item {
	var out []archive.Item
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, archive.ItemFromMap(map[string]any{"id": pairs[i] + "-id", "type": pairs[i], "text": pairs[i+1]}))
	}
	return out
}

func TestRestoredTurns(t *testing.T) {
	saved := items("user", "hi", "assistant", "hello")
	s := Restored(saved)
	want := "# Conversation so far\nUser: hi\n\nAssistant: hello\n\n# New message\n\nnext please"
	if got := s.Context("claude", saved, nil) + "next please"; got != want {
		t.Fatalf("first turn = %q, want %q", got, want)
	}
	// The turn failed before the CLI took it: the prefix is still owed.
	now := append(saved, items("user", "next please", "failure", "claude not found")...)
	if got := s.Context("claude", now, nil) + "again"; !strings.HasPrefix(got, Heading+"User: hi\n\nAssistant: hello\n\n") || !strings.HasSuffix(got, "\n\nagain") {
		t.Errorf("after a failed start = %q", got)
	}
	s.Established("claude")
	if got := s.Context("claude", now, nil) + "third"; got != "third" {
		t.Errorf("after the session = %q", got)
	}
	// Another backend is a reopen: told about everything so far.
	got := s.Context("codex", now, nil) + "fourth"
	if !strings.HasPrefix(got, Heading) || !strings.Contains(got, "Failure: claude not found") || !strings.HasSuffix(got, "\n\nfourth") {
		t.Errorf("after a switch = %q", got)
	}
	s.Established("codex")
	if got := s.Context("codex", now, nil) + "fifth"; got != "fifth" {
		t.Errorf("after the codex session = %q", got)
	}
}

func TestNoPrefix(t *testing.T) {
	var s State // not restored
	if got := s.Context("claude", items("user", "a"), nil) + "b"; got != "b" {
		t.Errorf("not restored = %q", got)
	}
	// Restored, but nothing in it has a transcript.
	r := Restored(items("notice", "could not read", "thinking", "hmm"))
	if got := r.Context("claude", nil, nil) + "b"; got != "b" {
		t.Errorf("empty transcript = %q", got)
	}
	if got := Restored(nil).Context("claude", nil, nil) + "b"; got != "b" {
		t.Errorf("no items = %q", got)
	}
}

func TestPrefixTail(t *testing.T) {
	long := strings.Repeat("x", 30000)
	p := Prefix(items("user", long+"MARK"), nil)
	body := strings.TrimSuffix(strings.TrimPrefix(p, Heading), Closing)
	if len(body) != transcript.TailLength || !strings.HasSuffix(body, "MARK") {
		t.Errorf("prefix body is %d characters ending %q", len(body), body[len(body)-4:])
	}
}

// TestOmittedImage: after a reopen, an image the saved conversation dropped
// is told as the placeholder, one it kept as [image].
func TestOmittedImage(t *testing.T) {
	img, err := archive.NewImageBlock("image/png", []byte("png bytes"))
	if err != nil {
		t.Fatal(err)
	}
	omitted := archive.BlockFromMap(map[string]any{"type": archive.BlockImageOmitted, "mimeType": "image/png"})
	user := func(text string, blocks ...archive.Block) archive.Message {
		return archive.Message{Role: "user", Content: append([]archive.Block{archive.NewTextBlock(text)}, blocks...)}
	}
	withImage := func(id, text string) archive.Item {
		return archive.ItemFromMap(map[string]any{"id": id, "type": "user", "text": text, "hasImage": true})
	}
	saved := []archive.Item{withImage("1", "look"), withImage("2", "and this")}
	history := []archive.Message{user("look", omitted), {Role: "assistant", Content: []archive.Block{archive.NewTextBlock("ok")}}, user("and this", img)}
	s := Restored(saved)
	want := Heading + "User: look " + archive.ImageOmittedText + "\n\nUser: and this [image]" + Closing + "next"
	if got := s.Context("claude", saved, history) + "next"; got != want {
		t.Errorf("Context + text =\n%q\nwant\n%q", got, want)
	}
}

// TestResetBoundary: what came before a reset of the CLI's context (the
// last one) is not told; a compaction's notice is no reset, and an image
// after the reset is told apart as among all the items.
func TestResetBoundary(t *testing.T) {
	reset := archive.ItemFromMap(map[string]any{"id": "r", "type": "notice", "text": "Context cleared", archive.ContextReset: "clear"})
	reset2 := archive.ItemFromMap(map[string]any{"id": "r2", "type": "notice", "text": "Context cleared", archive.ContextReset: "clear"})
	compacted := items("notice", "Compacted: the summary")
	saved := append(items("user", "PRE-1", "assistant", "PRE-2"), reset)
	saved = append(saved, items("user", "MID-1", "assistant", "MID-2")...)
	saved = append(saved, reset2)
	saved = append(saved, compacted...)
	saved = append(saved, items("user", "POST-1", "assistant", "POST-2")...)
	got := Restored(saved).Context("claude", saved, nil)
	if want := Heading + "User: POST-1\n\nAssistant: POST-2" + Closing; got != want {
		t.Errorf("after two resets = %q, want %q", got, want)
	}
	// Nothing after the reset: nothing is told.
	only := append(items("user", "PRE-1", "assistant", "PRE-2", "user", "/clear"), reset)
	if got := Restored(only).Context("claude", only, nil); got != "" {
		t.Errorf("nothing after the reset = %q", got)
	}
	// A compaction alone keeps everything.
	kept := append(items("user", "PRE-1"), compacted...)
	kept = append(kept, items("user", "POST-1")...)
	if got := Prefix(kept, nil); !strings.Contains(got, "PRE-1") || !strings.Contains(got, "POST-1") {
		t.Errorf("after a compaction = %q", got)
	}
	// The same user text before and after the reset: the image told is
	// the later message's (omitted), not the earlier's (kept).
	kept1, err := archive.NewImageBlock("image/png", []byte("png bytes"))
	if err != nil {
		t.Fatal(err)
	}
	omitted := archive.BlockFromMap(map[string]any{"type": archive.BlockImageOmitted, "mimeType": "image/png"})
	img := archive.ItemFromMap(map[string]any{"id": "u2", "type": "user", "text": "look", "hasImage": true})
	withImg := []archive.Item{archive.ItemFromMap(map[string]any{"id": "u1", "type": "user", "text": "look", "hasImage": true}), reset, img}
	history := []archive.Message{
		{Role: "user", Content: []archive.Block{archive.NewTextBlock("look"), kept1}},
		{Role: "user", Content: []archive.Block{archive.NewTextBlock("look"), omitted}},
	}
	if got, want := Prefix(withImg, history), Heading+"User: look "+archive.ImageOmittedText+Closing; got != want {
		t.Errorf("image after the reset = %q, want %q", got, want)
	}
}

// TestSplit: the user's words of a message that began with the prefix,
// as Prefix writes it, and as it was written before Closing; a message
// without it is itself.
func TestSplit(t *testing.T) {
	its := items("user", "hi", "assistant", "hello\n\nwith a blank line")
	for _, words := range []string{"again", "two\n\nparagraphs", ""} {
		if got, ok := Split(Prefix(its, nil) + words); !ok || got != words {
			t.Errorf("%q: %q %v", words, got, ok)
		}
	}
	if got, ok := Split(Heading + "User: hi\n\nAssistant: hello\n\nagain"); !ok || got != "again" {
		t.Errorf("older prefix: %q %v", got, ok)
	}
	if got, ok := Split("plain words"); ok || got != "plain words" {
		t.Errorf("no prefix: %q %v", got, ok)
	}
}
