package archive

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// overCapPackage writes a package whose history has, oldest first, one
// image a turn of these sizes (over: ImageCap+1 bytes), each file holding
// bytes that hash to its name, except the over-cap one when tampered; it
// returns the package and the images' file names.
func overCapPackage(t *testing.T, sizes []int, tampered bool) (string, []string) {
	t.Helper()
	pkg := newPackage(t)
	var names, msgs []string
	for i, size := range sizes {
		data := make([]byte, size)
		copy(data, fmt.Sprintf("image %d", i))
		hash := hashHex(data)
		if size > ImageCap && tampered {
			data[size-1] = 1
		}
		writeAgentFile(t, pkg, "images/"+hash+".png", data)
		names = append(names, hash+".png")
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":[{"type":"text","text":"turn %d"},{"type":"image","mimeType":"image/png","sha256":%q}]}`, i, hash),
			`{"role":"assistant","content":[{"type":"text","text":"ok"}]}`)
	}
	writeAgentFile(t, pkg, "conversation.json", []byte(`{"formatVersion":1,"items":[{"id":"A","type":"user","text":"x"}],"history":[`+
		strings.Join(msgs, ",")+`]}`))
	return pkg, names
}

// imageTypes is the type of each turn's image block, oldest first.
func imageTypes(p *Package) []string {
	var out []string
	for i := 0; i < len(p.Conv.History); i += 2 {
		out = append(out, p.Conv.History[i].Content[1].Type())
	}
	return out
}

// TestImageOverCapCountedByCap: an image file larger than ImageCap whose
// bytes hash to its name reads as an image on open (its bytes not held),
// and the cap counts it like any other, newest first: when it is the
// first that does not fit, it and every older image are saved as
// imageOmitted (their files removed) and the newer ones kept. One whose
// bytes do not match reads as imageOmitted and is not counted.
func TestImageOverCapCountedByCap(t *testing.T) {
	const over = ImageCap + 1
	for _, tt := range []struct {
		name     string
		sizes    []int // oldest first
		tampered bool
		saved    []bool // kept at the save, oldest first
	}{
		{"between newer and older", []int{100, over, 200}, false, []bool{false, false, true}},
		{"newest", []int{100, 200, over}, false, []bool{false, false, false}},
		{"oldest", []int{over, 100, 200}, false, []bool{false, true, true}},
		{"tampered", []int{100, over, 200}, true, []bool{true, false, true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pkg, names := overCapPackage(t, tt.sizes, tt.tampered)
			p := mustOpen(t, pkg)
			var opened []string
			for _, size := range tt.sizes {
				opened = append(opened, BlockImage)
				if size > ImageCap && tt.tampered {
					opened[len(opened)-1] = BlockImageOmitted
				}
			}
			if got := imageTypes(p); !reflect.DeepEqual(got, opened) {
				t.Fatalf("on open: %v, want %v", got, opened)
			}
			probs, err := Check(pkg)
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(tt.sizes, func(n int) bool { return n > ImageCap })
			want := fmt.Sprintf("agent/images/%s: %d bytes, more than the image cap of %d (the next save omits it and every older image)", names[i], over, ImageCap)
			if tt.tampered {
				want = "agent/images/" + names[i] + ": bytes hash to "
			}
			if !slices.ContainsFunc(probs, func(s string) bool { return strings.HasPrefix(s, want) }) {
				t.Errorf("Check = %q, want %q", probs, want)
			}

			r := mustSave(t, p)
			var saved []string
			for j, keep := range tt.saved {
				saved = append(saved, map[bool]string{true: BlockImage, false: BlockImageOmitted}[keep])
				_, err := os.Lstat(filepath.Join(pkg, "agent", "images", names[j]))
				if (err == nil) != keep {
					t.Errorf("image %d's file there = %v, want %v (save %+v)", j, err == nil, keep, r)
				}
			}
			// The live conversation keeps its images until it is reopened.
			if got := imageTypes(p); !reflect.DeepEqual(got, opened) {
				t.Errorf("live after the save: %v, want %v", got, opened)
			}
			if got := imageTypes(mustOpen(t, pkg)); !reflect.DeepEqual(got, saved) {
				t.Errorf("reopened after the save: %v, want %v", got, saved)
			}
			if probs, _ := Check(pkg); len(probs) != 0 {
				t.Errorf("Check after the save = %q", probs)
			}
		})
	}
}
