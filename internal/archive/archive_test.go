package archive

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"spbridge/internal/canonjson"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestSeedExampleGolden decodes the seed's example with the real decoder and
// holds its canonical form.
func TestSeedExampleGolden(t *testing.T) {
	in, err := os.ReadFile("testdata/seed-example.json")
	if err != nil {
		t.Fatal(err)
	}
	conv, err := Decode(in)
	if err != nil {
		t.Fatalf("Decode(seed example): %v", err)
	}
	if len(conv.Items) != 3 || len(conv.History) != 5 || conv.Model != "claude-opus-5-5" || conv.Provider != "anthropic" {
		t.Errorf("seed example decoded as %d items, %d messages, model %q, provider %q", len(conv.Items), len(conv.History), conv.Model, conv.Provider)
	}
	if got := conv.Items[1].String("statusText"); got != "1 created" {
		t.Errorf("items[1].statusText = %q, want %q", got, "1 created")
	}
	if conv.EstimatedCost.Kind != CostEstimated || conv.EstimatedCost.Dollars != "0.0213" {
		t.Errorf("estimatedCost = %+v", conv.EstimatedCost)
	}
	if f := conv.Feedback["6F1C2A1E-2B1B-4C7A-9E43-1D2F3A4B5C60"]; f.Rating != "good" {
		t.Errorf("feedback = %+v", conv.Feedback)
	}
	if got := conv.History[2].Content[0].String("callID"); got != "toolu_1" {
		t.Errorf("history[2] callID = %q", got)
	}
	got, err := conv.Encode()
	if err != nil {
		t.Fatal(err)
	}
	golden := "testdata/seed-example.canonical.json"
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("canonical encoding of the seed example differs from %s (run with -update to see):\n%s", golden, got)
	}
}

// TestEncodeStable checks encode(decode(x)) for every archive in testdata:
// decoding the canonical bytes gives the same bytes again, and the value is
// what was read.
func TestEncodeStable(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.json")
	if len(files) < 3 {
		t.Fatalf("found %d archives in testdata", len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		conv, err := Decode(data)
		if err != nil {
			t.Errorf("Decode(%s): %v", f, err)
			continue
		}
		once, err := conv.Encode()
		if err != nil {
			t.Fatalf("Encode(%s): %v", f, err)
		}
		conv2, err := Decode(once)
		if err != nil {
			t.Fatalf("Decode(Encode(%s)): %v", f, err)
		}
		twice, _ := conv2.Encode()
		if !bytes.Equal(once, twice) {
			t.Errorf("%s: encoding is not stable", f)
		}
		if bytes.HasSuffix(once, []byte("\n")) || bytes.HasPrefix(once, []byte("\xef\xbb\xbf")) {
			t.Errorf("%s: trailing newline or byte-order mark", f)
		}
		// Every value read is written: the canonical form decodes to a superset
		// of the input's fields with the same values.
		orig, _ := canonjson.Decode(data)
		back, _ := canonjson.Decode(once)
		if missing := missingFields("", orig, back); missing != "" {
			t.Errorf("%s: %s lost or changed", f, missing)
		}
	}
}

// missingFields returns the first path whose value in a is not in b.
func missingFields(path string, a, b any) string {
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok {
			return path
		}
		for k, v := range a {
			if v == nil {
				continue
			}
			if m := missingFields(path+"."+k, v, bm[k]); m != "" {
				return m
			}
		}
		return ""
	case []any:
		ba, ok := b.([]any)
		if !ok || len(ba) != len(a) {
			return path
		}
		for i := range a {
			if m := missingFields(fmt.Sprintf("%s[%d]", path, i), a[i], ba[i]); m != "" {
				return m
			}
		}
		return ""
	default:
		if !reflect.DeepEqual(a, b) {
			return path
		}
		return ""
	}
}

func TestCanonicalLayout(t *testing.T) {
	conv := &Conversation{}
	it := NewItem(TypeAssistant)
	it.Set("text", "a/b <é> & \"q\"\n\x01")
	conv.Items = append(conv.Items, it)
	got, err := conv.Encode()
	if err != nil {
		t.Fatal(err)
	}
	s := string(got)
	for _, want := range []string{
		"{\n  \"approvalCards\" : {},\n  \"estimatedCost\" : {\n    \"kind\" : \"unknown\"\n  },\n",
		"\"text\" : \"a/b <é> & \\\"q\\\"\\n\\u0001\",",
		"\"queued\" : [],",
		"\"formatVersion\" : 1,",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("encoding lacks %q:\n%s", want, s)
		}
	}
	if strings.HasSuffix(s, "\n") {
		t.Error("encoding ends with a newline")
	}
	keys := []string{"approvalCards", "estimatedCost", "feedback", "formatVersion", "history", "items", "lastRoundUsage", "lintRuleCards", "model", "provider", "queued", "resolvedCards", "sentFacts", "skillCards", "unsent", "usage"}
	last := -1
	for _, k := range keys {
		i := strings.Index(s, "\n  \""+k+"\" : ")
		if i < 0 || i < last {
			t.Errorf("top-level key %q missing or out of order", k)
		}
		last = i
	}
}

