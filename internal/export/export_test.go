package export

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"spbridge/internal/archive"
)

var update = flag.Bool("update", false, "rewrite the golden exports in testdata/golden")

// packages are the conversations the golden exports are made of: the
// sample package, and Recorded (turns replayed from the recorded CLI
// streams, with every item type format 1 has; make-recorded.py).
var packages = map[string]string{
	"Poster":   "../../testdata/packages/Poster.silverpoint",
	"Recorded": "testdata/Recorded.silverpoint",
}

// exportPackage exports the conversation of the package at dir.
func exportPackage(t testing.TB, dir, format string, opt Options) []byte {
	t.Helper()
	p, err := archive.Open(dir, archive.KindDocument, true)
	if err != nil {
		t.Fatal(err)
	}
	if p.Unreadable != "" {
		t.Fatalf("%s: %s", dir, p.Unreadable)
	}
	page := &Page{Title: filepath.Base(dir), Fields: []Field{{"Model", p.Conv.Provider + " / " + p.Conv.Model}}}
	var b bytes.Buffer
	if err := Conversation(&b, format, page, p.Conv, opt); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestGolden exports each package in each format and compares the page
// with its golden file (go test -update rewrites them).
func TestGolden(t *testing.T) {
	for name, dir := range packages {
		for _, format := range []string{HTML, Markdown} {
			t.Run(name+"."+format, func(t *testing.T) {
				got := exportPackage(t, dir, format, Options{})
				golden := filepath.Join("testdata", "golden", name+"."+format)
				if *update {
					if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(golden, got, 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (go test -update makes it)", err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s differs from %s (go test -update rewrites it):\n%s", name, golden, firstDiff(got, want))
				}
				if format == HTML {
					checkPage(t, string(got))
				}
			})
		}
	}
}

// firstDiff shows where got and want part.
func firstDiff(got, want []byte) string {
	gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range min(len(gl), len(wl)) {
		if gl[i] != wl[i] {
			return "line " + strconv.Itoa(i+1) + ":\n got: " + gl[i] + "\nwant: " + wl[i]
		}
	}
	return "lengths differ: got " + strconv.Itoa(len(gl)) + " lines, want " + strconv.Itoa(len(wl))
}

// TestGoldenShows checks that the Recorded page shows what its items hold:
// each kind of item, the diffs coloured, the images embedded (the user's
// and a tool's), the usage.
func TestGoldenShows(t *testing.T) {
	page := string(exportPackage(t, packages["Recorded"], HTML, Options{
		TurnUsage: func(id string) (TurnUsage, bool) {
			if id != "00000001-0000-4000-8000-000000000005" {
				return TurnUsage{}, false
			}
			return TurnUsage{Usage: archive.Usage{Input: "1500", Output: "40"}, Cost: "0.0123"}, true
		},
		TurnChanges: func(items []archive.Item) []FileChange {
			if items[0].ID() != "00000002-0000-4000-8000-000000000000" {
				return nil
			}
			return []FileChange{{Path: "sub/new.txt", Op: "added", Diff: "--- /dev/null\n+++ b/sub/new.txt\n@@ -0,0 +1,2 @@\n+first line\n+second line\n"}}
		},
	}))
	for _, want := range []string{
		`<div class="item user"><div class="head"><span class="who">You</span></div>`,
		`<img alt="image 1" src="data:image/png;base64,iVBORw0KGgo`,
		// The image Claude's Read returned, under its call.
		`<div class="block"><div class="label">Output</div><pre class="out">[image/png image, 80 bytes]</pre></div>
<div class="images"><img alt="image 1" src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAF0lEQVR4nGL5z4AdMOEQH6QSgAAAAP//z5kBEvfslMoAAAAASUVORK5CYII="></div>`,
		`<details class="item thinking"><summary>Thinking</summary>`,
		`<span class="d">-beta</span>`, `<span class="a">+BETA</span>`,
		`<span class="h">@@ -10,3 +10,3 @@</span>`,
		`<code class="title cmd">echo oops &gt;&amp;2; exit 3</code> <span class="status">failed · exit 3</span>`,
		`<span class="decision d-allowed-always">Allowed always</span>`,
		`<span class="decision d-denied">Denied</span>`,
		`<li class="chosen">Blue</li>`, `<p class="answer">Answer: Blue</p>`,
		`<li class="completed">☑ Read the code</li>`,
		`<h1>Plan: shorten the headline</h1>`,
		`<div class="item notice">`, `Codex compacted the conversation.`,
		`<div class="item failure">`,
		`<div class="item webSearch s-succeeded">`,
		`<a href="https://go.dev/doc/devel/release" rel="nofollow noopener noreferrer">release notes</a>`,
		`<table>`,
		`<p class="usage">1,500 in · 40 out · $0.0123</p>`,
		`<div class="changes"><h3>Files changed</h3>`, `<span class="path">added sub/new.txt</span>`,
		`<p>41,200 in · 2,310 out · 30,100 cache read · 1 web search · $0.0842 estimated</p>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	checkPage(t, page)
}

// TestHostile exports a conversation whose every text tries to act on the
// page (make-hostile.py) and checks the page as a browser would parse it:
// only the page's own elements and attributes, links only to http(s) and
// mailto, images only the embedded ones, the one stylesheet, the CSP; the
// huge line cut with a note; the image whose bytes are not its type not
// shown.
func TestHostile(t *testing.T) {
	page := string(exportPackage(t, "testdata/Hostile.silverpoint", HTML, Options{}))
	checkPage(t, page)
	for _, want := range []string{
		"&lt;script&gt;alert(1)&lt;/script&gt;",
		`<span class="nolink">click me</span> <span class="url">(javascript:alert(3))</span>`,
		`<span class="rimg">[image: remote]</span> <a href="https://evil.example/pixel.png"`,
		`more not shown on this page (the Markdown export, --format md, holds the whole text)`,
		`whose bytes are not one of the image types a page shows: not shown`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	md := string(exportPackage(t, "testdata/Hostile.silverpoint", Markdown, Options{}))
	if !strings.Contains(md, strings.Repeat("x<y>&", 100000)) {
		t.Error("the Markdown export does not hold the huge line whole")
	}
	for _, bad := range []string{"](javascript:", "](vbscript:", "](data:"} {
		if strings.Contains(md, "- ["+strings.TrimPrefix(bad, "]")) || strings.Contains(md, bad+"alert(24)") {
			t.Errorf("the Markdown export links %q", bad)
		}
	}
}

var (
	tagRE  = regexp.MustCompile(`<(/?)([a-zA-Z][a-zA-Z0-9]*)([^<>]*)>`)
	attrRE = regexp.MustCompile(`^\s+([a-z-]+)(?:="([^"<>]*)")?`)
	srcRE  = regexp.MustCompile(`^data:image/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=]+$`)
	hrefRE = regexp.MustCompile(`^(#turn-[0-9]+|https?://[^\s]+|mailto:[^\s]+)$`)
)

// The elements and attributes a page may have: its own.
var (
	okTags  = strings.Fields("html head meta title style body main header footer h1 h2 h3 h4 h5 h6 dl dt dd section div span p a code pre details summary ul ol li img table thead tbody tr th td em strong del blockquote hr br input")
	okAttrs = strings.Fields("class id href rel alt src open lang charset name content http-equiv checked disabled type start align")
)

// checkPage checks a page as markup: every tag one of the page's own
// (content shows only as text: a '<' of content is always escaped), its
// attributes the page's own, links and images as allowed; one
// stylesheet, the page's; the CSP meta first after the charset.
func checkPage(t testing.TB, page string) {
	t.Helper()
	head := "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta http-equiv=\"Content-Security-Policy\" content=\"" + CSP + "\">\n"
	if !strings.HasPrefix(page, head) {
		t.Fatalf("the page does not begin with its CSP:\n%.400s", page)
	}
	if n := strings.Count(page, "<style>"); n != 1 || !strings.Contains(page, "<style>"+stylesheet+"</style>") {
		t.Errorf("the page has %d style elements, or one not the page's own", n)
	}
	rest := strings.Replace(page, "<style>"+stylesheet+"</style>", "<style></style>", 1)
	for _, m := range tagRE.FindAllStringSubmatchIndex(rest, -1) {
		tag := strings.ToLower(rest[m[4]:m[5]])
		if !slices.Contains(okTags, tag) {
			t.Errorf("element %q: %.200s", tag, rest[m[0]:m[1]])
			continue
		}
		attrs := rest[m[6]:m[7]]
		for strings.TrimSpace(attrs) != "" {
			a := attrRE.FindStringSubmatch(attrs)
			if a == nil {
				t.Errorf("attributes of %s do not read: %.200s", tag, attrs)
				break
			}
			attrs = attrs[len(a[0]):]
			name, value := a[1], a[2]
			switch {
			case !slices.Contains(okAttrs, name):
				t.Errorf("attribute %q of %s: %.200s", name, tag, rest[m[0]:m[1]])
			case name == "href" && !hrefRE.MatchString(value):
				t.Errorf("link to %q", value)
			case name == "src" && !srcRE.MatchString(value):
				t.Errorf("image from %.100q", value)
			case name == "http-equiv" && value != "Content-Security-Policy":
				t.Errorf("meta http-equiv %q", value)
			case strings.Contains(strings.ToLower(value), "javascript:"):
				t.Errorf("attribute %s=%q", name, value)
			}
		}
	}
	// A '<' not starting a tag the scan read would be content let through.
	if n, tags := strings.Count(rest, "<")-strings.Count(rest, "<!DOCTYPE"), len(tagRE.FindAllStringIndex(rest, -1)); n != tags {
		t.Errorf("%d '<' but %d tags: content was not escaped", n, tags)
	}
}

// TestSafeURL: only absolute http, https and mailto URLs are links.
func TestSafeURL(t *testing.T) {
	for u, want := range map[string]bool{
		"https://go.dev/x?y=1":         true,
		"http://a.example":             true,
		"HTTPS://A.EXAMPLE":            true,
		"mailto:a@b.example":           true,
		"javascript:alert(1)":          false,
		"JaVaScRiPt:alert(1)":          false,
		" javascript:alert(1)":         false,
		"java\nscript:alert(1)":        false,
		"data:text/html,<b>":           false,
		"data:image/png;base64,AAAA":   false,
		"vbscript:x":                   false,
		"file:///etc/passwd":           false,
		"//evil.example/x":             false,
		"/relative":                    false,
		"https:///nohost":              false,
		"https://a.example/\x00":       false,
		"#fragment":                    false,
		"":                             false,
		"https://a.example/\"onload=x": true, // escaped where written
	} {
		if got := safeURL(u); got != want {
			t.Errorf("safeURL(%q) = %v, want %v", u, got, want)
		}
	}
}

// TestLineDiff: the common lines are context, the rest removed then
// added.
func TestLineDiff(t *testing.T) {
	for _, c := range []struct{ old, new, want string }{
		{"a\nb\nc\n", "a\nB\nc\n", " a|-b|+B| c"},
		{"", "x\ny", "+x|+y"},
		{"x\n", "", "-x"},
		{"beta\ngamma", "BETA\ngamma, edited", "-beta|-gamma|+BETA|+gamma, edited"},
	} {
		var parts []string
		for _, l := range lineDiff(c.old, c.new) {
			parts = append(parts, string(l.op)+l.text)
		}
		if got := strings.Join(parts, "|"); got != c.want {
			t.Errorf("lineDiff(%q, %q) = %q, want %q", c.old, c.new, got, c.want)
		}
	}
}

// TestPatchDiffs reads a patch's changes as Codex's items keep them, a
// file's header told from its lines by the summary's paths.
func TestPatchDiffs(t *testing.T) {
	changes := "update a.txt\n@@ -1 +1 @@\n-x\n+y\nadd b.txt\nadd a.txt is a line of b\n\\ No newline at end of file"
	got := patchDiffs(changes, "a.txt, b.txt")
	if len(got) != 2 || got[0].path != "a.txt" || got[0].op != "update" || got[1].path != "b.txt" || got[1].op != "add" {
		t.Fatalf("patchDiffs = %+v", got)
	}
	if l := got[1].lines; len(l) != 2 || l[0] != (diffLine{'+', "add a.txt is a line of b"}) {
		t.Errorf("the added file's lines: %+v", l)
	}
	if l := got[0].lines; len(l) != 3 || l[0].op != '@' || l[1] != (diffLine{'-', "x"}) || l[2] != (diffLine{'+', "y"}) {
		t.Errorf("the update's lines: %+v", l)
	}
}

// TestTurns: a turn begins at each user item, and at the first item.
func TestTurns(t *testing.T) {
	mk := func(types ...string) []archive.Item {
		var out []archive.Item
		for _, ty := range types {
			out = append(out, archive.NewItem(ty))
		}
		return out
	}
	for _, c := range []struct {
		items []archive.Item
		want  string
	}{
		{nil, ""},
		{mk("user", "assistant", "user", "tool", "assistant"), "0-2 2-5"},
		{mk("notice", "user", "assistant"), "0-1 1-3"},
		{mk("user", "user"), "0-1 1-2"},
	} {
		var parts []string
		for _, tr := range Turns(c.items) {
			parts = append(parts, strconv.Itoa(tr[0])+"-"+strconv.Itoa(tr[1]))
		}
		if got := strings.Join(parts, " "); got != c.want {
			t.Errorf("Turns = %q, want %q", got, c.want)
		}
	}
}

// FuzzExport puts any text in every kind of item and checks the page:
// nothing of it makes markup.
func FuzzExport(f *testing.F) {
	for _, s := range []string{
		"<script>alert(1)</script>", "[x](javascript:alert(1))", "![i](https://e.example/i.png)",
		"<img src=x onerror=alert(1)>", "```\n</pre>\n```", "<https://a.example>", "a\x00b\xff",
		"| a | b |\n|:-|-:|\n| <b> | [c](data:x) |", "- [x] done\n- [ ] <i>", "<!-- c --><?php ?><![CDATA[x]]>",
		"&lt;script&gt; &#60;b&#62; &amp;", "[a]: javascript:alert(1)\n\n[a]", "<details open><summary>x</summary>",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		conv := &archive.Conversation{}
		add := func(fields map[string]any) {
			conv.Items = append(conv.Items, archive.ItemFromMap(fields))
		}
		add(map[string]any{"id": "1", "type": "user", "text": s})
		add(map[string]any{"id": "2", "type": "assistant", "text": s, "citations": []any{map[string]any{"title": s, "url": s}}})
		add(map[string]any{"id": "3", "type": "thinking", "text": s})
		add(map[string]any{"id": "4", "type": "tool", "name": s, "summary": s, "status": "succeeded", "statusText": s, "detail": "arguments:\n" + s + "\n\noutput:\n" + s})
		add(map[string]any{"id": "5", "type": "tool", "name": "apply_patch", "summary": s, "status": "failed", "detail": "changes:\n" + s})
		add(map[string]any{"id": "6", "type": "directions", "text": s})
		add(map[string]any{"id": "7", "type": "questions", "questions": []any{map[string]any{"question": s, "options": []any{s}, "answer": s}}})
		add(map[string]any{"id": "8", "type": "webSearch", "query": s, "results": []any{map[string]any{"title": s, "url": s}}})
		add(map[string]any{"id": "9", "type": "failure", "text": s, "detail": s})
		add(map[string]any{"id": "10", "type": s, "text": s})
		var b bytes.Buffer
		if err := Conversation(&b, HTML, &Page{Title: s, Fields: []Field{{s, s}}}, conv, Options{}); err != nil {
			t.Fatal(err)
		}
		checkPage(t, b.String())
		b.Reset()
		if err := Conversation(&b, Markdown, &Page{Title: s}, conv, Options{}); err != nil {
			t.Fatal(err)
		}
	})
}

