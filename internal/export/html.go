package export

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"spbridge/internal/archive"
	"spbridge/internal/money"
)

// The page's limits, so that it opens without freezing: a text longer
// than maxText is cut there with a note (the Markdown export keeps it
// whole); an output or input longer than foldLines lines or foldBytes
// bytes is folded, its first previewLines lines shown; a diff longer than
// foldDiff lines is folded.
const (
	maxText      = 256 << 10
	foldLines    = 12
	foldBytes    = 2 << 10
	previewLines = 6
	foldDiff     = 60
)

// CSP is the page's Content-Security-Policy: no script, no remote load of
// any kind, images only as data: URIs (the page's own), styles only
// inline (the page's own stylesheet: a conversation's text is never
// placed inside a style element or attribute).
const CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"

type htmlWriter struct {
	*buf
}

// esc writes s escaped.
func (h *htmlWriter) esc(s string) { escape(h.buf, s) }

func (h *htmlWriter) begin(p *Page) {
	h.s("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n",
		`<meta http-equiv="Content-Security-Policy" content="`, CSP, "\">\n",
		"<meta name=\"referrer\" content=\"no-referrer\">\n",
		"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n",
		"<meta name=\"color-scheme\" content=\"light dark\">\n",
		"<meta name=\"generator\" content=\"spbridge export\">\n<title>")
	h.esc(p.Title)
	h.s("</title>\n<style>", stylesheet, "</style>\n</head>\n<body>\n<main>\n<header>\n<h1>")
	h.esc(p.Title)
	h.s("</h1>\n")
	h.fields(p.Fields)
	h.s("</header>\n")
	if v := p.Verification; v != nil {
		class, head := "bad", "The audit log does not verify"
		if v.OK {
			class, head = "ok", "The audit log verifies"
		}
		h.s(`<section class="verify `, class, `"><h2>`, head, "</h2>\n")
		for _, l := range v.Lines {
			h.s("<p>")
			h.esc(l)
			h.s("</p>\n")
		}
		h.s("</section>\n")
	}
}

func (h *htmlWriter) fields(fs []Field) {
	if len(fs) == 0 {
		return
	}
	h.s(`<dl class="fields">`)
	for _, f := range fs {
		h.s("<dt>")
		h.esc(f.Label)
		h.s("</dt><dd>")
		h.esc(f.Value)
		h.s("</dd>")
	}
	h.s("</dl>\n")
}

func (h *htmlWriter) turn(t *Turn) {
	n := strconv.Itoa(t.N)
	h.s(`<section class="turn" id="turn-`, n, `">`, "\n", `<h2><a href="#turn-`, n, `">Turn `, n, "</a>")
	if t.Heading != "" {
		h.s(` <span class="sub">`)
		h.esc(t.Heading)
		h.s("</span>")
	}
	h.s("</h2>\n")
	for i, it := range t.Items {
		h.item(itemView(it, t.Images[i], t.Cards, t.Items[:i]))
	}
	if len(t.Fields) > 0 || len(t.Folded) > 0 {
		h.s(`<div class="facts">`)
		h.fields(t.Fields)
		for _, f := range t.Folded {
			h.block(f.Label, f.Value, "out")
		}
		h.s("</div>\n")
	}
	if len(t.Changes) > 0 {
		h.s(`<div class="changes"><h3>Files changed</h3>`, "\n")
		var listed bool
		for _, c := range t.Changes {
			if c.Diff != "" {
				h.diff(changeDiff(c))
				continue
			}
			if !listed {
				h.s(`<ul class="files">`)
				listed = true
			}
			h.s(`<li><code>`)
			h.esc(c.Path)
			h.s(`</code> <span class="sub">`)
			h.esc(strings.TrimSpace(c.Op + " " + c.Stat))
			h.s("</span></li>\n")
		}
		if listed {
			h.s("</ul>")
		}
		h.s("</div>\n")
	}
	if t.Usage != nil {
		h.s(`<p class="usage">`)
		h.esc(usageLine(t.Usage.Usage, costText(string(t.Usage.Cost))))
		h.s("</p>\n")
	}
	h.s("</section>\n")
}

// changeDiff is a file change as a diff to show.
func changeDiff(c FileChange) fileDiff {
	d := fileDiff{path: c.Path, op: c.Op}
	for _, l := range splitLines(c.Diff) {
		if strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "+++ ") {
			continue
		}
		d.lines = append(d.lines, patchLine("", l))
	}
	return d
}

