// Package docscheck checks the repository's documents (README.md and
// docs/*.md): every relative link resolves to a file of the repository and,
// when it names one, to a heading's anchor as GitHub makes it, and no
// document names a path outside the repository.
package docscheck

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// Problem is one thing wrong in a document.
type Problem struct {
	File string // slash-separated, relative to the repository's root
	Line int
	Text string
}

func (p Problem) String() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Text) }

// Documents returns the documents Check reads under root: README.md and
// every .md file of docs/, slash-separated and relative to root.
func Documents(root string) ([]string, error) {
	docs := []string{"README.md"}
	if _, err := os.Stat(filepath.Join(root, "README.md")); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(filepath.Join(root, "docs"))
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".md") {
			docs = append(docs, "docs/"+e.Name())
		}
	}
	sort.Strings(docs[1:])
	return docs, nil
}

// Check reads the documents under root and returns what is wrong in them:
// a relative link to a file that does not exist or to an anchor its
// document does not have, a link or a path that leads out of root, and any
// mention of /work/ or ../shared.
func Check(root string) ([]Problem, error) {
	docs, err := Documents(root)
	if err != nil {
		return nil, err
	}
	anchors := map[string]map[string]bool{} // document → its anchors, read once
	anchorsOf := func(rel string) (map[string]bool, error) {
		if a, ok := anchors[rel]; ok {
			return a, nil
		}
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return nil, err
		}
		a := Anchors(string(data))
		anchors[rel] = a
		return a, nil
	}
	var problems []Problem
	for _, doc := range docs {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(doc)))
		if err != nil {
			return nil, err
		}
		text := string(data)
		add := func(line int, format string, args ...any) {
			problems = append(problems, Problem{File: doc, Line: line, Text: fmt.Sprintf(format, args...)})
		}
		for _, o := range outsidePaths(doc, text) {
			add(o.line, "names %q, outside the repository", o.text)
		}
		for _, l := range Links(text) {
			if isExternal(l.Target) {
				continue
			}
			target, anchor, _ := strings.Cut(l.Target, "#")
			rel := doc
			if target != "" {
				var ok bool
				if rel, ok = resolve(doc, target); !ok {
					add(l.Line, "link %q leads out of the repository", l.Target)
					continue
				}
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
					add(l.Line, "link %q: no such file %s", l.Target, rel)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(rel, ".md") {
				add(l.Line, "link %q: an anchor in %s, which is not a Markdown document", l.Target, rel)
				continue
			}
			a, err := anchorsOf(rel)
			if err != nil {
				add(l.Line, "link %q: %v", l.Target, err)
				continue
			}
			if !a[anchor] {
				add(l.Line, "link %q: %s has no heading with the anchor #%s", l.Target, rel, anchor)
			}
		}
	}
	return problems, nil
}

// resolve returns target, relative to the document doc, as a path from
// the repository's root; false when it leads out of it. A target starting
// with / is taken from the root, as GitHub does.
func resolve(doc, target string) (string, bool) {
	var p string
	if strings.HasPrefix(target, "/") {
		p = path.Clean(strings.TrimPrefix(target, "/"))
	} else {
		p = path.Join(path.Dir(doc), target)
	}
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", false
	}
	return p, true
}

var scheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)

func isExternal(target string) bool { return scheme.MatchString(target) }

// Link is one inline link of a document, outside code.
type Link struct {
	Line   int
	Target string
}

var (
	inlineLink = regexp.MustCompile(`\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	codeSpan   = regexp.MustCompile("(`+)([^`]*?)`+")
	fence      = regexp.MustCompile("^ {0,3}(```|~~~)")
	heading    = regexp.MustCompile(`^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$`)
	htmlAnchor = regexp.MustCompile(`<a\s+(?:[^>]*\s)?(?:id|name)="([^"]+)"`)
)

// proseLines calls f with each line of text that is not inside a fenced
// or indented code block, with its number from 1.
func proseLines(text string, f func(n int, line string)) {
	inFence := false
	prevBlank := true
	for i, line := range strings.Split(text, "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			prevBlank = false
			continue
		}
		blank := strings.TrimSpace(line) == ""
		indented := strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "\t")
		if inFence || (indented && prevBlank) {
			// An indented line after a blank one starts (or goes on with)
			// a code block; list items' own text is indented by 2 or 3.
			if !blank {
				prevBlank = indented && prevBlank
			}
			continue
		}
		prevBlank = blank
		f(i+1, line)
	}
}

