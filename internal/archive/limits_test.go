package archive

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// sparse makes path a sparse file of size bytes: it costs no disk.
func sparse(t *testing.T, path string, size int64) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Skipf("no sparse file of %d bytes here: %v", size, err)
	}
}

// allocated returns the bytes fn allocates.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

const (
	hugeSize  = 100 << 30 // what a sparse file claims
	smallHeap = 16 << 20  // far below any file of that size
)

// TestHugeConversationIsNotRead checks that a conversation.json larger than
// MaxConversationSize opens as unreadable with the one notice, without being
// read, and is kept as it is by every save, fsck and list.
func TestHugeConversationIsNotRead(t *testing.T) {
	pkg := newPackage(t)
	conv := filepath.Join(pkg, "agent", "conversation.json")
	sparse(t, conv, hugeSize)
	before, err := os.Lstat(conv)
	if err != nil {
		t.Fatal(err)
	}

	var p *Package
	if n := allocated(func() { p = mustOpen(t, pkg) }); n > smallHeap {
		t.Errorf("Open allocated %d bytes", n)
	}
	want := fmt.Sprintf("agent/conversation.json is %d bytes, more than the %d spbridge reads", int64(hugeSize), MaxConversationSize)
	if p.Unreadable != want || !p.Preserved() {
		t.Errorf("Unreadable = %q, want %q", p.Unreadable, want)
	}
	if len(p.Conv.Items) != 1 || !strings.HasPrefix(p.Conv.Items[0].String("text"), UnreadableNotice+" ("+want+")") {
		t.Errorf("items = %v, want the one notice", p.Conv.Items)
	}
	if r := mustSave(t, p); r.Changed() {
		t.Errorf("save of the unreadable conversation = %+v", r)
	}

	var probs []string
	if n := allocated(func() { probs, err = Check(pkg) }); err != nil || n > smallHeap {
		t.Errorf("Check = %v, allocated %d bytes", err, n)
	}
	if !slices.Contains(probs, fmt.Sprintf("agent/conversation.json: %d bytes, more than the %d spbridge reads (it opens as unreadable)", int64(hugeSize), MaxConversationSize)) {
		t.Errorf("Check = %q", probs)
	}
	var list []Summary
	if n := allocated(func() { list, err = List(filepath.Dir(pkg)) }); err != nil || n > smallHeap {
		t.Errorf("List = %v, allocated %d bytes", err, n)
	}
	if len(list) != 1 || list[0].Unreadable != want {
		t.Errorf("List = %+v", list)
	}

	after, err := os.Lstat(conv)
	if err != nil || !os.SameFile(before, after) || after.Size() != before.Size() || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("conversation.json changed: %v", err)
	}
}

// TestHugeImageReadsAsOmitted checks that an image file larger than ImageCap
// reads as imageOmitted without being read.
func TestHugeImageReadsAsOmitted(t *testing.T) {
	pkg := newPackage(t)
	p := mustOpen(t, pkg)
	img := image(t, "real bytes", 100)
	addTurn(p.Conv, "look", "seen", img)
	mustSave(t, p)
	name := img.String("sha256") + ".png"
	sparse(t, filepath.Join(pkg, "agent", "images", name), hugeSize)

	if n := allocated(func() { p = mustOpen(t, pkg) }); n > smallHeap {
		t.Errorf("Open allocated %d bytes", n)
	}
	if p.Unreadable != "" {
		t.Fatalf("Unreadable = %q", p.Unreadable)
	}
	if got := p.Conv.History[0].Content[1]; got.Type() != BlockImageOmitted {
		t.Errorf("the huge image reads as %v, want imageOmitted", got.Map())
	}
	var probs []string
	var err error
	if n := allocated(func() { probs, err = Check(pkg) }); err != nil || n > smallHeap {
		t.Errorf("Check = %v, allocated %d bytes", err, n)
	}
	want := fmt.Sprintf("agent/images/%s: %d bytes, more than the image cap of %d (it reads as imageOmitted)", name, int64(hugeSize), ImageCap)
	if !slices.Contains(probs, want) {
		t.Errorf("Check = %q, want %q", probs, want)
	}
	// The save writes the omission and removes the file no longer referenced.
	r := mustSave(t, p)
	if !slices.Contains(r.Removed, "agent/images/"+name) {
		t.Errorf("save = %+v, want the huge file removed", r)
	}
	if probs, _ := Check(pkg); len(probs) != 0 {
		t.Errorf("Check after the save = %q", probs)
	}
}

