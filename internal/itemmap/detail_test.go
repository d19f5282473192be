package itemmap

import "testing"

func TestDetailOutput(t *testing.T) {
	for _, tt := range []struct {
		detail, text string
		output       bool
	}{
		{"arguments:\n{\n  \"file_path\": \"/w/a.txt\"\n}\n\noutput:\n1\talpha\n\n2\tbeta", "1\talpha\n\n2\tbeta", true},
		{"arguments:\n{\n  \"file_path\": \"/w/a.txt\"\n}", "", false},
		{"output:\nexit 1", "exit 1", true},
		{"The user doesn't want to proceed.", "The user doesn't want to proceed.", false},
		{"", "", false},
	} {
		text, output := DetailOutput(tt.detail)
		if text != tt.text || output != tt.output {
			t.Errorf("DetailOutput(%q) = %q, %v; want %q, %v", tt.detail, text, output, tt.text, tt.output)
		}
	}
}

// TestDetailDescription: a Bash call's description is read from its
// detail's arguments; another tool's, or arguments without one, give "".
func TestDetailDescription(t *testing.T) {
	for _, tt := range []struct{ name, detail, want string }{
		{"Bash", "arguments:\n{\n  \"command\": \"echo hi\",\n  \"description\": \"Say hi\"\n}\n\noutput:\nhi", "Say hi"},
		{"Bash", "arguments:\n{\n  \"command\": \"ls\"\n}", ""},
		{"Bash", "output:\n\"description\": \"no\"", ""},
		{"Read", "arguments:\n{\n  \"description\": \"x\"\n}", ""},
	} {
		if got := DetailDescription(tt.name, tt.detail); got != tt.want {
			t.Errorf("DetailDescription(%s, %q) = %q, want %q", tt.name, tt.detail, got, tt.want)
		}
	}
}