// Links returns the inline links of a Markdown text, leaving out those in
// code blocks and code spans.
func Links(text string) []Link {
	var links []Link
	proseLines(text, func(n int, line string) {
		line = codeSpan.ReplaceAllStringFunc(line, func(s string) string { return strings.Repeat(" ", len(s)) })
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			links = append(links, Link{Line: n, Target: m[1]})
		}
	})
	return links
}

// Anchors returns the anchors of a Markdown text's headings as GitHub
// makes them (see Slug; a repeated heading gets -1, -2, …), and those of
// its HTML elements' id and name attributes.
func Anchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	proseLines(text, func(_ int, line string) {
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			return
		}
		slug := Slug(m[2])
		a := slug
		if n := seen[slug]; n > 0 {
			a = fmt.Sprintf("%s-%d", slug, n)
		}
		seen[slug]++
		anchors[a] = true
	})
	return anchors
}

var (
	mdLink  = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	mdEmph  = regexp.MustCompile(`\*+|(?:^|\s)_+|_+(?:\s|$)`)
	htmlTag = regexp.MustCompile(`<[^>]+>`)
)

// Slug is the anchor GitHub gives a heading's text: the text as shown
// (links by their text, no code or emphasis marks, no HTML tags), in lower
// case, with every character that is not a letter, a digit, a space, a
// hyphen or an underscore removed, and each space made a hyphen.
func Slug(heading string) string {
	s := mdLink.ReplaceAllString(heading, "$1")
	s = htmlTag.ReplaceAllString(s, "")
	// Emphasis marks go, outside code spans only: a code span shows its
	// text as it is (`_meta` keeps its underscore).
	var shown strings.Builder
	last := 0
	for _, m := range codeSpan.FindAllStringSubmatchIndex(s, -1) {
		shown.WriteString(stripEmphasis(s[last:m[0]]))
		shown.WriteString(s[m[4]:m[5]])
		last = m[1]
	}
	shown.WriteString(stripEmphasis(s[last:]))
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(shown.String())) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// stripEmphasis removes the marks of emphasis: runs of * anywhere, runs
// of _ at a word's edge (snake_case keeps its underscores).
func stripEmphasis(s string) string {
	return mdEmph.ReplaceAllStringFunc(s, func(m string) string {
		return strings.Map(func(r rune) rune {
			if r == '*' || r == '_' {
				return -1
			}
			return r
		}, m)
	})
}

type outside struct {
	line int
	text string
}

var (
	dotdot    = regexp.MustCompile(`(?:^|[^\w./-])((?:\./)?(?:\.\./)+[^\s)\]'"` + "`" + `,;]*)`)
	forbidden = []string{"/work/", "../shared"}
)

// outsidePaths returns the paths a document names, in prose or code, that
// are outside the repository: a relative path whose ../ climb above the
// root from doc's folder, and any mention of /work/ or ../shared.
func outsidePaths(doc, text string) []outside {
	var out []outside
	for i, line := range strings.Split(text, "\n") {
		found := false
		for _, f := range forbidden {
			if strings.Contains(line, f) {
				out = append(out, outside{i + 1, f})
				found = true
			}
		}
		if found {
			continue
		}
		for _, m := range dotdot.FindAllStringSubmatch(line, -1) {
			if _, ok := resolve(doc, m[1]); !ok {
				out = append(out, outside{i + 1, m[1]})
			}
		}
	}
	return out
}
