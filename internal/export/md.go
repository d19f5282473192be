package export

import (
	"strconv"
	"strings"

	"spbridge/internal/archive"
)

// mdWriter writes a page as Markdown: messages, thoughts and plans as the
// Markdown they are (a thought folded in <details>), outputs and inputs
// fenced, diffs as ```diff, every text whole.
type mdWriter struct {
	*buf
}

func (m *mdWriter) begin(p *Page) {
	m.s("# ", oneLine(p.Title), "\n\n")
	for _, f := range p.Fields {
		m.s("- **", oneLine(f.Label), ":** ", oneLine(f.Value), "\n")
	}
	if len(p.Fields) > 0 {
		m.s("\n")
	}
	if v := p.Verification; v != nil {
		head := "**The audit log does not verify.**"
		if v.OK {
			head = "**The audit log verifies.**"
		}
		m.s("> ", head, "\n")
		for _, l := range v.Lines {
			m.s(">\n> ", strings.ReplaceAll(l, "\n", "\n> "), "\n")
		}
		m.s("\n")
	}
}

func (m *mdWriter) turn(t *Turn) {
	m.s("## Turn ", strconv.Itoa(t.N))
	if t.Heading != "" {
		m.s(" · ", oneLine(t.Heading))
	}
	m.s("\n\n")
	for i, it := range t.Items {
		m.item(itemView(it, t.Images[i], t.Cards, t.Items[:i]))
	}
	for _, f := range t.Fields {
		m.s("- ", oneLine(f.Label), ": ", oneLine(f.Value), "\n")
	}
	if len(t.Fields) > 0 {
		m.s("\n")
	}
	for _, f := range t.Folded {
		m.s(oneLine(f.Label), ":\n\n")
		m.fenced("", f.Value)
	}
	if len(t.Changes) > 0 {
		m.s("### Files changed\n\n")
		var listed bool
		for _, c := range t.Changes {
			if c.Diff != "" {
				m.diff(changeDiff(c))
				continue
			}
			m.s("- ", code(c.Path), " ", oneLine(strings.TrimSpace(c.Op+" "+c.Stat)), "\n")
			listed = true
		}
		if listed {
			m.s("\n")
		}
	}
	if t.Usage != nil {
		m.s("*Usage: ", usageLine(t.Usage.Usage, costText(string(t.Usage.Cost))), "*\n\n")
	}
}

func (m *mdWriter) item(v view) {
	if v.kind == archive.TypeThinking {
		m.s("<details><summary>Thinking</summary>\n\n", strings.TrimRight(v.markdown, "\n"), "\n\n</details>\n\n")
		return
	}
	m.s("**", oneLine(v.label), "**")
	if v.title != "" {
		m.s(" ", code(v.title))
	}
	if st := statusLine(v.status, v.statusText); st != "" {
		m.s(" — ", oneLine(st))
	}
	if v.decision != "" {
		m.s(" — **", oneLine(v.decision), "**")
	}
	m.s("\n\n")
	if v.desc != "" {
		m.s("*", oneLine(v.desc), "*\n\n")
	}
	if v.markdown != "" {
		m.s(strings.TrimRight(v.markdown, "\n"), "\n\n")
	}
	if v.plain != "" {
		m.s(strings.TrimRight(v.plain, "\n"), "\n\n")
	}
	for _, e := range v.todo {
		mark := "[ ]"
		if e.Status == "completed" {
			mark = "[x]"
		}
		m.s("- ", mark, " ", oneLine(e.Content), "\n")
	}
	if len(v.todo) > 0 {
		m.s("\n")
	}
	for i, q := range v.questions {
		m.s(strconv.Itoa(i+1), ". ", oneLine(q.text), "\n")
		if len(q.options) > 0 {
			m.s("   Options: ")
			for j, o := range q.options {
				if j > 0 {
					m.s(", ")
				}
				m.s(code(o))
			}
			m.s("\n")
		}
		if q.answer != "" {
			m.s("   **Answer:** ", oneLine(q.answer), "\n")
		} else {
			m.s("   *No answer recorded*\n")
		}
	}
	if len(v.questions) > 0 {
		m.s("\n")
	}
	for _, d := range v.diffs {
		m.diff(d)
	}
	if v.args != "" {
		m.s("Input:\n\n")
		m.fenced("json", v.args)
	}
	if v.output != "" {
		m.s("Output:\n\n")
		m.fenced("", v.output)
	}
	if v.detail != "" {
		m.fenced("", v.detail)
	}
	for _, l := range v.results {
		title := l.title
		if title == "" {
			title = l.url
		}
		if safeURL(l.url) {
			m.s("- [", mdEscape(oneLine(title)), "](<", strings.ReplaceAll(l.url, ">", "%3E"), ">)\n")
		} else {
			m.s("- ", mdEscape(oneLine(title)), " ", code(l.url), "\n")
		}
	}
	if len(v.results) > 0 {
		m.s("\n")
	}
	for i, img := range v.images {
		switch {
		case img.Data == nil:
			m.s("*[image ", strconv.Itoa(i+1), ", omitted from the saved conversation]*\n")
		case !imageOK(img):
			m.s("*[image ", strconv.Itoa(i+1), ": said to be ", oneLine(img.MimeType), ", but its bytes are not one]*\n")
		default:
			m.s("*[image ", strconv.Itoa(i+1), ": ", oneLine(img.MimeType), ", ", sizeText(len(img.Data)), "]*\n")
		}
	}
	if len(v.images) > 0 {
		m.s("\n")
	}
	if v.other != nil {
		if f := otherFields(v.other); f != "" {
			m.fenced("", f)
		}
	}
}

func (m *mdWriter) diff(d fileDiff) {
	m.s(code(strings.TrimSpace(d.op+" "+d.path)), ":\n\n")
	var b strings.Builder
	for _, l := range d.lines {
		switch l.op {
		case '@':
			b.WriteString(l.text)
		default:
			b.WriteByte(l.op)
			b.WriteString(l.text)
		}
		b.WriteByte('\n')
	}
	m.fenced("diff", b.String())
}

// fenced writes text as a fenced code block, its fence longer than any
// run of backticks in it.
func (m *mdWriter) fenced(lang, text string) {
	fence := strings.Repeat("`", max(3, longestRun(text, '`')+1))
	m.s(fence, lang, "\n", strings.TrimRight(text, "\n"), "\n", fence, "\n\n")
}

func (m *mdWriter) end(t *Totals) {
	if t == nil {
		return
	}
	m.s("## Totals\n\n", usageLine(t.Usage, costOf(t.Cost)), "\n")
	if !usageEmpty(t.LastRound) {
		m.s("\nLast request: ", usageLine(t.LastRound, ""), "\n")
	}
}

// code is s as an inline code span on one line.
func code(s string) string {
	s = oneLine(s)
	fence := strings.Repeat("`", longestRun(s, '`')+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}

// oneLine is s with its line breaks as spaces.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	most, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			most = max(most, n)
		} else {
			n = 0
		}
	}
	return most
}

// mdEscaper escapes the characters that would make Markdown of a link's
// text.
var mdEscaper = strings.NewReplacer(`\`, `\\`, "[", `\[`, "]", `\]`, "`", "\\`", "*", `\*`, "_", `\_`, "<", `\<`)

func mdEscape(s string) string { return mdEscaper.Replace(s) }
