package itemmap

import (
	"fmt"
	"unsafe"

	"spbridge/internal/archive"
	"spbridge/internal/jsonline"
)

// tooDeepNotice is the notice of a line skipped because it nests deeper
// than jsonline.MaxDepth; from names the CLI.
func tooDeepNotice(newID IDFunc, from string, n int) Result {
	it := archive.ItemFromMap(map[string]any{"id": newID(), "type": archive.TypeNotice,
		"text": fmt.Sprintf("Skipped a line of %d bytes from %s: nested deeper than %d levels.", n, from, jsonline.MaxDepth)})
	return Result{Skipped: true, Changes: []Change{{Op: OpAdd, Item: it}}}
}

// invalidNotice is the notice of a line that starts as a JSON object but is
// not valid JSON; from names the CLI.
func invalidNotice(newID IDFunc, from string, n int) Result {
	it := archive.ItemFromMap(map[string]any{"id": newID(), "type": archive.TypeNotice,
		"text": fmt.Sprintf("Skipped a line of %d bytes from %s that is not valid JSON.", n, from)})
	return Result{Skipped: true, Changes: []Change{{Op: OpAdd, Item: it}}}
}

// validJSON reports whether s is valid JSON no deeper than jsonline.MaxDepth: text
// a tool printed (a string inside a line, so not bounded by the line's own
// depth) that the mapper reads as JSON when it is.
func validJSON(s string) bool {
	// A read-only view of s's bytes: TooDeep does not keep or change them.
	return jsonline.Valid(unsafe.Slice(unsafe.StringData(s), len(s)))
}

// readLine checks a line before it is parsed: a line nested deeper than
// jsonline.MaxDepth, or one that starts as an object and is not valid JSON, gives
// its notice (from names the CLI); any other line that is not valid JSON is
// skipped silently. ok is set when the line can be parsed.
func readLine(newID IDFunc, from string, line []byte) (r Result, ok bool) {
	if jsonline.Valid(line) {
		return Result{}, true
	}
	return badLine(newID, from, line), false
}

// badLine is what a line that is not valid JSON no deeper than jsonline.MaxDepth
// gives: a notice when it is too deep or starts as an object, a skip
// otherwise.
func badLine(newID IDFunc, from string, line []byte) Result {
	// jsonline.Valid stops at the first level past jsonline.MaxDepth, so the line may
	// also be too deep after where it went wrong: that notice comes first.
	if jsonline.TooDeep(line) {
		return tooDeepNotice(newID, from, len(line))
	}
	if len(line) > 0 && line[0] == '{' {
		return invalidNotice(newID, from, len(line))
	}
	return Result{Skipped: true}
}
