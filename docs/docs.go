// Package docs holds spbridge's manual, the Markdown pages of this folder,
// built into the binary so that `spbridge help TOPIC` prints a page from
// any install: a release archive, the npm package or go install.
package docs

import (
	"embed"
	"io/fs"
	"slices"
	"strings"
)

//go:embed *.md
var pages embed.FS

// Topics returns the pages' names, without .md, sorted.
func Topics() []string {
	entries, _ := fs.ReadDir(pages, ".")
	var names []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".md"); ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// Page returns the page named topic ("editors" or "editors.md").
func Page(topic string) ([]byte, bool) {
	name := strings.TrimSuffix(topic, ".md")
	if name == "" || strings.ContainsAny(name, `/\.`) {
		return nil, false
	}
	data, err := pages.ReadFile(name + ".md")
	return data, err == nil
}