// TestImageOverCapOnDiskReadsAsImage checks the cap one byte past it: an
// image file of ImageCap+1 bytes whose bytes do hash to its name reads as
// an image, its bytes not held (the cap counts it at the next save: see
// TestImageOverCapCountedByCap).
func TestImageOverCapOnDiskReadsAsImage(t *testing.T) {
	pkg := newPackage(t)
	data := make([]byte, ImageCap+1)
	name := hashHex(data) + ".png"
	writeAgentFile(t, pkg, "images/"+name, data)
	writeAgentFile(t, pkg, "conversation.json", []byte(fmt.Sprintf(
		`{"formatVersion":1,"items":[{"id":"A","type":"user","text":"x"}],"history":[{"role":"user","content":[{"type":"image","mimeType":"image/png","sha256":%q}]}]}`,
		strings.TrimSuffix(name, ".png"))))
	p := mustOpen(t, pkg)
	if got := p.Conv.History[0].Content[0]; got.Type() != BlockImage || got.ImageData() != nil {
		t.Errorf("an image of ImageCap+1 bytes reads as %v (bytes held: %v), want an image without its bytes", got.Map(), got.ImageData() != nil)
	}
}

// TestSaveKeepsConversationWithoutItems checks that a conversation with no
// item and no history but anything else in it is not empty: a save keeps
// it.
func TestSaveKeepsConversationWithoutItems(t *testing.T) {
	for field, value := range map[string]string{
		"approvalCards": `{"A":{"state":"approved"}}`,
		"skillCards":    `{"A":{"state":"saved"}}`,
		"lintRuleCards": `{"A":{"state":"dismissed"}}`,
		"resolvedCards": `["A"]`,
		"sentFacts":     `[{"turn":1}]`,
		"feedback":      `{"A":{"rating":"good","reasons":[]}}`,
		"queued":        `["later"]`,
		"unsent":        `["draft"]`,
		"hostField":     `{"anything":1}`,
	} {
		t.Run(field, func(t *testing.T) {
			pkg := newPackage(t)
			writeAgentFile(t, pkg, "conversation.json", []byte(`{"formatVersion":1,"items":[],"history":[],"`+field+`":`+value+`}`))
			p := mustOpen(t, pkg)
			if p.Unreadable != "" {
				t.Fatalf("Unreadable = %q", p.Unreadable)
			}
			if p.Conv.IsEmpty() {
				t.Errorf("IsEmpty() = true")
			}
			mustSave(t, p)
			data, err := os.ReadFile(filepath.Join(pkg, "agent", "conversation.json"))
			if err != nil {
				t.Fatalf("the save removed the conversation: %v", err)
			}
			var got map[string]any
			var want any
			json.Unmarshal(data, &got)
			json.Unmarshal([]byte(value), &want)
			if !reflect.DeepEqual(got[field], want) {
				t.Errorf("saved %s = %v, want %v", field, got[field], want)
			}
			if r := mustSave(t, mustOpen(t, pkg)); r.Changed() {
				t.Errorf("an unchanged save after a reopen = %+v", r)
			}
		})
	}
}

