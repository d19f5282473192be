package checkpoint

import (
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// Kind is what a turn did to a file.
type Kind string

// The kinds of change.
const (
	Created  Kind = "created"
	Modified Kind = "modified"
	Deleted  Kind = "deleted"
)

// Version is one state of a file: its contents' SHA-256 (lowercase hex;
// "" for a link), size and mode (permission bits, and fs.ModeSymlink for
// a link, whose target is Link).
type Version struct {
	SHA256 string
	Size   int64
	Mode   fs.FileMode
	Link   string
}

// ChangeSet is what one turn changed in the session's folders.
type ChangeSet struct {
	Files []FileChange
	// Skipped are the files the turn changed whose contents are not kept:
	// over the size limit, or unreadable.
	Skipped []Skipped
	// Folders are the folders the turn created or deleted (a rewind
	// removes the ones it created once they are empty, and makes the
	// ones it deleted). A change set of folders only is Empty: it is not
	// kept.
	Folders []FolderChange
}

// FolderChange is a folder a turn created or deleted (Change is Created
// or Deleted).
type FolderChange struct {
	Root, Path string // as FileChange's
	Change     Kind
	rel        string
}

// FileChange is one file a turn created, modified or deleted.
type FileChange struct {
	Root string // the folder it is in, absolute
	// Path is its path inside Root, slash-separated, the bytes of its name
	// as the system gave them (not always UTF-8: Display shows them).
	Path           string
	Change         Kind
	Added, Removed int  // lines, for a text file
	Binary         bool // either side holds a NUL in its first 8000 bytes
	// Before and After are the file before and after the turn (nil when
	// it was created, or deleted).
	Before, After *Version
	cache         *cache // holds both sides' contents until the next Begin
	rel           string // Root relative to the folder holding the package, as the index keeps it
}

// Skipped is a file a turn changed whose contents are not kept.
type Skipped struct {
	Root, Path string
	Reason     string // "over 10 MiB", "unreadable: permission denied"
	rel        string
}

// Empty reports whether the turn changed nothing that is seen.
func (c ChangeSet) Empty() bool { return len(c.Files) == 0 && len(c.Skipped) == 0 }

// maxListed is how many files a summary names.
const maxListed = 8

// Summary says the change set in words, for the notice that ends the
// turn: "Changed 3 files: src/a.go (+3 −1), notes.md (created, +12),
// old.txt (deleted)". Paths are shown relative to the first folder
// (first), other folders' with their folder; a long list is shortened.
func (c ChangeSet) Summary(first string) string {
	var b strings.Builder
	if n := len(c.Files); n > 0 {
		fmt.Fprintf(&b, "Changed %d file%s: ", n, plural(n))
		for i, f := range c.Files {
			if i == maxListed {
				fmt.Fprintf(&b, " and %d more", n-i)
				break
			}
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(joinDisplay(first, f.Root, f.Path))
			b.WriteString(" (" + f.detail() + ")")
		}
		b.WriteString(".")
	}
	if n := len(c.Skipped); n > 0 {
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "Not kept, so not restorable: ")
		for i, s := range c.Skipped {
			if i == maxListed {
				fmt.Fprintf(&b, " and %d more", n-i)
				break
			}
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(joinDisplay(first, s.Root, s.Path) + " (" + s.Reason + ")")
		}
		b.WriteString(".")
	}
	return b.String()
}

// detail is "+3 −1", "created, +12", "deleted", "binary".
func (f FileChange) detail() string {
	var parts []string
	if f.Change != Modified {
		parts = append(parts, string(f.Change))
	}
	switch {
	case f.Binary:
		parts = append(parts, "binary")
	case f.isLink():
		parts = append(parts, "link")
	case f.Change == Created && f.Added > 0:
		parts = append(parts, "+"+strconv.Itoa(f.Added))
	case f.Change == Modified:
		parts = append(parts, "+"+strconv.Itoa(f.Added)+" −"+strconv.Itoa(f.Removed))
	}
	return strings.Join(parts, ", ")
}

func (f FileChange) isLink() bool {
	return (f.Before != nil && f.Before.Link != "") || (f.After != nil && f.After.Link != "")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// Display shows a path whose name is not UTF-8 with its other bytes
// escaped (\xNN) and backslashes doubled; a UTF-8 path without a
// backslash is shown as it is.
func Display(p string) string {
	if utf8.ValidString(p) && !strings.Contains(p, `\`) {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); {
		r, n := utf8.DecodeRuneInString(p[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, p[i])
		case r == '\\':
			b.WriteString(`\\`)
		default:
			b.WriteString(p[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Texts are the contents of the change's file before and after the turn,
// as text, while they are known (until the tracker's next Begin) and at
// most max bytes each: old is nil for a created file, and ok is false for
// a binary file, a link, or contents no longer at hand.
func (f FileChange) Texts(max int64) (old *string, now string, ok bool) {
	if f.Binary || f.isLink() || f.cache == nil {
		return nil, "", false
	}
	get := func(v *Version) (string, bool) {
		if v == nil {
			return "", true
		}
		if v.Size > max {
			return "", false
		}
		data, err := f.cache.get(v.SHA256, max)
		if err != nil || !utf8.Valid(data) {
			return "", false
		}
		return string(data), true
	}
	a, ok1 := get(f.Before)
	b, ok2 := get(f.After)
	if !ok1 || !ok2 {
		return nil, "", false
	}
	if f.Before != nil {
		old = &a
	}
	return old, b, true
}

// lineCounts counts the lines added and removed between a and b, by a
// line diff.
func lineCounts(a, b []byte) (added, removed int) {
	if len(a) == 0 {
		return lineCount(string(b)), 0
	}
	if len(b) == 0 {
		return 0, lineCount(string(a))
	}
	dmp := diffmatchpatch.New()
	ra, rb, lines := dmp.DiffLinesToRunes(string(a), string(b))
	for _, d := range dmp.DiffMainRunes(ra, rb, false) {
		n := 0
		for _, r := range d.Text {
			if int(r) < len(lines) {
				n++
			}
		}
		switch d.Type {
		case diffmatchpatch.DiffInsert:
			added += n
		case diffmatchpatch.DiffDelete:
			removed += n
		}
	}
	return added, removed
}

// lineCount is the number of lines of s, a last one without a newline
// counted.
func lineCount(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}
