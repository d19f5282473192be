package itemmap

import (
	"bytes"
	"fmt"
	"unsafe"

	"spbridge/internal/archive"
)

// MaxDepth is the deepest nesting of arrays and objects a line may have to
// be read: a deeper line is skipped with a notice. JSON validation recurses
// once a level, so a line of ten million "[" would exhaust the stack; the
// recorded streams nest at most 13 levels (a tool's input included), and
// the saved conversation (archive.MaxConversationDepth, 1,100) must still
// be able to hold whatever a line carries, a few levels further down.
const MaxDepth = 1000

// structural marks the bytes the depth scan stops at outside strings.
var structural = [256]bool{'"': true, '[': true, '{': true, ']': true, '}': true}

// TooDeep reports whether the JSON text b nests arrays and objects deeper
// than MaxDepth, counting only brackets outside strings (escapes honoured).
// It does not validate b and allocates nothing; text that is not JSON gives
// an answer that does not matter, since the validation after it fails.
func TooDeep(b []byte) bool {
	depth := 0
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !structural[c] {
			continue
		}
		switch c {
		case '[', '{':
			depth++
			if depth > MaxDepth {
				return true
			}
		case ']', '}':
			depth--
		case '"':
			// Skip the string: find the next quote not escaped by an odd
			// run of backslashes.
			for {
				j := bytes.IndexByte(b[i+1:], '"')
				if j < 0 {
					return false // an unterminated string: not JSON
				}
				i += j + 1
				k := i - 1
				for k >= 0 && b[k] == '\\' {
					k--
				}
				if (i-1-k)%2 == 0 {
					break
				}
			}
		}
	}
	return false
}

// tooDeepNotice is the notice of a line skipped because it nests deeper
// than MaxDepth; from names the CLI.
func tooDeepNotice(newID IDFunc, from string, n int) Result {
	it := archive.ItemFromMap(map[string]any{"id": newID(), "type": archive.TypeNotice,
		"text": fmt.Sprintf("Skipped a line of %d bytes from %s: nested deeper than %d levels.", n, from, MaxDepth)})
	return Result{Skipped: true, Changes: []Change{{Op: OpAdd, Item: it}}}
}

// invalidNotice is the notice of a line that starts as a JSON object but is
// not valid JSON; from names the CLI.
func invalidNotice(newID IDFunc, from string, n int) Result {
	it := archive.ItemFromMap(map[string]any{"id": newID(), "type": archive.TypeNotice,
		"text": fmt.Sprintf("Skipped a line of %d bytes from %s that is not valid JSON.", n, from)})
	return Result{Skipped: true, Changes: []Change{{Op: OpAdd, Item: it}}}
}

// validJSON reports whether s is valid JSON no deeper than MaxDepth: text
// a tool printed (a string inside a line, so not bounded by the line's own
// depth) that the mapper reads as JSON when it is.
func validJSON(s string) bool {
	// A read-only view of s's bytes: TooDeep does not keep or change them.
	return validLine(unsafe.Slice(unsafe.StringData(s), len(s)))
}

// readLine checks a line before it is parsed: a line nested deeper than
// MaxDepth, or one that starts as an object and is not valid JSON, gives
// its notice (from names the CLI); any other line that is not valid JSON is
// skipped silently. ok is set when the line can be parsed.
func readLine(newID IDFunc, from string, line []byte) (r Result, ok bool) {
	if validLine(line) {
		return Result{}, true
	}
	return badLine(newID, from, line), false
}

// badLine is what a line that is not valid JSON no deeper than MaxDepth
// gives: a notice when it is too deep or starts as an object, a skip
// otherwise.
func badLine(newID IDFunc, from string, line []byte) Result {
	// validLine stops at the first level past MaxDepth, so the line may
	// also be too deep after where it went wrong: that notice comes first.
	if TooDeep(line) {
		return tooDeepNotice(newID, from, len(line))
	}
	if len(line) > 0 && line[0] == '{' {
		return invalidNotice(newID, from, len(line))
	}
	return Result{Skipped: true}
}
