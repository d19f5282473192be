package claude

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
)

// compaction follows Claude Code's compaction of its context (its /compact
// or its automatic one) through the lines it prints, as recorded in
// testdata/claude/compact.stdout.jsonl: a system status "compacting", a
// status with compact_result ("success", else the compaction failed, with
// compact_error), a system compact_boundary with the token counts, then a
// synthetic user message that continues the conversation with the summary.
// The steps go to a host that shows compactions (backend.Compacted); the
// boundary adds the notice every host shows. Read by the line reader only.
type compaction struct {
	id       string // the compaction in progress, "" when none
	boundary bool   // its compact_boundary came: it succeeded
}

// compactionLine reads a line for the compaction's steps; h is nil when no
// host hears of them.
func (b *Backend) compactionLine(line []byte, h backend.Host) {
	c := &b.compacting
	switch {
	case isType(line, "system"):
		// The subtype alone for the many lines that say nothing of this
		// (thinking tokens): the line is parsed only when it does.
		switch gjson.GetBytes(line, "subtype").String() {
		case "status":
			v := gjson.ParseBytes(line)
			if v.Get("status").String() == "compacting" {
				c.begin(b.Opts.NewID, h)
				return
			}
			if r := v.Get("compact_result"); r.Exists() && r.String() != "success" && c.id != "" {
				why := v.Get("compact_error").String()
				if why == "" {
					why = "Claude Code could not compact the conversation."
				}
				c.end(h, itemmap.Compaction{Status: itemmap.CompactionFailed, Error: why})
			}
		case "compact_boundary":
			c.begin(b.Opts.NewID, h) // one the CLI did not announce
			c.boundary = true
			if h != nil {
				backend.CompactionNotice(b.Opts.NewID, h, boundaryText(gjson.GetBytes(line, "compact_metadata")), c.id)
			}
		}
	case c.id != "" && c.boundary && isType(line, "user"):
		if !bytes.Contains(line, []byte(`"isSynthetic":true`)) {
			return
		}
		text := gjson.GetBytes(line, "message.content")
		if text.IsArray() {
			var parts []string
			for _, p := range text.Array() {
				parts = append(parts, p.Get("text").String())
			}
			text = gjson.Result{Type: gjson.String, Str: strings.Join(parts, "")}
		}
		c.end(h, itemmap.Compaction{Status: itemmap.CompactionCompleted, Summary: compactSummary(text.String())})
	case c.id != "" && isType(line, "result"):
		// The turn ended without the summary: the boundary says how it
		// went, and no boundary means the compaction did not happen.
		if c.boundary {
			c.end(h, itemmap.Compaction{Status: itemmap.CompactionCompleted})
		} else {
			c.end(h, itemmap.Compaction{Status: itemmap.CompactionCancelled})
		}
	}
}

// begin starts a compaction unless one is in progress: its id is the
// backend's next item id, else a new one.
func (c *compaction) begin(newID itemmap.IDFunc, h backend.Host) {
	if c.id != "" {
		return
	}
	c.id, c.boundary = archive.NewID(), false
	if newID != nil {
		c.id = newID()
	}
	if h != nil {
		backend.Compacted(h, itemmap.Compaction{ID: c.id, Status: itemmap.CompactionInProgress})
	}
}

// end ends the compaction in progress with step.
func (c *compaction) end(h backend.Host, step itemmap.Compaction) {
	step.ID = c.id
	c.id, c.boundary = "", false
	if h != nil {
		backend.Compacted(h, step)
	}
}

// boundaryText is the notice of a compaction: with the tokens in context
// before and after it when Claude Code says.
func boundaryText(md gjson.Result) string {
	text := "Claude Code compacted the conversation"
	if md.Get("pre_tokens").Exists() {
		text += fmt.Sprintf(" (%d tokens before, %d after)", md.Get("pre_tokens").Int(), md.Get("post_tokens").Int())
	}
	return text + "."
}

// compactSummary is the summary in the message that continues a compacted
// conversation, without the framing Claude Code gives the model (what
// comes before "Summary:", the transcript's path and the instructions to
// go on after it); "" when the message has no summary.
func compactSummary(text string) string {
	_, summary, ok := strings.Cut(text, "\nSummary:\n")
	if !ok {
		return ""
	}
	for _, tail := range []string{"\n\nIf you need specific details", "\nContinue the conversation from where it left off"} {
		if i := strings.Index(summary, tail); i >= 0 {
			summary = summary[:i]
		}
	}
	return strings.TrimSpace(summary)
}