func (h *htmlWriter) item(v view) {
	switch v.kind {
	case archive.TypeThinking:
		h.s(`<details class="item thinking"><summary>Thinking</summary>`)
		h.markdown(v.markdown)
		h.s("</details>\n")
		return
	}
	class := v.kind
	if v.status != "" {
		class += " s-" + cssWord(v.status)
	}
	h.s(`<div class="item `, class, `">`)
	h.s(`<div class="head"><span class="who">`)
	h.esc(v.label)
	h.s("</span>")
	if v.title != "" {
		if v.command {
			h.s(` <code class="title cmd">`)
		} else {
			h.s(` <span class="title">`)
		}
		h.esc(v.title)
		if v.command {
			h.s("</code>")
		} else {
			h.s("</span>")
		}
	}
	if v.status != "" || v.statusText != "" {
		h.s(` <span class="status">`)
		h.esc(statusLine(v.status, v.statusText))
		h.s("</span>")
	}
	if v.decision != "" {
		h.s(` <span class="decision d-`, cssWord(v.decision), `">`)
		h.esc(v.decision)
		h.s("</span>")
	}
	h.s("</div>\n")
	if v.desc != "" {
		h.s(`<p class="desc">`)
		h.esc(v.desc)
		h.s("</p>\n")
	}
	if v.markdown != "" {
		h.markdown(v.markdown)
	}
	if v.plain != "" {
		h.s(`<p class="plain">`)
		h.cut(v.plain)
		h.s("</p>\n")
	}
	if len(v.todo) > 0 {
		h.s(`<ul class="todo">`)
		for _, e := range v.todo {
			mark := "☐"
			if e.Status == "completed" {
				mark = "☑"
			}
			h.s(`<li class="`, cssWord(e.Status), `">`, mark, " ")
			h.esc(e.Content)
			h.s("</li>")
		}
		h.s("</ul>\n")
	}
	for _, q := range v.questions {
		h.s(`<div class="question"><p>`)
		h.esc(q.text)
		h.s("</p>")
		if len(q.options) > 0 {
			h.s(`<ul class="opts">`)
			for _, o := range q.options {
				if o == q.answer {
					h.s(`<li class="chosen">`)
				} else {
					h.s("<li>")
				}
				h.esc(o)
				h.s("</li>")
			}
			h.s("</ul>")
		}
		if q.answer != "" {
			h.s(`<p class="answer">Answer: `)
			h.esc(q.answer)
			h.s("</p>")
		} else {
			h.s(`<p class="answer none">No answer recorded</p>`)
		}
		h.s("</div>\n")
	}
	for _, d := range v.diffs {
		h.diff(d)
	}
	if v.args != "" {
		h.block("Input", v.args, "args")
	}
	if v.output != "" {
		h.block("Output", v.output, "out")
	}
	if v.detail != "" {
		h.block("Detail", v.detail, "out")
	}
	if len(v.results) > 0 {
		h.s(`<ul class="links">`)
		for _, l := range v.results {
			h.s("<li>")
			h.link(l)
			h.s("</li>")
		}
		h.s("</ul>\n")
	}
	if len(v.images) > 0 {
		h.s(`<div class="images">`)
		for i, img := range v.images {
			h.image(i+1, img)
		}
		h.s("</div>\n")
	}
	if v.other != nil {
		var keys []string
		for k := range v.other {
			if k != "id" && k != "type" && k != "text" {
				keys = append(keys, k)
			}
		}
		if len(keys) > 0 {
			h.block("Fields", otherFields(v.other), "args")
		}
	}
	h.s("</div>\n")
}

// markdown writes text rendered as Markdown (cut at maxText).
func (h *htmlWriter) markdown(text string) {
	more := 0
	if len(text) > maxText {
		text, more = cutText(text, maxText)
	}
	h.s(`<div class="md">`)
	if err := md.Convert([]byte(text), h.Writer); err != nil {
		h.s("<pre>")
		h.esc(text)
		h.s("</pre>")
	}
	h.s("</div>\n")
	h.cutNote(more)
}

// cut writes text escaped, cut at maxText with a note.
func (h *htmlWriter) cut(text string) {
	more := 0
	if len(text) > maxText {
		text, more = cutText(text, maxText)
	}
	h.esc(text)
	h.cutNote(more)
}

func (h *htmlWriter) cutNote(more int) {
	if more > 0 {
		h.s(`<span class="cutnote">… `, sizeText(more), " more not shown on this page (the Markdown export, --format md, holds the whole text)</span>")
	}
}

// block writes a text in a pre, folded when long: its first lines shown,
// the whole under a summary naming it and its size.
func (h *htmlWriter) block(label, text, class string) {
	lines := strings.Count(text, "\n") + 1
	if lines <= foldLines && len(text) <= foldBytes {
		h.s(`<div class="block"><div class="label">`)
		h.esc(label)
		h.s(`</div><pre class="`, class, `">`)
		h.esc(text)
		h.s("</pre></div>\n")
		return
	}
	preview := text
	for i, n := 0, 0; i < len(preview); i++ {
		if preview[i] == '\n' {
			if n++; n == previewLines {
				preview = preview[:i]
				break
			}
		}
	}
	if len(preview) > foldBytes {
		preview, _ = cutText(preview, foldBytes)
	}
	h.s(`<div class="block"><div class="label">`)
	h.esc(label)
	h.s(`</div><pre class="`, class, ` preview">`)
	h.esc(preview)
	h.s("</pre>\n<details><summary>")
	h.s("All ", thousands(strconv.Itoa(lines)), " lines (", sizeText(len(text)), ")</summary>")
	h.s(`<pre class="`, class, `">`)
	h.cut(text)
	h.s("</pre></details></div>\n")
}