// TestToolImages pairs the tool items that name returned images with the
// images the history keeps after each result: results in the order the
// calls finished, an omitted image by its type, a tool whose images the
// history does not hold left without, a result's images never given twice.
func TestToolImages(t *testing.T) {
	img := func(mime string, n int) archive.Block {
		b, err := archive.NewImageBlock(mime, bytes.Repeat([]byte{1}, n))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tool := func(name, output string) archive.Item {
		it := archive.NewItem(archive.TypeTool)
		it.Set("name", name)
		it.Set("detail", "arguments:\n{}\n\noutput:\n"+output)
		return it
	}
	items := []archive.Item{
		tool("Read", "[image/png image, 3 bytes]"),       // 0: finished second
		tool("Bash", "ok"),                               // 1: no image
		tool("Read", "[image/jpeg image, 5 bytes]"),      // 2: finished first
		tool("Read", "[image/gif image, 7 bytes]"),       // 3: omitted from the save
		tool("Read", "[image/png image, 3 bytes]"),       // 4: the history holds no second such image
		tool("Read", "text\n[image/webp image, 1 byte]"), // 5: not in the history
	}
	omitted := archive.BlockFromMap(map[string]any{"type": archive.BlockImageOmitted, "mimeType": "image/gif"})
	history := []archive.Message{
		{Role: "user", Content: []archive.Block{archive.NewTextBlock("look"), img("image/png", 3)}},
		{Role: "tool", Content: []archive.Block{
			archive.NewToolResultBlock("c", "Read", "", false), img("image/jpeg", 5),
			archive.NewToolResultBlock("b", "Bash", "ok", false),
			archive.NewToolResultBlock("a", "Read", "", false), img("image/png", 3),
		}},
		{Role: "tool", Content: []archive.Block{archive.NewToolResultBlock("d", "Read", "", false), omitted}},
	}
	got := toolImages(items, history)
	sig := map[int]string{}
	for i, imgs := range got {
		for _, im := range imgs {
			sig[i] += im.MimeType + ":" + strconv.Itoa(len(im.Data)) + " "
		}
	}
	want := map[int]string{0: "image/png:3 ", 2: "image/jpeg:5 ", 3: "image/gif:0 "}
	if len(sig) != len(want) {
		t.Fatalf("toolImages = %v, want %v", sig, want)
	}
	for i, w := range want {
		if sig[i] != w {
			t.Errorf("item %d: %q, want %q", i, sig[i], w)
		}
	}
}