func TestUnknownFieldsKept(t *testing.T) {
	in := `{"formatVersion":1,"future":{"z":[1.50,"x"]},
	"items":[
	  {"id":"A","type":"skillProposal","skill":{"name":"s","steps":[1,2]},"state":"open"},
	  {"id":"B","type":"tool","name":"Bash","status":"denied","hostField":true,"statusText":"denied"},
	  {"id":"C","type":"reportedIssue","anything":null},
	  {"id":"D","type":"lintRuleProposal","rule":{}}
	],
	"history":[{"role":"user","content":[{"type":"text","text":"hi","cache":"x"}],"meta":7}],
	"usage":{"input":1e3,"output":2,"cacheRead":0,"cacheWrite":0,"webSearchRequests":0,"cacheWrite1h":0,"reportedCost":0.10,"extra":"e"},
	"estimatedCost":{"kind":"reported","dollars":0.10,"note":"n"},
	"feedback":{"B":{"rating":"bad","reasons":["slow"],"at":"now"}},
	"skillCards":{"A":{"state":"accepted"}},"resolvedCards":["A"],"queued":["later"],"unsent":[{"text":"x"}],
	"sentFacts":[{"message":0,"sections":["a"]}]}`
	conv, err := Decode([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	out, err := conv.Encode()
	if err != nil {
		t.Fatal(err)
	}
	orig, _ := canonjson.Decode([]byte(in))
	back, _ := canonjson.Decode(out)
	if m := missingFields("", orig, back); m != "" {
		t.Errorf("%s lost or changed:\n%s", m, out)
	}
	for _, want := range []string{`"input" : 1e3`, `"reportedCost" : 0.10`, `"dollars" : 0.10`, `"anything" : null`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("encoding lacks %s", want)
		}
	}
}

func TestDecodeUnreadable(t *testing.T) {
	tests := []struct {
		name, in string
	}{
		{"not JSON", `{"formatVersion":1,`},
		{"array", `[]`},
		{"no formatVersion", `{"items":[]}`},
		{"formatVersion 2", `{"formatVersion":2}`},
		{"formatVersion string", `{"formatVersion":"1"}`},
		{"items not array", `{"formatVersion":1,"items":{}}`},
		{"item without id", `{"formatVersion":1,"items":[{"type":"user","text":"x"}]}`},
		{"item without type", `{"formatVersion":1,"items":[{"id":"A"}]}`},
		{"unknown item type", `{"formatVersion":1,"items":[{"id":"A","type":"video"}]}`},
		{"text not string", `{"formatVersion":1,"items":[{"id":"A","type":"user","text":5}]}`},
		{"hasImage not bool", `{"formatVersion":1,"items":[{"id":"A","type":"user","hasImage":"yes"}]}`},
		{"bad tool status", `{"formatVersion":1,"items":[{"id":"A","type":"tool","status":"done"}]}`},
		{"citations not links", `{"formatVersion":1,"items":[{"id":"A","type":"reportedIssue","citations":[{"url":3}]}]}`},
		{"questions wrong", `{"formatVersion":1,"items":[{"id":"A","type":"questions","questions":[{"options":"a"}]}]}`},
		{"unknown block", `{"formatVersion":1,"history":[{"role":"user","content":[{"type":"audio"}]}]}`},
		{"block missing field", `{"formatVersion":1,"history":[{"role":"user","content":[{"type":"toolResult","callID":"a","toolName":"b","content":"c"}]}]}`},
		{"message without content", `{"formatVersion":1,"history":[{"role":"user"}]}`},
		{"usage not number", `{"formatVersion":1,"usage":{"input":"5"}}`},
		{"cost kind", `{"formatVersion":1,"estimatedCost":{"kind":"free"}}`},
		{"model not string", `{"formatVersion":1,"model":5}`},
		{"resolvedCards not strings", `{"formatVersion":1,"resolvedCards":[1]}`},
		{"feedback reasons", `{"formatVersion":1,"feedback":{"A":{"rating":"good","reasons":"x"}}}`},
	}
	for _, tt := range tests {
		if _, err := Decode([]byte(tt.in)); err == nil {
			t.Errorf("Decode(%s) succeeded, want an error", tt.name)
		}
	}
	var verr *VersionError
	if _, err := Decode([]byte(`{"formatVersion":2}`)); !errors.As(err, &verr) || verr.Version != "2" {
		t.Errorf("Decode(formatVersion 2) = %v, want a *VersionError", err)
	}
}

// snapshot records every file and folder under dir: mode, and the bytes or
// link target, so that two snapshots are equal only for an untouched tree.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		desc := fi.Mode().String()
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(path)
			desc += " -> " + target
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			desc += fmt.Sprintf(" %x %d", sum, stampOf(fi).ino)
		}
		out[rel] = desc
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return out
}

