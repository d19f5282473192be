package archive

import (
	"bytes"
	"strings"
	"testing"
	"unsafe"
)

// line is what sharedTurn's strings are cut from, as a JSON reader's are
// cut from a CLI's line.
const line = "reply text|whole output\nline 2|long output"

// sharedTurn is a turn whose history repeats what its items show: the
// assistant's text, and a tool's output whole (at the end of its detail)
// and cut short.
func sharedTurn(src string) ([]Item, []Message) {
	reply, whole, long := src[:10], src[11:30], src[31:]
	asst := NewItem(TypeAssistant)
	asst.Set("text", reply)
	tool := NewItem(TypeTool)
	tool.Set("detail", "arguments:\n{}\n\n"+detailOutput+whole)
	cut := NewItem(TypeTool)
	cut.Set("detail", detailOutput+long[:4]+"\n… (7 more bytes)")
	items := []Item{asst, tool, cut}
	history := []Message{{Role: "assistant", Content: []Block{
		NewTextBlock(reply),
		NewToolCallBlock("c1", "Bash", "{}"),
		NewToolResultBlock("c1", "Bash", whole, false),
		NewToolCallBlock("c2", "Bash", "{}"),
		NewToolResultBlock("c2", "Bash", long, false),
	}}}
	return items, history
}

// within reports whether s's bytes lie inside those of outer.
func within(s, outer string) bool {
	p, o := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.StringData(outer)))
	return p >= o && p+uintptr(len(s)) <= o+uintptr(len(outer))
}

func TestCompactTurnShares(t *testing.T) {
	from := strings.Clone(line)
	items, history := sharedTurn(from)
	conv := &Conversation{Items: items, History: history}
	before, err := conv.Encode()
	if err != nil {
		t.Fatal(err)
	}
	CompactTurn(items, history)
	after, _ := conv.Encode()
	if !bytes.Equal(before, after) {
		t.Fatalf("CompactTurn changed the encoding:\n%s\nwant\n%s", after, before)
	}
	blocks := history[0].Content
	if !within(blocks[0].String("text"), items[0].String("text")) {
		t.Error("the text block does not share the assistant item's text")
	}
	if !within(blocks[2].String("content"), items[1].String("detail")) {
		t.Error("the tool result does not share the tool item's detail")
	}
	if within(blocks[4].String("content"), items[2].String("detail")) {
		t.Error("a tool result shares a detail that holds only part of it")
	}
	if within(blocks[4].String("content"), from) {
		t.Error("a tool result still holds the line it was read from")
	}
}

func TestDecodeShares(t *testing.T) {
	items, history := sharedTurn(strings.Clone(line))
	data, err := (&Conversation{Items: items, History: history}).Encode()
	if err != nil {
		t.Fatal(err)
	}
	conv, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := conv.Encode()
	if !bytes.Equal(again, data) {
		t.Fatalf("decoded conversation encodes as\n%s\nwant\n%s", again, data)
	}
	text := func(typ string) string {
		for _, it := range conv.Items {
			if it.Type() == typ {
				if typ == TypeAssistant {
					return it.String("text")
				}
				return it.String("detail")
			}
		}
		return ""
	}
	blocks := conv.History[0].Content
	if !within(blocks[0].String("text"), text(TypeAssistant)) {
		t.Error("the decoded text block does not share the assistant item's text")
	}
	if !within(blocks[2].String("content"), text(TypeTool)) {
		t.Error("the decoded tool result does not share the tool item's detail")
	}
}