// TestEmptySaveKeepsHostFiles checks that the save of an empty conversation
// removes only what spbridge writes, and the agent folder only when nothing
// else is in it; keep off and New Conversation still remove it whole.
func TestEmptySaveKeepsHostFiles(t *testing.T) {
	emptyConv := []byte(`{"formatVersion":1,"items":[],"history":[]}`)
	leftImage := image(t, "left", 40)
	leftName := leftImage.String("sha256") + ".png"
	tests := []struct {
		name  string
		files map[string][]byte // under agent/
		// left is what stays under agent/, nil when the folder goes.
		left    []string
		removed []string
	}{
		{"only spbridge's files", map[string][]byte{
			"conversation.json":                emptyConv,
			"images/" + leftName:               leftImage.ImageData(),
			"images/" + tempPrefix + "x.png-1": []byte("torn"),
			tempPrefix + "conversation.json-2": []byte("torn"),
		}, nil, []string{"agent/"}},
		{"a host file in agent", map[string][]byte{
			"conversation.json":                emptyConv,
			"notes.txt":                        []byte("the host's"),
			"images/" + leftName:               leftImage.ImageData(),
			tempPrefix + "conversation.json-2": []byte("torn"),
		}, []string{"conversation.json", "notes.txt"}, []string{"agent/images/" + leftName, "agent/images/"}},
		{"a host folder in agent", map[string][]byte{
			"host/data.bin": []byte("the host's"),
		}, []string{"host", "host/data.bin"}, nil},
		{"a host file in images", map[string][]byte{
			"conversation.json":  emptyConv,
			"images/" + leftName: leftImage.ImageData(),
			"images/readme.txt":  []byte("the host's"),
		}, []string{"conversation.json", "images", "images/readme.txt"}, []string{"agent/images/" + leftName}},
		{"no conversation, a host file", map[string][]byte{
			"notes.txt": []byte("the host's"),
		}, []string{"notes.txt"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pkg := newPackage(t)
			for rel, data := range tt.files {
				writeAgentFile(t, pkg, rel, data)
			}
			before := snapshot(t, pkg)
			p := mustOpen(t, pkg)
			if !p.Conv.IsEmpty() || p.Unreadable != "" {
				t.Fatalf("opened as %d items, unreadable %q", len(p.Conv.Items), p.Unreadable)
			}
			r := mustSave(t, p)
			if !reflect.DeepEqual(r.Removed, tt.removed) || len(r.Written) != 0 {
				t.Errorf("save = %+v, want removed %q", r, tt.removed)
			}
			after := snapshot(t, pkg)
			var left []string
			for rel := range after {
				if strings.HasPrefix(rel, "agent/") {
					left = append(left, strings.TrimPrefix(rel, "agent/"))
				}
			}
			slices.Sort(left)
			if !reflect.DeepEqual(left, tt.left) {
				t.Errorf("left in agent/: %q, want %q", left, tt.left)
			}
			for _, rel := range tt.left {
				if after["agent/"+rel] != before["agent/"+rel] {
					t.Errorf("agent/%s changed", rel)
				}
			}
			if tt.left != nil {
				if r := mustSave(t, mustOpen(t, pkg)); r.Changed() {
					t.Errorf("the next save = %+v, want no change", r)
				}
				// Keep off removes the whole folder, the host's files too.
				if _, err := mustOpen(t, pkg).Save(false); err != nil {
					t.Fatal(err)
				}
				if _, err := os.Lstat(filepath.Join(pkg, "agent")); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("keep off left agent/: %v", err)
				}
			}
		})
	}
}

