package export

import (
	"strings"

	"github.com/tidwall/gjson"
)

// fileDiff is the change a call made, or asked to make, to one file, as
// the lines of a unified diff.
type fileDiff struct {
	path  string
	op    string // add, update, delete, write, edit, or "" when not said
	lines []diffLine
}

// diffLine is one line of a diff: op is ' ' (context), '+', '-' or '@'
// (a hunk's header, or a note such as "… (N more bytes)").
type diffLine struct {
	op   byte
	text string
}

// patchDiffs reads the changes a patch tool's detail holds (after
// "changes:\n"): for each file a line "<kind> <path>" (and " → <new
// path>" for a move), then a unified diff of an update, the text of an
// added or deleted file. summary is the item's summary, the paths joined
// by ", ": a line is a file's only when it names one of them.
func patchDiffs(changes, summary string) []fileDiff {
	paths := map[string]bool{}
	for p := range strings.SplitSeq(summary, ", ") {
		if p != "" {
			paths[p] = true
		}
	}
	var out []fileDiff
	for line := range strings.SplitSeq(changes, "\n") {
		if op, path, ok := patchHeader(line, paths, len(out) == 0); ok {
			out = append(out, fileDiff{path: path, op: op})
			continue
		}
		if len(out) == 0 {
			out = append(out, fileDiff{})
		}
		d := &out[len(out)-1]
		d.lines = append(d.lines, patchLine(d.op, line))
	}
	return out
}

// patchHeader reads line as a file's header line of a patch's changes:
// "<kind> <path>" where path is one of paths (any path, when paths is
// empty and first is set: the first line is a header).
func patchHeader(line string, paths map[string]bool, first bool) (op, path string, ok bool) {
	for _, kind := range []string{"add", "update", "delete"} {
		rest, found := strings.CutPrefix(line, kind+" ")
		if !found {
			continue
		}
		p, _, _ := strings.Cut(rest, " → ")
		if paths[p] || (len(paths) == 0 && first) {
			return kind, rest, true
		}
	}
	if paths[line] {
		return "", line, true
	}
	return "", "", false
}

// patchLine is one line of a file's changes: the lines of an added file
// are all added, of a deleted one all removed, of an update as the
// unified diff marks them.
func patchLine(op, line string) diffLine {
	if strings.HasPrefix(line, "… (") && strings.HasSuffix(line, " more bytes)") {
		return diffLine{'@', line}
	}
	switch op {
	case "add":
		return diffLine{'+', line}
	case "delete":
		return diffLine{'-', line}
	}
	if line == "" {
		return diffLine{' ', ""}
	}
	switch line[0] {
	case '+', '-', ' ':
		return diffLine{line[0], line[1:]}
	case '@', '\\':
		return diffLine{'@', line}
	}
	return diffLine{' ', line}
}

// editDiffs are the changes an edit tool's input (args, JSON) asks for:
// Edit's and MultiEdit's old and new strings, Write's and NotebookEdit's
// new text; nil for any other input, or one that does not read (cut for
// display).
func editDiffs(name, args string) []fileDiff {
	if !gjson.Valid(args) {
		return nil
	}
	in := gjson.Parse(args)
	path := in.Get("file_path").String()
	switch {
	case in.Get("old_string").Exists():
		return []fileDiff{{path: path, op: "edit", lines: lineDiff(in.Get("old_string").String(), in.Get("new_string").String())}}
	case in.Get("edits").IsArray():
		var lines []diffLine
		for i, e := range in.Get("edits").Array() {
			if i > 0 {
				lines = append(lines, diffLine{'@', "…"})
			}
			lines = append(lines, lineDiff(e.Get("old_string").String(), e.Get("new_string").String())...)
		}
		return []fileDiff{{path: path, op: "edit", lines: lines}}
	case name == "Write" && in.Get("content").Exists():
		return []fileDiff{{path: path, op: "write", lines: lineDiff("", in.Get("content").String())}}
	case name == "NotebookEdit" && in.Get("new_source").Exists():
		return []fileDiff{{path: in.Get("notebook_path").String(), op: "edit", lines: lineDiff("", in.Get("new_source").String())}}
	}
	return nil
}

// maxDiffCells bounds the work of lineDiff: past it, the old lines are
// shown removed and the new added.
const maxDiffCells = 1 << 20

// lineDiff is the line diff of old into new: the longest common
// subsequence of their lines as context, the rest removed or added.
func lineDiff(old, new string) []diffLine {
	a, b := splitLines(old), splitLines(new)
	if len(a)*len(b) > maxDiffCells {
		var out []diffLine
		for _, l := range a {
			out = append(out, diffLine{'-', l})
		}
		for _, l := range b {
			out = append(out, diffLine{'+', l})
		}
		return out
	}
	// lcs[i][j] is the length of the longest common subsequence of a[i:]
	// and b[j:].
	w := len(b) + 1
	lcs := make([]int32, (len(a)+1)*w)
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i*w+j] = lcs[(i+1)*w+j+1] + 1
			} else {
				lcs[i*w+j] = max(lcs[(i+1)*w+j], lcs[i*w+j+1])
			}
		}
	}
	var out []diffLine
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			out = append(out, diffLine{' ', a[i]})
			i++
			j++
		case i < len(a) && (j == len(b) || lcs[(i+1)*w+j] >= lcs[i*w+j+1]):
			out = append(out, diffLine{'-', a[i]})
			i++
		default:
			out = append(out, diffLine{'+', b[j]})
			j++
		}
	}
	return out
}

// splitLines splits s into lines, without a last empty one.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
