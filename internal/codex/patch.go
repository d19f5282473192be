package codex

import (
	"fmt"
	"path/filepath"
	"strings"

	"spbridge/internal/itemmap"
)

// Kinds of a patch's file operations, as codex names them.
const (
	patchAdd    = "add"
	patchDelete = "delete"
	patchUpdate = "update"
)

// patchFile is one file operation of an apply_patch patch.
type patchFile struct {
	kind   string // patchAdd, patchDelete or patchUpdate
	path   string // as the patch names it (relative to the thread's folder, or absolute)
	moveTo string // an update's new path ("*** Move to:"), "" when none
	text   string // an added file's text
	hunks  []patchHunk
}

// patchHunk is one "@@" hunk of an update: its lines, each with its " ",
// "-" or "+" mark.
type patchHunk struct {
	lines []string
}

// oldNew is the hunk's old text (its context and removed lines) and new
// text (its context and added lines), one line each, without marks.
func (h patchHunk) oldNew() (old, nw []string) {
	for _, l := range h.lines {
		switch l[0] {
		case ' ':
			old, nw = append(old, l[1:]), append(nw, l[1:])
		case '-':
			old = append(old, l[1:])
		case '+':
			nw = append(nw, l[1:])
		}
	}
	return old, nw
}

// parsePatch reads a patch in codex's apply_patch format:
//
//	*** Begin Patch
//	*** Add File: PATH      then the file's lines, each marked "+"
//	*** Delete File: PATH
//	*** Update File: PATH   then, optionally, "*** Move to: PATH", then
//	                        hunks: "@@" (or "@@ context"), lines marked
//	                        " ", "-" or "+"; "*** End of File" may end one
//	*** End Patch
//
// As codex does, it takes the first hunk of an update without its "@@",
// an empty line inside a hunk as an empty context line, and lines ending
// in "\r\n". A patch it cannot read whole (no Begin or End, a line out of
// place, an update without a change) gives false.
func parsePatch(text string) ([]patchFile, bool) {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	if len(lines) < 2 || strings.TrimSpace(lines[0]) != "*** Begin Patch" || strings.TrimSpace(lines[len(lines)-1]) != "*** End Patch" {
		return nil, false
	}
	lines = lines[1 : len(lines)-1]
	var files []patchFile
	for i := 0; i < len(lines); {
		l := lines[i]
		i++
		switch {
		case strings.HasPrefix(l, "*** Add File: "):
			f := patchFile{kind: patchAdd, path: strings.TrimSpace(l[len("*** Add File: "):])}
			var b strings.Builder
			for i < len(lines) && strings.HasPrefix(lines[i], "+") {
				b.WriteString(lines[i][1:])
				b.WriteByte('\n')
				i++
			}
			f.text = b.String()
			files = append(files, f)
		case strings.HasPrefix(l, "*** Delete File: "):
			files = append(files, patchFile{kind: patchDelete, path: strings.TrimSpace(l[len("*** Delete File: "):])})
		case strings.HasPrefix(l, "*** Update File: "):
			f := patchFile{kind: patchUpdate, path: strings.TrimSpace(l[len("*** Update File: "):])}
			if i < len(lines) && strings.HasPrefix(lines[i], "*** Move to: ") {
				f.moveTo = strings.TrimSpace(lines[i][len("*** Move to: "):])
				i++
			}
			var h *patchHunk
			for i < len(lines) && !strings.HasPrefix(lines[i], "*** ") || i < len(lines) && lines[i] == "*** End of File" {
				hl := lines[i]
				i++
				switch {
				case hl == "*** End of File":
					h = nil
				case hl == "@@" || strings.HasPrefix(hl, "@@ "):
					f.hunks = append(f.hunks, patchHunk{})
					h = &f.hunks[len(f.hunks)-1]
				case hl == "" || hl[0] == ' ' || hl[0] == '-' || hl[0] == '+':
					if hl == "" {
						hl = " "
					}
					if h == nil {
						if len(f.hunks) > 0 {
							return nil, false // a line after "*** End of File"
						}
						f.hunks = append(f.hunks, patchHunk{})
						h = &f.hunks[0]
					}
					h.lines = append(h.lines, hl)
				default:
					return nil, false
				}
			}
			if !f.changes() {
				return nil, false
			}
			files = append(files, f)
		default:
			return nil, false
		}
		if p := files[len(files)-1].path; p == "" {
			return nil, false
		}
	}
	if len(files) == 0 {
		return nil, false
	}
	return files, true
}

// changes reports whether an update changes anything: a move, or a hunk
// with a removed or added line.
func (f patchFile) changes() bool {
	if f.moveTo != "" {
		return true
	}
	for _, h := range f.hunks {
		for _, l := range h.lines {
			if l[0] != ' ' {
				return true
			}
		}
	}
	return false
}

// absPath is p, as a patch names it, against dir (the thread's folder).
func absPath(dir, p string) string {
	if p == "" || filepath.IsAbs(p) || dir == "" {
		return p
	}
	return filepath.Join(dir, p)
}

// patchChanges are a parsed patch's changes as the view shows them, with
// paths against dir. An update's hunks are placed by where their new text
// is in the file as it is after the change (read with read: at its new
// path when it moved); a hunk not found there keeps a bare "@@". A deleted
// file's old text is not known.
func patchChanges(files []patchFile, dir string, read func(string) ([]byte, error)) []itemmap.CodexFileChange {
	var out []itemmap.CodexFileChange
	for _, f := range files {
		c := itemmap.CodexFileChange{Path: absPath(dir, f.path), Kind: f.kind}
		switch f.kind {
		case patchAdd:
			c.Diff = f.text
		case patchUpdate:
			target := c.Path
			if f.moveTo != "" {
				c.MovePath = absPath(dir, f.moveTo)
				target = c.MovePath
			}
			var after []string
			if b, err := read(target); err == nil {
				after = strings.Split(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n")
			}
			c.Diff = hunksDiff(f.hunks, after)
		}
		out = append(out, c)
	}
	return out
}

// hunksDiff writes hunks as a unified diff, each placed where its new text
// first comes in after (the file's lines after the change) at or past the
// end of the hunk before; the old start follows from the lines the hunks
// before added and removed.
func hunksDiff(hunks []patchHunk, after []string) string {
	var b strings.Builder
	from, shift := 0, 0 // where to look next; new lines minus old lines so far
	for _, h := range hunks {
		old, nw := h.oldNew()
		at := -1
		if len(nw) > 0 {
			at = indexLines(after, nw, from)
		}
		if at >= 0 {
			fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@\n", at+1-shift, len(old), at+1, len(nw))
			from = at + len(nw)
		} else {
			b.WriteString("@@\n")
		}
		shift += len(nw) - len(old)
		for _, l := range h.lines {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// indexLines is the index of the first run of lines equal to want in
// lines at or after from, -1 when there is none.
func indexLines(lines, want []string, from int) int {
	for i := from; i+len(want) <= len(lines); i++ {
		match := true
		for j, w := range want {
			if lines[i+j] != w {
				match = false
				break
			}
		}
		if match {
			return i
		}
	}
	return -1
}