// TestCheckLeftovers checks that fsck reports what an interrupted save left
// behind as leftovers, not problems, and that the next save removes them.
func TestCheckLeftovers(t *testing.T) {
	t.Run("after a save", func(t *testing.T) {
		pkg := newPackage(t)
		p := mustOpen(t, pkg)
		kept, dropped := image(t, "kept", 30), image(t, "dropped", 30)
		addTurn(p.Conv, "a", "b", kept)
		mustSave(t, p)
		stored := image(t, "stored before its conversation", 30)
		writeAgentFile(t, pkg, tempPrefix+"conversation.json-1", []byte("torn"))
		writeAgentFile(t, pkg, "images/"+tempPrefix+"x.png-2", []byte("torn"))
		writeAgentFile(t, pkg, "images/"+stored.String("sha256")+".png", stored.ImageData())
		writeAgentFile(t, pkg, "images/"+dropped.String("sha256")+".png", dropped.ImageData())
		rep, err := Inspect(pkg)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{
			"agent/" + tempPrefix + "conversation.json-1",
			"agent/images/" + tempPrefix + "x.png-2",
			"agent/images/" + dropped.String("sha256") + ".png",
			"agent/images/" + stored.String("sha256") + ".png",
		}
		slices.Sort(want[2:])
		if len(rep.Problems) != 0 || !reflect.DeepEqual(rep.Leftovers, want) {
			t.Errorf("Inspect = %q, leftovers %q, want no problem and %q", rep.Problems, rep.Leftovers, want)
		}
		// The next open-then-save removes them, and writes nothing else.
		r := mustSave(t, mustOpen(t, pkg))
		if len(r.Written) != 0 {
			t.Errorf("the save wrote %q", r.Written)
		}
		if rep, _ := Inspect(pkg); len(rep.Problems)+len(rep.Leftovers) != 0 {
			t.Errorf("after the save: %+v", rep)
		}
	})
	t.Run("before the first conversation", func(t *testing.T) {
		pkg := newPackage(t)
		img := image(t, "first", 30)
		writeAgentFile(t, pkg, "images/"+img.String("sha256")+".png", img.ImageData())
		rep, err := Inspect(pkg)
		if err != nil || len(rep.Problems) != 0 || len(rep.Leftovers) != 1 {
			t.Errorf("Inspect = %+v, %v, want one leftover", rep, err)
		}
		r := mustSave(t, mustOpen(t, pkg))
		if !reflect.DeepEqual(r.Removed, []string{"agent/"}) {
			t.Errorf("save = %+v, want agent/ removed", r)
		}
	})
	t.Run("not leftovers", func(t *testing.T) {
		pkg := newPackage(t)
		p := mustOpen(t, pkg)
		addTurn(p.Conv, "a", "b")
		mustSave(t, p)
		// Bytes that do not hash to the name were not written by a save.
		writeAgentFile(t, pkg, "images/"+strings.Repeat("ab", 32)+".png", []byte("other"))
		rep, _ := Inspect(pkg)
		if len(rep.Leftovers) != 0 || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "not referenced") {
			t.Errorf("Inspect = %+v, want the file as a problem", rep)
		}
		// Beside an unreadable conversation, which saves keep as it is, a
		// temporary file is not removed at the next save: it is stray.
		writeAgentFile(t, pkg, "conversation.json", []byte("{"))
		writeAgentFile(t, pkg, tempPrefix+"conversation.json-1", []byte("torn"))
		rep, _ = Inspect(pkg)
		if len(rep.Leftovers) != 0 || !slices.Contains(rep.Problems, "agent/"+tempPrefix+"conversation.json-1: stray file") {
			t.Errorf("Inspect = %+v, want the temporary file as stray", rep)
		}
	})
}

// endless is a reader that never ends, as a file that keeps growing.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestReadAtMostStopsPastTheLimit checks that a reader holding more than it
// claims is read no further than one byte past the limit.
func TestReadAtMostStopsPastTheLimit(t *testing.T) {
	const limit = 1 << 20
	var data []byte
	var err error
	n := allocated(func() { data, err = readAtMost(endless{}, 10, limit) })
	if err != nil || len(data) != limit+1 {
		t.Errorf("readAtMost(endless) = %d bytes, %v, want %d", len(data), err, limit+1)
	}
	if n > 8*limit {
		t.Errorf("readAtMost(endless) allocated %d bytes", n)
	}
	data, err = readAtMost(strings.NewReader("exactly"), 7, limit)
	if err != nil || string(data) != "exactly" || cap(data) != 8 {
		t.Errorf("readAtMost(7 bytes) = %q (cap %d), %v", data, cap(data), err)
	}
}