func newPackage(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "Poster.silverpoint")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "document.json"), []byte(`{"doc":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func writeAgentFile(t *testing.T, pkg, rel string, data []byte) {
	t.Helper()
	path := filepath.Join(pkg, AgentDir, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func mustOpen(t *testing.T, dir string) *Package {
	t.Helper()
	p, err := Open(dir, KindDocument, true)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return p
}

func mustSave(t *testing.T, p *Package) *SaveReport {
	t.Helper()
	r, err := p.Save(true)
	if err != nil {
		t.Fatalf("Save: %v", err)
	}
	return r
}

func addTurn(c *Conversation, user, reply string, images ...Block) {
	u := NewItem(TypeUser)
	u.Set("text", user)
	if len(images) > 0 {
		u.Set("hasImage", true)
	}
	a := NewItem(TypeAssistant)
	a.Set("text", reply)
	c.Items = append(c.Items, u, a)
	content := append([]Block{NewTextBlock(user)}, images...)
	c.History = append(c.History,
		Message{Role: "user", Content: content},
		Message{Role: "assistant", Content: []Block{NewTextBlock(reply)}})
}

func image(t *testing.T, seed string, size int) Block {
	t.Helper()
	data := bytes.Repeat([]byte(seed), size/len(seed)+1)[:size]
	b, err := NewImageBlock("image/png", data)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSaveAndReopen(t *testing.T) {
	pkg := newPackage(t)
	doc := snapshot(t, pkg)["document.json"]
	p := mustOpen(t, pkg)
	if p.Unreadable != "" || len(p.Conv.Items) != 0 {
		t.Fatalf("new package opened with %d items, unreadable %q", len(p.Conv.Items), p.Unreadable)
	}
	img := image(t, "png", 1000)
	addTurn(p.Conv, "Make a card", "Made a card.", img, img) // the same image twice
	r := mustSave(t, p)
	name := img.String("sha256") + ".png"
	want := []string{"agent/", "agent/images/" + name, "agent/conversation.json"}
	if !reflect.DeepEqual(r.Written, want) {
		t.Errorf("Save wrote %q, want %q", r.Written, want)
	}
	snap := snapshot(t, pkg)
	if snap["document.json"] != doc {
		t.Error("save changed document.json")
	}
	for rel, mode := range map[string]string{"agent": "drwx------", "agent/images": "drwx------", "agent/conversation.json": "-rw-------", "agent/images/" + name: "-rw-------"} {
		if !strings.HasPrefix(snap[rel], mode) {
			t.Errorf("%s: %q, want mode %s", rel, snap[rel], mode)
		}
	}
	files, _ := os.ReadDir(filepath.Join(pkg, "agent", "images"))
	if len(files) != 1 {
		t.Errorf("images folder holds %d files, want 1", len(files))
	}

	// An unchanged save writes nothing, in this open and after a reopen.
	if r := mustSave(t, p); r.Changed() {
		t.Errorf("unchanged save changed %+v", r)
	}
	p2 := mustOpen(t, pkg)
	if r := mustSave(t, p2); r.Changed() {
		t.Errorf("unchanged save after reopen changed %+v", r)
	}
	if !reflect.DeepEqual(snapshot(t, pkg), snap) {
		t.Error("unchanged saves touched the package")
	}
	if got := p2.Conv.History[0].Content[1]; got.Type() != BlockImage || !bytes.Equal(got.ImageData(), img.ImageData()) {
		t.Errorf("reopened image block = %v", got.Map())
	}
	a, _ := p.Conv.Encode()
	b, _ := p2.Conv.Encode()
	if !bytes.Equal(a, b) {
		t.Error("reopened conversation encodes differently")
	}

	// A change rewrites conversation.json but never an existing image file.
	addTurn(p2.Conv, "Again", "Done.")
	r = mustSave(t, p2)
	if !reflect.DeepEqual(r.Written, []string{"agent/conversation.json"}) || len(r.Removed) != 0 {
		t.Errorf("second turn's save = %+v", r)
	}
	if s := snapshot(t, pkg); s["agent/images/"+name] != snap["agent/images/"+name] {
		t.Error("the image file was rewritten")
	}
}

func TestImageLoadRules(t *testing.T) {
	pkg := newPackage(t)
	p := mustOpen(t, pkg)
	good, bad, gone := image(t, "good", 100), image(t, "bad", 100), image(t, "gone", 100)
	addTurn(p.Conv, "images", "ok", good, bad, gone)
	mustSave(t, p)
	imgDir := filepath.Join(pkg, "agent", "images")
	if err := os.WriteFile(filepath.Join(imgDir, bad.String("sha256")+".png"), []byte("tampered"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(imgDir, gone.String("sha256")+".png")); err != nil {
		t.Fatal(err)
	}
	p2 := mustOpen(t, pkg)
	content := p2.Conv.History[0].Content
	gotTypes := []string{content[1].Type(), content[2].Type(), content[3].Type()}
	if want := []string{BlockImage, BlockImageOmitted, BlockImageOmitted}; !reflect.DeepEqual(gotTypes, want) {
		t.Errorf("loaded image blocks = %v, want %v", gotTypes, want)
	}
	if content[2].String("mimeType") != "image/png" || content[2].String("sha256") != "" {
		t.Errorf("omitted block = %v", content[2].Map())
	}
	if content[2].ModelText() != ImageOmittedText {
		t.Errorf("ModelText of omitted image = %q", content[2].ModelText())
	}
	r := mustSave(t, p2)
	if !slices.Contains(r.Removed, "agent/images/"+bad.String("sha256")+".png") {
		t.Errorf("save did not remove the unreferenced tampered file: %+v", r)
	}
	files, _ := os.ReadDir(imgDir)
	if len(files) != 1 || files[0].Name() != good.String("sha256")+".png" {
		t.Errorf("images folder = %v", files)
	}
}

func TestImageCapBoundary(t *testing.T) {
	tests := []struct {
		name string
		// sizes of the images, oldest first, each in its own turn
		sizes []int
		// whether each is kept, oldest first
		kept []bool
	}{
		{"exactly the cap fits", []int{ImageCap}, []bool{true}},
		{"one byte more does not", []int{ImageCap + 1}, []bool{false}},
		{"two that sum to the cap", []int{ImageCap - 10, 10}, []bool{true, true}},
		{"older smaller image after the first that does not fit", []int{5, ImageCap - 100, 200}, []bool{false, false, true}},
		{"newest too big alone", []int{10, ImageCap + 1}, []bool{false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pkg := newPackage(t)
			p := mustOpen(t, pkg)
			var blocks []Block
			for i, size := range tt.sizes {
				b := image(t, fmt.Sprintf("img%d-", i), size)
				blocks = append(blocks, b)
				addTurn(p.Conv, fmt.Sprintf("turn %d", i), "ok", b)
			}
			mustSave(t, p)
			// The live conversation keeps every image.
			for i := range tt.sizes {
				if got := p.Conv.History[2*i].Content[1]; got.Type() != BlockImage || got.ImageData() == nil {
					t.Errorf("live image %d became %s", i, got.Type())
				}
			}
			p2 := mustOpen(t, pkg)
			for i, want := range tt.kept {
				got := p2.Conv.History[2*i].Content[1].Type() == BlockImage
				if got != want {
					t.Errorf("image %d (%d bytes) kept = %v, want %v", i, tt.sizes[i], got, want)
				}
				_, err := os.Lstat(filepath.Join(pkg, "agent", "images", blocks[i].String("sha256")+".png"))
				if (err == nil) != want {
					t.Errorf("image %d file exists = %v, want %v", i, err == nil, want)
				}
			}
		})
	}
}

func TestImageCapCountsHashOnceAtNewest(t *testing.T) {
	pkg := newPackage(t)
	p := mustOpen(t, pkg)
	big := image(t, "big", ImageCap/2+10)
	mid := image(t, "mid", ImageCap/2-20)
	small := image(t, "small", 20)
	// Oldest first: big, small, big again, mid. Newest first: mid, big (counted
	// once, here), small. mid+big = cap-10 fits; small (20) does not and is
	// omitted; the older place of big stays, as it was counted at its newest.
	addTurn(p.Conv, "1", "ok", big)
	addTurn(p.Conv, "2", "ok", small)
	addTurn(p.Conv, "3", "ok", big)
	addTurn(p.Conv, "4", "ok", mid)
	mustSave(t, p)
	p2 := mustOpen(t, pkg)
	var got []string
	for i := 0; i < 4; i++ {
		got = append(got, p2.Conv.History[2*i].Content[1].Type())
	}
	want := []string{BlockImage, BlockImageOmitted, BlockImage, BlockImage}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("after the cap: %v, want %v", got, want)
	}
}

func TestUnreadablePreserved(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, pkg, outside string)
	}{
		{"invalid JSON", func(t *testing.T, pkg, _ string) {
			writeAgentFile(t, pkg, "conversation.json", []byte(`{"formatVersion":1,"items":[`))
			writeAgentFile(t, pkg, "images/keep.bin", []byte("x"))
		}},
		{"newer format", func(t *testing.T, pkg, _ string) {
			writeAgentFile(t, pkg, "conversation.json", []byte(`{"formatVersion":2,"items":[{"id":"A","type":"hologram"}]}`))
		}},
		{"wrong shape", func(t *testing.T, pkg, _ string) {
			writeAgentFile(t, pkg, "conversation.json", []byte(`{"formatVersion":1,"items":[{"id":"A","type":"user","text":["x"]}]}`))
		}},
		{"agent is a file", func(t *testing.T, pkg, _ string) {
			if err := os.WriteFile(filepath.Join(pkg, "agent"), []byte("the host's"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"invalid UTF-8", func(t *testing.T, pkg, _ string) {
			writeAgentFile(t, pkg, "conversation.json", []byte("{\"formatVersion\":1,\"items\":[{\"id\":\"A\",\"type\":\"user\",\"text\":\"caf\xe9\"}]}"))
		}},
		{"lone surrogate", func(t *testing.T, pkg, _ string) {
			writeAgentFile(t, pkg, "conversation.json", []byte(`{"formatVersion":1,"items":[{"id":"A","type":"user","text":"\ud800"}]}`))
		}},
		{"nested too deep", func(t *testing.T, pkg, _ string) {
			writeAgentFile(t, pkg, "conversation.json", hostFieldAt(MaxConversationDepth+1))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pkg := newPackage(t)
			outside := t.TempDir()
			tt.setup(t, pkg, outside)
			before, outsideBefore := snapshot(t, pkg), snapshot(t, outside)
			p := mustOpen(t, pkg)
			if p.Unreadable == "" || !p.Preserved() {
				t.Fatalf("opened as readable")
			}
			if len(p.Conv.Items) != 1 || p.Conv.Items[0].Type() != TypeNotice || !strings.HasPrefix(p.Conv.Items[0].String("text"), UnreadableNotice) {
				t.Fatalf("items = %v, want one notice", p.Conv.Items)
			}
			if strings.Contains(p.Conv.Items[0].String("text"), "secret") {
				t.Error("a link outside the package was followed")
			}
			for range 3 {
				if r := mustSave(t, p); r.Changed() {
					t.Errorf("save of a preserved conversation changed %+v", r)
				}
				// A rating or queued message is not a turn.
				p.Conv.Queued = append(p.Conv.Queued, "later")
			}
			if !reflect.DeepEqual(snapshot(t, pkg), before) {
				t.Error("the unreadable agent folder changed")
			}
			// A reopen shows the same single notice.
			if p2 := mustOpen(t, pkg); len(p2.Conv.Items) != 1 {
				t.Errorf("reopen: %d items", len(p2.Conv.Items))
			}
			// A turn replaces it with format 1.
			p.BeginTurn()
			addTurn(p.Conv, "hello", "hi")
			mustSave(t, p)
			p3 := mustOpen(t, pkg)
			if p3.Unreadable != "" || len(p3.Conv.Items) != 3 {
				t.Errorf("after a turn: unreadable %q, %d items", p3.Unreadable, len(p3.Conv.Items))
			}
			if fi, err := os.Lstat(filepath.Join(pkg, "agent")); err != nil || !fi.IsDir() {
				t.Errorf("agent is not a real folder after the turn's save")
			}
			if !reflect.DeepEqual(snapshot(t, outside), outsideBefore) {
				t.Error("a save wrote outside the package")
			}
			if _, err := p3.NewConversation(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(filepath.Join(pkg, "agent")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("New Conversation left agent/: %v", err)
			}
		})
	}
}

func TestNewConversationRemovesUnreadable(t *testing.T) {
	pkg := newPackage(t)
	writeAgentFile(t, pkg, "conversation.json", []byte(`garbage`))
	p := mustOpen(t, pkg)
	r, err := p.NewConversation()
	if err != nil || !reflect.DeepEqual(r.Removed, []string{"agent/"}) {
		t.Fatalf("NewConversation = %+v, %v", r, err)
	}
	if _, err := os.Lstat(filepath.Join(pkg, "agent")); !errors.Is(err, fs.ErrNotExist) {
		t.Error("agent/ still there")
	}
	if len(p.Conv.Items) != 0 || p.Preserved() {
		t.Error("conversation not reset")
	}
}

func TestEmptyTemplateAndKeepOff(t *testing.T) {
	t.Run("empty writes nothing", func(t *testing.T) {
		pkg := newPackage(t)
		p := mustOpen(t, pkg)
		if r := mustSave(t, p); r.Changed() {
			t.Errorf("empty save = %+v", r)
		}
		if _, err := os.Lstat(filepath.Join(pkg, "agent")); !errors.Is(err, fs.ErrNotExist) {
			t.Error("empty conversation wrote agent/")
		}
	})
	t.Run("emptied conversation removes agent", func(t *testing.T) {
		pkg := newPackage(t)
		p := mustOpen(t, pkg)
		addTurn(p.Conv, "a", "b", image(t, "x", 10))
		mustSave(t, p)
		p.Conv = &Conversation{}
		mustSave(t, p)
		if _, err := os.Lstat(filepath.Join(pkg, "agent")); !errors.Is(err, fs.ErrNotExist) {
			t.Error("agent/ left after saving an empty conversation")
		}
	})
	for _, kind := range []Kind{KindTemplate, KindDesignSystem} {
		t.Run(string(kind), func(t *testing.T) {
			pkg := newPackage(t)
			p, err := Open(pkg, kind, true)
			if err != nil {
				t.Fatal(err)
			}
			addTurn(p.Conv, "a", "b")
			if r, err := p.Save(true); err != nil || r.Changed() {
				t.Errorf("Save = %+v, %v", r, err)
			}
			if _, err := os.Lstat(filepath.Join(pkg, "agent")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s package got an agent folder", kind)
			}
		})
	}
	t.Run("keep off", func(t *testing.T) {
		pkg := newPackage(t)
		p := mustOpen(t, pkg)
		addTurn(p.Conv, "a", "b")
		mustSave(t, p)
		off, err := Open(pkg, KindDocument, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(off.Conv.Items) != 0 {
			t.Error("keep off restored the conversation")
		}
		addTurn(off.Conv, "c", "d")
		r, err := off.Save(false)
		if err != nil || !reflect.DeepEqual(r.Removed, []string{"agent/"}) {
			t.Errorf("Save(keep off) = %+v, %v", r, err)
		}
		if _, err := os.Lstat(filepath.Join(pkg, "agent")); !errors.Is(err, fs.ErrNotExist) {
			t.Error("keep off left agent/")
		}
		// An unreadable folder goes too.
		writeAgentFile(t, pkg, "conversation.json", []byte(`{`))
		p = mustOpen(t, pkg)
		if _, err := p.Save(false); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(filepath.Join(pkg, "agent")); !errors.Is(err, fs.ErrNotExist) {
			t.Error("keep off left an unreadable agent/")
		}
	})
}

func TestRefusesBadNamesAndLinks(t *testing.T) {
	pkg := newPackage(t)
	outside := t.TempDir()
	secret := []byte("outside bytes")
	sum := sha256.Sum256(secret)
	hash := hex.EncodeToString(sum[:])
	if err := os.WriteFile(filepath.Join(outside, "secret.png"), secret, 0o644); err != nil {
		t.Fatal(err)
	}
	conv := fmt.Sprintf(`{"formatVersion":1,"items":[{"id":"A","type":"user","text":"x"}],"history":[{"role":"user","content":[
		{"type":"image","mimeType":"image/png","sha256":"../../../%s/secret"},
		{"type":"image","mimeType":"image/png","sha256":"%s"},
		{"type":"image","mimeType":"image/png","sha256":"%s"},
		{"type":"image","mimeType":"image/tiff","sha256":"%s"}]}]}`, outside, strings.ToUpper(hash), hash, hash)
	writeAgentFile(t, pkg, "conversation.json", []byte(conv))
	if err := os.MkdirAll(filepath.Join(pkg, "agent", "images"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.png"), filepath.Join(pkg, "agent", "images", hash+".png")); err != nil {
		t.Fatal(err)
	}
	p := mustOpen(t, pkg)
	for i, b := range p.Conv.History[0].Content {
		if b.Type() != BlockImageOmitted {
			t.Errorf("block %d = %v, want imageOmitted", i, b.Map())
		}
	}
	// The link in images/ is refused, not removed.
	link := filepath.Join(pkg, "agent", "images", hash+".png")
	var le *LinkError
	if _, err := p.Save(true); !errors.As(err, &le) || le.Path != link {
		t.Errorf("Save = %v, want a *LinkError naming %s", err, link)
	}
	if data, _ := os.ReadFile(filepath.Join(outside, "secret.png")); !bytes.Equal(data, secret) {
		t.Error("the file outside the package changed")
	}
	if fi, err := os.Lstat(link); err != nil || !isLink(fi) {
		t.Errorf("the link in images/ did not stay: %v", err)
	}

	if _, err := NewImageBlock("image/tiff", []byte("x")); !errors.Is(err, ErrImageType) {
		t.Errorf("NewImageBlock(image/tiff) = %v, want ErrImageType", err)
	}
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	if _, err := Open(file, KindDocument, true); !errors.Is(err, ErrNotFolder) {
		t.Errorf("Open(regular file) = %v, want ErrNotFolder", err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing"), KindDocument, true); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open(missing) = %v, want not exist", err)
	}
}

func TestSaveCleansStrayTemporaryFiles(t *testing.T) {
	pkg := newPackage(t)
	p := mustOpen(t, pkg)
	img := image(t, "x", 10)
	addTurn(p.Conv, "a", "b", img)
	mustSave(t, p)
	writeAgentFile(t, pkg, tempPrefix+"conversation.json-123", []byte("torn"))
	writeAgentFile(t, pkg, "images/"+tempPrefix+"abc.png-1", []byte("torn"))
	p = mustOpen(t, pkg)
	mustSave(t, p)
	for _, rel := range []string{tempPrefix + "conversation.json-123", "images/" + tempPrefix + "abc.png-1"} {
		if _, err := os.Lstat(filepath.Join(pkg, "agent", rel)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s left behind", rel)
		}
	}
}

func TestCheck(t *testing.T) {
	pkg := newPackage(t)
	if probs, err := Check(pkg); err != nil || len(probs) != 0 {
		t.Errorf("Check(no agent) = %v, %v", probs, err)
	}
	p := mustOpen(t, pkg)
	a, b := image(t, "a", 10), image(t, "b", 10)
	addTurn(p.Conv, "x", "y", a, b)
	mustSave(t, p)
	if probs, err := Check(pkg); err != nil || len(probs) != 0 {
		t.Errorf("Check(sound) = %v, %v", probs, err)
	}
	// The files' checkpoints are spbridge's own, not stray.
	if err := os.MkdirAll(filepath.Join(pkg, "agent", CheckpointsDir, "blobs"), 0o700); err != nil {
		t.Fatal(err)
	}
	if probs, err := Check(pkg); err != nil || len(probs) != 0 {
		t.Errorf("Check(with checkpoints) = %v, %v", probs, err)
	}
	imgDir := filepath.Join(pkg, "agent", "images")
	os.WriteFile(filepath.Join(imgDir, a.String("sha256")+".png"), []byte("other"), 0o600)
	os.Remove(filepath.Join(imgDir, b.String("sha256")+".png"))
	os.WriteFile(filepath.Join(imgDir, "notes.txt"), nil, 0o600)
	os.WriteFile(filepath.Join(imgDir, strings.Repeat("0", 64)+".png"), nil, 0o644)
	os.Chmod(filepath.Join(pkg, "agent", "conversation.json"), 0o644)
	probs, err := Check(pkg)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(probs, "\n")
	for _, want := range []string{
		"agent/images/" + a.String("sha256") + ".png: bytes hash to",
		"agent/images/" + b.String("sha256") + ".png: missing",
		"agent/images/notes.txt: stray file",
		strings.Repeat("0", 64) + ".png: not referenced",
		strings.Repeat("0", 64) + ".png: mode 0644, want 0600",
		"agent/conversation.json: mode 0644, want 0600",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("Check lacks %q in:\n%s", want, all)
		}
	}
	writeAgentFile(t, pkg, "conversation.json", []byte(`{"formatVersion":3}`))
	probs, _ = Check(pkg)
	if all := strings.Join(probs, "\n"); !strings.Contains(all, "format version 3") {
		t.Errorf("Check(newer) = %s", all)
	}
}

func TestCheckCap(t *testing.T) {
	pkg := newPackage(t)
	big := bytes.Repeat([]byte("z"), ImageCap/2+1)
	sum := sha256.Sum256(big)
	h1 := hex.EncodeToString(sum[:])
	big2 := append(bytes.Clone(big), 'q')
	sum = sha256.Sum256(big2)
	h2 := hex.EncodeToString(sum[:])
	writeAgentFile(t, pkg, "images/"+h1+".png", big)
	writeAgentFile(t, pkg, "images/"+h2+".png", big2)
	writeAgentFile(t, pkg, "conversation.json", []byte(fmt.Sprintf(`{"formatVersion":1,"history":[{"role":"user","content":[{"type":"image","mimeType":"image/png","sha256":"%s"},{"type":"image","mimeType":"image/png","sha256":"%s"}]}]}`, h1, h2)))
	probs, _ := Check(pkg)
	if all := strings.Join(probs, "\n"); !strings.Contains(all, "over the cap") {
		t.Errorf("Check(over cap) = %q", all)
	}
}

func TestList(t *testing.T) {
	root := t.TempDir()
	for i, name := range []string{"b/Two.silverpoint", "A.silverpoint", "c/Bad.silverpoint"} {
		pkg := filepath.Join(root, name)
		os.MkdirAll(pkg, 0o755)
		if i == 2 {
			writeAgentFile(t, pkg, "conversation.json", []byte("{"))
			continue
		}
		p := mustOpen(t, pkg)
		addTurn(p.Conv, "a", "b")
		p.Conv.Provider, p.Conv.Model = "claude-code", "sonnet"
		mustSave(t, p)
	}
	os.MkdirAll(filepath.Join(root, "empty.silverpoint"), 0o755)
	got, err := List(root)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, s := range got {
		rel, _ := filepath.Rel(root, s.Path)
		paths = append(paths, rel)
	}
	if want := []string{"A.silverpoint", "b/Two.silverpoint", "c/Bad.silverpoint"}; !reflect.DeepEqual(paths, want) {
		t.Fatalf("List = %v, want %v", paths, want)
	}
	if got[0].Items != 2 || got[0].Provider != "claude-code" || got[0].Unreadable != "" {
		t.Errorf("List[0] = %+v", got[0])
	}
	if got[2].Unreadable == "" {
		t.Errorf("List[2] = %+v, want unreadable", got[2])
	}
}

func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"formatVersion":1,"items":[{"id":"A","type":"tool","status":"running"}]}`))
	f.Add([]byte("{\"formatVersion\":1,\"items\":[{\"id\":\"A\",\"type\":\"user\",\"text\":\"caf\xe9\"}]}"))
	f.Add([]byte(`{"formatVersion":1,"items":[{"id":"A","type":"user","text":"\ud83d\ude00 \udc00"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		conv, err := Decode(data)
		if err != nil {
			return
		}
		// Text that is not UTF-8, or a lone surrogate escape, is unreadable:
		// never repaired. (canonjson's own fuzz target checks that its
		// decoder refuses exactly those.)
		if !utf8.Valid(data) {
			t.Fatalf("Decode(%q) succeeded on text that is not UTF-8", data)
		}
		if _, err := canonjson.Decode(data); err != nil {
			t.Fatalf("Decode(%q) succeeded where the JSON reader refuses it: %v", data, err)
		}
		once, err := conv.Encode()
		if err != nil {
			t.Fatalf("Encode after Decode: %v", err)
		}
		if !utf8.Valid(once) {
			t.Fatalf("Encode wrote text that is not UTF-8: %q", once)
		}
		conv2, err := Decode(once)
		if err != nil {
			t.Fatalf("Decode of the canonical form: %v\n%s", err, once)
		}
		twice, err := conv2.Encode()
		if err != nil || !bytes.Equal(once, twice) {
			t.Fatalf("encoding not stable:\n%s\n%s", once, twice)
		}
	})
}

// TestDecodeRefusesInvalidText checks that a conversation.json holding text
// that is not UTF-8, or a lone surrogate escape, opens as unreadable with
// the one notice and is kept byte-identical, never repaired.
func TestDecodeRefusesInvalidText(t *testing.T) {
	for name, data := range map[string][]byte{
		"invalid UTF-8":            []byte("{\"formatVersion\":1,\"items\":[{\"id\":\"A\",\"type\":\"user\",\"text\":\"caf\xe9\"}]}"),
		"invalid UTF-8 in a key":   []byte("{\"formatVersion\":1,\"items\":[],\"host\xff\":1}"),
		"a surrogate as UTF-8":     []byte("{\"formatVersion\":1,\"items\":[{\"id\":\"A\",\"type\":\"user\",\"text\":\"\xed\xa0\x80\"}]}"),
		"a lone high surrogate":    []byte(`{"formatVersion":1,"items":[{"id":"A","type":"user","text":"\ud800"}]}`),
		"a lone low surrogate":     []byte(`{"formatVersion":1,"items":[{"id":"A","type":"assistant","text":"x\udfff"}]}`),
		"a high surrogate, no low": []byte(`{"formatVersion":1,"history":[{"role":"user","content":[{"type":"text","text":"\ud83d\u0041"}]}]}`),
	} {
		t.Run(name, func(t *testing.T) {
			var se *canonjson.SyntaxError
			if _, err := Decode(data); !errors.As(err, &se) {
				t.Errorf("Decode = %v, want a *canonjson.SyntaxError", err)
			}
			pkg := newPackage(t)
			writeAgentFile(t, pkg, "conversation.json", data)
			before := snapshot(t, pkg)
			p := mustOpen(t, pkg)
			if !p.Preserved() || len(p.Conv.Items) != 1 || !strings.HasPrefix(p.Conv.Items[0].String("text"), UnreadableNotice) {
				t.Fatalf("opened with items %v, want the one notice", p.Conv.Items)
			}
			if r := mustSave(t, p); r.Changed() || !reflect.DeepEqual(snapshot(t, pkg), before) {
				t.Errorf("save changed the package: %+v", r)
			}
		})
	}
}

// TestEncodingCacheFollowsChanges checks that the cached encodings of items
// and messages never hide a change.
func TestEncodingCacheFollowsChanges(t *testing.T) {
	pkg := newPackage(t)
	p := mustOpen(t, pkg)
	addTurn(p.Conv, "first", "reply")
	mustSave(t, p)
	read := func() string {
		data, err := os.ReadFile(filepath.Join(pkg, "agent", "conversation.json"))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	p.Conv.Items[1].Set("text", "grown reply")
	mustSave(t, p)
	if !strings.Contains(read(), `"text" : "grown reply"`) {
		t.Error("Set on a saved item did not reach the file")
	}
	p.Conv.History[1].Content[0] = NewTextBlock("replaced block")
	mustSave(t, p)
	if !strings.Contains(read(), `"text" : "replaced block"`) {
		t.Error("a replaced block did not reach the file")
	}
	p.Conv.History[1].Role = "tool"
	p.Conv.History[0].Extra = map[string]any{"note": "x"}
	mustSave(t, p)
	got := read()
	if !strings.Contains(got, `"role" : "tool"`) || !strings.Contains(got, `"note" : "x"`) {
		t.Error("a changed role or message field did not reach the file")
	}
	want, _ := p.Conv.Clone().Encode()
	if got != string(want) {
		t.Error("the saved bytes differ from a fresh encoding")
	}
}

// TestSaveMakesFilesPrivate checks that a save gives a conversation copied
// with open modes (as a git checkout does) 0600 and 0700 without rewriting it.
func TestSaveMakesFilesPrivate(t *testing.T) {
	pkg := newPackage(t)
	p := mustOpen(t, pkg)
	img := image(t, "m", 50)
	addTurn(p.Conv, "a", "b", img)
	mustSave(t, p)
	imgPath := filepath.Join(pkg, "agent", "images", img.String("sha256")+".png")
	for path, mode := range map[string]os.FileMode{
		filepath.Join(pkg, "agent"): 0o755, filepath.Join(pkg, "agent", "images"): 0o755,
		filepath.Join(pkg, "agent", "conversation.json"): 0o644, imgPath: 0o644,
	} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	before := snapshot(t, pkg)
	p = mustOpen(t, pkg)
	if r := mustSave(t, p); r.Changed() {
		t.Errorf("save rewrote files: %+v", r)
	}
	after := snapshot(t, pkg)
	for rel, want := range map[string]string{"agent": "drwx------", "agent/images": "drwx------", "agent/conversation.json": "-rw-------", "agent/images/" + filepath.Base(imgPath): "-rw-------"} {
		if !strings.HasPrefix(after[rel], want) {
			t.Errorf("%s = %q, want mode %s", rel, after[rel], want)
		}
		if strings.TrimPrefix(after[rel], want) != strings.TrimPrefix(before[rel], before[rel][:len(want)]) {
			t.Errorf("%s content or inode changed", rel)
		}
	}
	if probs, _ := Check(pkg); len(probs) != 0 {
		t.Errorf("fsck after save: %v", probs)
	}
}

func TestUsageAdd(t *testing.T) {
	a := Usage{Input: "100", Output: "5", ReportedCost: "0.00062"}
	b := Usage{Input: "1e2", Output: "7", CacheWrite1h: "3", ReportedCost: "0.00066"}
	got := a.Add(b)
	want := Usage{Input: "200", Output: "12", CacheRead: "0", CacheWrite: "0", WebSearchRequests: "0", CacheWrite1h: "3", ReportedCost: "0.00128"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Add = %+v, want %+v", got, want)
	}
	if got := (Usage{}).Add(Usage{}); got.CacheWrite1h != "" || got.ReportedCost != "" || got.Input != "0" {
		t.Errorf("zero Add = %+v", got)
	}
}

// TestSaveSeesEveryChange checks the unchanged-save check: a save whose
// bytes would be the same writes nothing, whatever was touched, and every
// save that writes gives the bytes of a fresh encoding.
func TestSaveSeesEveryChange(t *testing.T) {
	pkg := newPackage(t)
	p := mustOpen(t, pkg)
	addTurn(p.Conv, "first", "reply")
	mustSave(t, p)
	file := filepath.Join(pkg, "agent", "conversation.json")
	check := func(what string, wantWrite bool) {
		t.Helper()
		r := mustSave(t, p)
		if r.Changed() != wantWrite {
			t.Errorf("%s: save changed %+v, want a write %v", what, r, wantWrite)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := p.Conv.Clone().Encode(); !bytes.Equal(data, want) {
			t.Errorf("%s: the saved bytes differ from a fresh encoding", what)
		}
	}
	check("nothing", false)
	p.Conv.Items[1].Set("text", p.Conv.Items[1].String("text"))
	check("an item set to what it held", false)
	p.Conv.Items[1].Set("text", "other")
	check("an item's text", true)
	p.Conv.History[0].Extra = map[string]any{"note": "x"}
	check("a message's field", true)
	p.Conv.History[0].Extra["note"] = "y"
	check("a message's field changed in place", true)
	p.Conv.History[0].Content[0] = NewTextBlock(p.Conv.History[0].Content[0].String("text"))
	check("a block replaced by an equal one", false)
	p.Conv.Model = "other"
	check("the model", true)
	p.Conv.Extra = map[string]any{"host": []any{"a"}}
	check("a top-level field", true)
	p.Conv.Extra["host"] = []any{"b"}
	check("a top-level field changed in place", true)
	p.Conv.Items = p.Conv.Items[:1]
	check("an item removed", true)
	p.Conv.Items = append(p.Conv.Items, NewItem(TypeNotice))
	check("an item added", true)
	p.Conv = p.Conv.Clone()
	check("a clone", false)

	// Changed behind spbridge's back: the same bytes are left alone, other
	// bytes are replaced.
	data, _ := os.ReadFile(file)
	later := time.Now().Add(time.Hour)
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(file, later, later)
	check("the same bytes written again by another program", false)
	if err := os.WriteFile(file, bytes.Replace(data, []byte(`"other"`), []byte(`"OTHER"`), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(file, later.Add(time.Hour), later.Add(time.Hour))
	check("other bytes of the same size written by another program", true)
}

// TestCompactKeepsEverything checks that Compact and CompactHistory change
// no field and no byte of the encoding, and that a save after them writes
// nothing.
func TestCompactKeepsEverything(t *testing.T) {
	pkg := newPackage(t)
	p := mustOpen(t, pkg)
	img := image(t, "png", 100)
	addTurn(p.Conv, "first", "reply", img)
	p.Conv.Items[1].Set("extra", map[string]any{"n": json.Number("1.50"), "a": []any{"x", true, nil}})
	mustSave(t, p)
	before, _ := p.Conv.Encode()
	for _, it := range p.Conv.Items {
		it.Compact()
	}
	CompactHistory(p.Conv.History)
	after, _ := p.Conv.Encode()
	if !bytes.Equal(before, after) {
		t.Errorf("compacted conversation encodes as\n%s\nwant\n%s", after, before)
	}
	if got := p.Conv.History[0].Content[1]; !bytes.Equal(got.ImageData(), img.ImageData()) {
		t.Error("CompactHistory lost an image's bytes")
	}
	if r := mustSave(t, p); r.Changed() {
		t.Errorf("save after Compact changed %+v", r)
	}
}
