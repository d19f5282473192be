package itemmap

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// A tool item's detail is what the mappers make of its call for the panel
// (SPEC §3: truncated for display): "arguments:\n" and the call's input,
// pretty-printed JSON with no blank line; then, after a blank line,
// "output:\n" and what the call returned (or why it ended, as the CLI
// said it). Either part may be missing.

// DetailOutput is what a tool item's detail says besides the call's
// input: the output part (output set), else whatever follows the
// arguments, "" when the detail holds only the arguments. An editor shows
// it as the call's content: the input is what its title and diffs
// already say.
func DetailOutput(detail string) (text string, output bool) {
	if rest, ok := strings.CutPrefix(detail, "arguments:\n"); ok {
		_, detail, _ = strings.Cut(rest, "\n\n")
	}
	if rest, ok := strings.CutPrefix(detail, "output:\n"); ok {
		return rest, true
	}
	return detail, false
}

// DetailDescription is what a Claude Code Bash call is for, as its
// detail's arguments say it (the input's description, which the live card
// shows before the output): "" for any other tool, or when the arguments
// were cut for display before it.
func DetailDescription(name, detail string) string {
	args, ok := strings.CutPrefix(detail, "arguments:\n")
	if name != "Bash" || !ok {
		return ""
	}
	args, _, _ = strings.Cut(args, "\n\n")
	return gjson.Get(args, "description").String()
}

// ImageInfo is an image a tool item's detail names (imagesDetail): its
// type and size in bytes.
type ImageInfo struct {
	MimeType string
	Size     int
}

// DetailImages are the images a tool call returned, as its detail's
// output names them, one "[image/png image, 75 bytes]" line each, in
// order; none when it names none.
func DetailImages(detail string) []ImageInfo {
	out, _ := DetailOutput(detail)
	if !strings.Contains(out, " image, ") {
		return nil
	}
	var list []ImageInfo
	for line := range strings.SplitSeq(out, "\n") {
		rest, ok := strings.CutPrefix(line, "[image/")
		if !ok {
			continue
		}
		typ, size, ok := strings.Cut(strings.TrimSuffix(rest, "]"), " image, ")
		if !ok || !strings.HasSuffix(rest, "]") || strings.ContainsAny(typ, " [],") {
			continue
		}
		n, unit, _ := strings.Cut(size, " ")
		v, err := strconv.Atoi(n)
		if err != nil || v < 0 || (unit != "bytes" && !(unit == "byte" && v == 1)) {
			continue
		}
		list = append(list, ImageInfo{MimeType: "image/" + typ, Size: v})
	}
	return list
}