// diff writes a file's diff, unified, its lines coloured; folded when
// long.
func (h *htmlWriter) diff(d fileDiff) {
	adds, dels := 0, 0
	for _, l := range d.lines {
		switch l.op {
		case '+':
			adds++
		case '-':
			dels++
		}
	}
	if len(d.lines) > foldDiff {
		h.s(`<details class="diff">`)
	} else {
		h.s(`<details class="diff" open>`)
	}
	h.s(`<summary><span class="path">`)
	h.esc(strings.TrimSpace(d.op + " " + d.path))
	h.s(`</span> <span class="stat"><span class="a">+`, strconv.Itoa(adds), `</span> <span class="d">−`, strconv.Itoa(dels), "</span></span></summary>")
	h.s(`<pre class="diff">`)
	size := 0
	for i, l := range d.lines {
		if size > maxText {
			h.cutNote(len(d.lines) - i)
			break
		}
		size += len(l.text)
		switch l.op {
		case '+':
			h.s(`<span class="a">+`)
		case '-':
			h.s(`<span class="d">-`)
		case '@':
			h.s(`<span class="h">`)
		default:
			h.s(`<span class="c"> `)
		}
		h.esc(l.text)
		h.s("</span>") // a block: no line break between lines
	}
	h.s("</pre></details>\n")
}

func (h *htmlWriter) link(l link) {
	title := l.title
	if title == "" {
		title = l.url
	}
	if safeURL(l.url) {
		writeLink(h.buf, l.url, title)
	} else {
		h.esc(title)
	}
	if l.url != "" && l.url != title {
		h.s(` <span class="url">`)
		h.esc(l.url)
		h.s("</span>")
	}
}

// imageTypes are the types of image a page shows, as format 1 stores
// them.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// imageOK reports whether img's bytes are of the type it says, one format
// 1 stores.
func imageOK(img Image) bool {
	return imageTypes[img.MimeType] && http.DetectContentType(img.Data) == img.MimeType
}

// image writes an image as a data: URI, when its bytes are of the type
// it says and one format 1 stores; else a note.
func (h *htmlWriter) image(n int, img Image) {
	switch {
	case img.Data == nil:
		h.s(`<span class="noimg">[an image, omitted from the saved conversation]</span>`)
		return
	case !imageOK(img):
		h.s(`<span class="noimg">[an image said to be `)
		h.esc(img.MimeType)
		h.s(", whose bytes are not one of the image types a page shows: not shown]</span>")
		return
	}
	h.s(`<img alt="image `, strconv.Itoa(n), `" src="data:`, img.MimeType, ";base64,")
	enc := base64.NewEncoder(base64.StdEncoding, h.buf)
	enc.Write(img.Data)
	enc.Close()
	h.s(`">`)
}

func (h *htmlWriter) end(t *Totals) {
	if t == nil {
		h.s("</main>\n</body>\n</html>\n")
		return
	}
	h.s(`<footer class="totals"><h2>Totals</h2>`, "\n<p>")
	h.esc(usageLine(t.Usage, costOf(t.Cost)))
	h.s("</p>\n")
	if !usageEmpty(t.LastRound) {
		h.s(`<p class="sub">Last request: `)
		h.esc(usageLine(t.LastRound, ""))
		h.s("</p>\n")
	}
	h.s("</footer>\n</main>\n</body>\n</html>\n")
}

// costOf says a conversation's cost.
func costOf(c archive.Cost) string {
	switch c.Kind {
	case archive.CostReported:
		return money.Text(c.Dollars)
	case archive.CostEstimated:
		return money.Text(c.Dollars) + " estimated"
	case archive.CostNotBilled:
		return "not billed"
	case archive.CostUnknown:
		return "cost unknown"
	}
	return ""
}

// costText is a turn's cost, "" when unknown.
func costText(usd string) string {
	if usd == "" {
		return ""
	}
	return money.Text(jsonNumber(usd))
}

func usageEmpty(u archive.Usage) bool {
	return usageLine(u, "") == "no tokens"
}

// cutText cuts s to at most n bytes at a character's start, and says how
// many bytes were left out.
func cutText(s string, n int) (string, int) {
	if len(s) <= n {
		return s, 0
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut], len(s) - cut
}

// sizeText is a count of bytes for people: "512 bytes", "12 KB", "3.4 MB".
func sizeText(n int) string {
	switch {
	case n < 1000:
		return strconv.Itoa(n) + " bytes"
	case n < 1000_000:
		return strconv.Itoa((n+500)/1000) + " KB"
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}

// cssWord is s as a class name: letters and digits, the rest as '-'.
func cssWord(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			b[i] = '-'
		}
	}
	return string(b)
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
