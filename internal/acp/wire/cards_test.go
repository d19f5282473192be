package wire

import (
	"testing"

	"spbridge/internal/itemmap"
)

// TestPermissionCard: a permission request's toolCall names the CLI's
// tool and says what the terminal says of the call: what it is for, the
// model's justification, and that it runs outside the sandbox.
func TestPermissionCard(t *testing.T) {
	a := itemmap.Approval{ToolName: "shell", Input: []byte(`{"command":"rm -f *"}`), Reason: "Clean it outside the sandbox?",
		Escalated: true, Tool: &itemmap.ToolView{Kind: itemmap.KindExecute, Title: "`rm -f *`", Description: "Clean the folder"}}
	tc := PermissionToolCall("t1", a, "/w")
	if tc["name"] != "shell" || tc["title"] != "`rm -f *`" {
		t.Errorf("toolCall %v", tc)
	}
	content, _ := tc["content"].([]any)
	if len(content) != 1 {
		t.Fatalf("content %v", content)
	}
	text := content[0].(map[string]any)["content"].(map[string]any)["text"]
	if want := "Clean the folder\n\nReason: Clean it outside the sandbox?\n\nRuns outside the sandbox."; text != want {
		t.Errorf("text %q, want %q", text, want)
	}
	a.Reason, a.Escalated, a.Tool = "", false, nil
	if tc := PermissionToolCall("t1", a, "/w"); tc["content"] != nil {
		t.Errorf("a request with nothing to say has content %v", tc["content"])
	}
}
