package archive_test

import (
	"strings"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/itemmap"
)

// TestDepthHoldsACLILine checks MaxConversationDepth against the deepest
// line spbridge reads from a CLI: a value nested as deep, kept as an item's
// field, still loads.
func TestDepthHoldsACLILine(t *testing.T) {
	value := strings.Repeat("[", itemmap.MaxDepth) + strings.Repeat("]", itemmap.MaxDepth)
	if itemmap.TooDeep([]byte(value)) {
		t.Fatalf("a value of %d levels is too deep for a CLI line", itemmap.MaxDepth)
	}
	data := `{"formatVersion":1,"items":[{"id":"A","type":"reportedIssue","input":` + value + `}]}`
	if _, err := archive.Decode([]byte(data)); err != nil {
		t.Fatalf("a conversation holding a %d-level value as an item's field: %v", itemmap.MaxDepth, err)
	}
}
