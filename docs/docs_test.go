package docs

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestPagesAreTheFolder: every Markdown page of docs/ is a topic, read as
// the file holds it, by its name with or without .md.
func TestPagesAreTheFolder(t *testing.T) {
	files, err := filepath.Glob("*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("docs/*.md: %v %v", files, err)
	}
	var want []string
	for _, f := range files {
		want = append(want, f[:len(f)-len(".md")])
	}
	if got := Topics(); !slices.Equal(got, want) {
		t.Errorf("Topics() = %v, want %v", got, want)
	}
	for _, name := range want {
		file, err := os.ReadFile(name + ".md")
		if err != nil {
			t.Fatal(err)
		}
		for _, topic := range []string{name, name + ".md"} {
			if got, ok := Page(topic); !ok || string(got) != string(file) {
				t.Errorf("Page(%q): %d bytes, %v; want the file's %d", topic, len(got), ok, len(file))
			}
		}
	}
	for _, bad := range []string{"", ".md", "nosuch", "../README", "docs.go", "export.png", "editors.md.md"} {
		if _, ok := Page(bad); ok {
			t.Errorf("Page(%q) found a page", bad)
		}
	}
}
