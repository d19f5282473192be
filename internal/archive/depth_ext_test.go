package archive_test

import (
	"strings"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/jsonline"
)

// TestDepthHoldsACLILine checks MaxConversationDepth against the deepest
// line spbridge reads from a CLI: a value nested as deep, kept as an item's
// field, still loads.
func TestDepthHoldsACLILine(t *testing.T) {
	value := strings.Repeat("[", jsonline.MaxDepth) + strings.Repeat("]", jsonline.MaxDepth)
	if jsonline.TooDeep([]byte(value)) {
		t.Fatalf("a value of %d levels is too deep for a CLI line", jsonline.MaxDepth)
	}
	data := `{"formatVersion":1,"items":[{"id":"A","type":"reportedIssue","input":` + value + `}]}`
	if _, err := archive.Decode([]byte(data)); err != nil {
		t.Fatalf("a conversation holding a %d-level value as an item's field: %v", jsonline.MaxDepth, err)
	}
}
