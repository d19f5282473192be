package itemmap

import (
	"slices"
	"testing"
)

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

// TestDetailImages reads back the images imagesDetail names, and nothing
// from lines that only look like them.
func TestDetailImages(t *testing.T) {
	one := Image{MimeType: "image/png", Data: []byte("x")}
	two := Image{MimeType: "image/jpeg", Data: make([]byte, 1234)}
	tests := []struct {
		detail string
		want   []ImageInfo
	}{
		{"output:\n" + imagesDetail([]Image{one, two}), []ImageInfo{{"image/png", 1}, {"image/jpeg", 1234}}},
		{"arguments:\n{\"file_path\":\"/w/red.png\"}\n\noutput:\nthe file\n" + imagesDetail([]Image{two}), []ImageInfo{{"image/jpeg", 1234}}},
		{"output:\nplain text", nil},
		{"output:\n[image/png image, 2 byte]\n[image/png image, -1 bytes]\n[image/png image, x bytes]\n[image/a b image, 3 bytes]\n x [image/png image, 3 bytes]\n[image/png image, 3 bytes", nil},
		{"arguments:\n{\"s\":\"[image/png image, 3 bytes]\"}", nil},
	}
	for _, tt := range tests {
		if got := DetailImages(tt.detail); !slices.Equal(got, tt.want) {
			t.Errorf("DetailImages(%q) = %v, want %v", tt.detail, got, tt.want)
		}
	}
}
