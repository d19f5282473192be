package export

import (
	"io"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/util"
)

// md renders a message's Markdown as HTML for the page: GitHub's flavour
// (tables, strikethrough, task lists, bare URLs), with nothing of the text
// able to act on the page. Raw HTML is shown as the text it is, a link is
// one only for http, https and mailto URLs (any other shows its text and
// URL as text), and an image is never loaded: it shows as its description
// and URL. The parser takes no attributes ({#id .class}) from the text.
var md = goldmark.New(
	goldmark.WithExtensions(extension.Linkify, extension.Strikethrough, extension.TaskList,
		// A cell's alignment as an attribute: the page has no style
		// attribute of any kind.
		extension.NewTable(extension.WithTableCellAlignMethod(extension.TableCellAlignAttribute))),
	goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(safeRenderer{}, 10))),
)

// safeRenderer renders the nodes whose default rendering would let a
// message's text make markup, follow a URL or load one.
type safeRenderer struct{}

func (safeRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindLink, renderLink)
	reg.Register(ast.KindAutoLink, renderAutoLink)
	reg.Register(ast.KindImage, renderImage)
	reg.Register(ast.KindRawHTML, renderRawHTML)
	reg.Register(ast.KindHTMLBlock, renderHTMLBlock)
}

// safeURL reports whether a page may link to u: an absolute http, https
// or mailto URL.
func safeURL(u string) bool {
	if strings.ContainsAny(u, "\x00\r\n\t") {
		return false
	}
	p, err := url.Parse(u)
	if err != nil {
		return false
	}
	switch strings.ToLower(p.Scheme) {
	case "http", "https":
		return p.Host != ""
	case "mailto":
		return true
	}
	return false
}

// writeLink writes an anchor to u (which safeURL allows) showing text.
func writeLink(w io.Writer, u, text string) {
	io.WriteString(w, `<a href="`)
	escape(w, u)
	io.WriteString(w, `" rel="nofollow noopener noreferrer">`)
	escape(w, text)
	io.WriteString(w, `</a>`)
}

func renderLink(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	n := node.(*ast.Link)
	dest := string(n.Destination)
	ok := safeURL(dest)
	if entering {
		if ok {
			w.WriteString(`<a href="`)
			escape(w, dest)
			w.WriteString(`" rel="nofollow noopener noreferrer">`)
		} else {
			w.WriteString(`<span class="nolink">`)
		}
		return ast.WalkContinue, nil
	}
	if ok {
		w.WriteString(`</a>`)
	} else {
		w.WriteString(`</span>`)
	}
	// The URL is shown too: a link's text may say another.
	if dest != "" && dest != textOf(n, source) {
		w.WriteString(` <span class="url">(`)
		escape(w, dest)
		w.WriteString(`)</span>`)
	}
	return ast.WalkContinue, nil
}

func renderAutoLink(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.AutoLink)
	u, label := string(n.URL(source)), string(n.Label(source))
	if n.AutoLinkType == ast.AutoLinkEmail && !strings.HasPrefix(strings.ToLower(u), "mailto:") {
		u = "mailto:" + u
	}
	if safeURL(u) {
		writeLink(w, u, label)
	} else {
		escape(w, label)
	}
	return ast.WalkContinue, nil
}

// renderImage shows an image of the text as its description and URL:
// the page loads nothing.
func renderImage(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.Image)
	dest := string(n.Destination)
	w.WriteString(`<span class="rimg">[image`)
	if alt := textOf(n, source); alt != "" {
		w.WriteString(": ")
		escape(w, alt)
	}
	w.WriteString(`]</span> `)
	if safeURL(dest) && !strings.HasPrefix(strings.ToLower(dest), "mailto:") {
		writeLink(w, dest, dest)
	} else {
		w.WriteString(`<span class="url">`)
		escape(w, dest)
		w.WriteString(`</span>`)
	}
	return ast.WalkSkipChildren, nil
}

func renderRawHTML(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkSkipChildren, nil
	}
	n := node.(*ast.RawHTML)
	for i := range n.Segments.Len() {
		s := n.Segments.At(i)
		escape(w, string(s.Value(source)))
	}
	return ast.WalkSkipChildren, nil
}

func renderHTMLBlock(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	n := node.(*ast.HTMLBlock)
	if entering {
		w.WriteString(`<pre class="rawhtml">`)
		for i := range n.Lines().Len() {
			l := n.Lines().At(i)
			escape(w, string(l.Value(source)))
		}
		return ast.WalkContinue, nil
	}
	if n.HasClosure() {
		escape(w, string(n.ClosureLine.Value(source)))
	}
	w.WriteString("</pre>\n")
	return ast.WalkContinue, nil
}

// textOf is the text a node's inline children hold.
func textOf(n ast.Node, source []byte) string {
	var b strings.Builder
	ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch t := c.(type) {
		case *ast.Text:
			b.Write(t.Segment.Value(source))
		case *ast.String:
			b.Write(t.Value)
		case *ast.CodeSpan:
			for g := t.FirstChild(); g != nil; g = g.NextSibling() {
				if tx, ok := g.(*ast.Text); ok {
					b.Write(tx.Segment.Value(source))
				}
			}
			return ast.WalkSkipChildren, nil
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// escaper escapes text for HTML, in an element or an attribute's quotes.
var escaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;", "\x00", "\uFFFD")

// escape writes s escaped for HTML, invalid UTF-8 replaced.
func escape(w io.Writer, s string) {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	escaper.WriteString(w, s)
}
