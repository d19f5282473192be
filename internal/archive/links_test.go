package archive

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// linkCase puts a symbolic link somewhere in a package's agent folder,
// pointing at outside, a folder beside the package that holds files of its
// own. It returns the link's path inside the package.
type linkCase struct {
	name string
	// unreadable says the conversation opens as unreadable (and is then
	// preserved: a save without a turn changes nothing and is no error).
	unreadable bool
	setup      func(t *testing.T, pkg, outside string) string
}

// outsideImage is an image stored outside the package, under its hash.
var outsideImage = []byte("an image outside the package")

func outsideImageName() string {
	sum := sha256.Sum256(outsideImage)
	return hex.EncodeToString(sum[:]) + ".png"
}

// fillOutside gives the outside folder what an agent folder holds, and more:
// a conversation, an image, and files of someone else's.
func fillOutside(t *testing.T, outside string) {
	t.Helper()
	for rel, data := range map[string][]byte{
		"conversation.json":             []byte(`{"formatVersion":1,"items":[{"id":"S","type":"user","text":"secret"}]}`),
		"images/" + outsideImageName():  outsideImage,
		"notes.txt":                     []byte("someone else's notes"),
		"photos/holiday.png":            []byte("someone else's photo"),
		".spbridge-tmp-looks-like-ours": []byte("not ours either"),
	} {
		path := filepath.Join(outside, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// savedConversation writes a readable conversation into pkg; withImage makes
// it reference the outside image by its hash.
func savedConversation(t *testing.T, pkg string, withImage bool) {
	t.Helper()
	history := `[{"role":"user","content":[{"type":"text","text":"hi"}]}]`
	if withImage {
		history = fmt.Sprintf(`[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image","mimeType":"image/png","sha256":%q}]}]`,
			strings.TrimSuffix(outsideImageName(), ".png"))
	}
	writeAgentFile(t, pkg, "conversation.json", []byte(`{"formatVersion":1,"items":[{"id":"A","type":"user","text":"hi"}],"history":`+history+`}`))
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

var linkCases = []linkCase{
	{"agent", true, func(t *testing.T, pkg, outside string) string {
		link := filepath.Join(pkg, "agent")
		symlink(t, outside, link)
		return link
	}},
	{"agent to a folder inside the package", true, func(t *testing.T, pkg, outside string) string {
		inside := filepath.Join(pkg, "assets")
		if err := os.CopyFS(inside, os.DirFS(outside)); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(pkg, "agent")
		symlink(t, "assets", link)
		return link
	}},
	{"images, no image referenced", false, func(t *testing.T, pkg, outside string) string {
		savedConversation(t, pkg, false)
		link := filepath.Join(pkg, "agent", "images")
		symlink(t, filepath.Join(outside, "images"), link)
		return link
	}},
	{"images, an image referenced", false, func(t *testing.T, pkg, outside string) string {
		savedConversation(t, pkg, true)
		link := filepath.Join(pkg, "agent", "images")
		symlink(t, filepath.Join(outside, "images"), link)
		return link
	}},
	{"images to the outside folder itself", false, func(t *testing.T, pkg, outside string) string {
		savedConversation(t, pkg, false)
		link := filepath.Join(pkg, "agent", "images")
		symlink(t, outside, link)
		return link
	}},
	{"images, a link to a link", false, func(t *testing.T, pkg, outside string) string {
		savedConversation(t, pkg, false)
		middle := filepath.Join(filepath.Dir(pkg), "middle")
		symlink(t, outside, middle)
		link := filepath.Join(pkg, "agent", "images")
		symlink(t, middle, link)
		return link
	}},
	{"conversation.json", true, func(t *testing.T, pkg, outside string) string {
		link := filepath.Join(pkg, "agent", "conversation.json")
		symlink(t, filepath.Join(outside, "conversation.json"), link)
		return link
	}},
	{"a referenced image inside images", false, func(t *testing.T, pkg, outside string) string {
		savedConversation(t, pkg, true)
		link := filepath.Join(pkg, "agent", "images", outsideImageName())
		symlink(t, filepath.Join(outside, "images", outsideImageName()), link)
		return link
	}},
	{"an unreferenced entry inside images", false, func(t *testing.T, pkg, outside string) string {
		savedConversation(t, pkg, false)
		link := filepath.Join(pkg, "agent", "images", "photos")
		symlink(t, filepath.Join(outside, "photos"), link)
		return link
	}},
	{"a temporary file's name inside images", false, func(t *testing.T, pkg, outside string) string {
		savedConversation(t, pkg, false)
		link := filepath.Join(pkg, "agent", "images", tempPrefix+"x.png-1")
		symlink(t, filepath.Join(outside, "notes.txt"), link)
		return link
	}},
}

// linkOps are the operations that might follow a link, and whether each
// must be refused with the link's *LinkError (refuse) or may go on (for an
// unreadable conversation, which a save without a turn leaves untouched).
var linkOps = []struct {
	name string
	run  func(t *testing.T, pkg string) error
	// refused reports whether the operation must fail with a *LinkError,
	// given whether the conversation opens as unreadable.
	refused func(unreadable bool) bool
}{
	{"save unchanged", func(t *testing.T, pkg string) error {
		_, err := mustOpen(t, pkg).Save(true)
		return err
	}, func(unreadable bool) bool { return !unreadable }},
	{"save after a turn with an image", func(t *testing.T, pkg string) error {
		p := mustOpen(t, pkg)
		p.BeginTurn()
		addTurn(p.Conv, "look", "seen", image(t, "new image", 100))
		_, err := p.Save(true)
		return err
	}, func(bool) bool { return true }},
	{"save after a turn without images", func(t *testing.T, pkg string) error {
		p := mustOpen(t, pkg)
		p.BeginTurn()
		addTurn(p.Conv, "hello", "hi")
		_, err := p.Save(true)
		return err
	}, func(bool) bool { return true }},
	{"save emptied", func(t *testing.T, pkg string) error {
		p := mustOpen(t, pkg)
		p.BeginTurn()
		p.Conv = &Conversation{}
		_, err := p.Save(true)
		return err
	}, func(bool) bool { return true }},
	{"save with keep off", func(t *testing.T, pkg string) error {
		_, err := mustOpen(t, pkg).Save(false)
		return err
	}, func(bool) bool { return true }},
	{"new conversation", func(t *testing.T, pkg string) error {
		_, err := mustOpen(t, pkg).NewConversation()
		return err
	}, func(bool) bool { return true }},
	{"template", func(t *testing.T, pkg string) error {
		p, err := Open(pkg, KindTemplate, true)
		if err != nil {
			return err
		}
		addTurn(p.Conv, "a", "b")
		if _, err := p.Save(true); err != nil {
			return err
		}
		_, err = p.NewConversation()
		return err
	}, func(bool) bool { return false }},
}

// TestNoLinkFollowed puts a link at each place of spbridge's own files and
// runs each operation: none may read, write or remove anything outside the
// package, a change is refused with an error that names the link, and the
// link itself stays as it was.
func TestNoLinkFollowed(t *testing.T) {
	for _, lc := range linkCases {
		for _, op := range linkOps {
			t.Run(lc.name+"/"+op.name, func(t *testing.T) {
				pkg := newPackage(t)
				outside := filepath.Join(filepath.Dir(pkg), "outside")
				fillOutside(t, outside)
				link := lc.setup(t, pkg, outside)
				before, outsideBefore := snapshot(t, pkg), snapshot(t, outside)

				if p := mustOpen(t, pkg); (p.Unreadable != "") != lc.unreadable {
					t.Fatalf("opened with Unreadable %q, want unreadable %v", p.Unreadable, lc.unreadable)
				} else if enc, _ := p.Conv.Encode(); bytes.Contains(enc, []byte("secret")) {
					t.Fatalf("the conversation outside the package was read")
				} else {
					for _, m := range p.Conv.History {
						for _, b := range m.Content {
							if b.Type() == BlockImage {
								t.Fatalf("an image outside the package was read")
							}
						}
					}
				}

				err := op.run(t, pkg)
				if after := snapshot(t, outside); !reflect.DeepEqual(after, outsideBefore) {
					t.Errorf("%s changed the folder outside the package:\nbefore %v\nafter  %v", op.name, outsideBefore, after)
				}
				var le *LinkError
				if op.refused(lc.unreadable) {
					if !errors.As(err, &le) || le.Path != link || !strings.Contains(err.Error(), link) {
						t.Fatalf("%s = %v, want a *LinkError naming %s", op.name, err, link)
					}
					if after := snapshot(t, pkg); !reflect.DeepEqual(after, before) {
						t.Errorf("a refused %s changed the package:\nbefore %v\nafter  %v", op.name, before, after)
					}
				} else if err != nil {
					t.Fatalf("%s: %v", op.name, err)
				}
				if fi, err := os.Lstat(link); err != nil || !isLink(fi) {
					t.Errorf("the link %s did not stay: %v", link, err)
				}

				// fsck reports the link and follows it nowhere.
				probs, err := Check(pkg)
				if err != nil {
					t.Fatal(err)
				}
				rel, _ := filepath.Rel(pkg, link)
				want := filepath.ToSlash(rel) + ": a symbolic link"
				if all := strings.Join(probs, "\n"); !strings.Contains(all, want) || strings.Contains(all, "secret") {
					t.Errorf("Check = %q, want a line %q", all, want)
				}
				if after := snapshot(t, outside); !reflect.DeepEqual(after, outsideBefore) {
					t.Error("Check changed the folder outside the package")
				}
			})
		}
	}
}

// TestListFollowsNoLink checks that conversation list reads nothing through
// a link: an agent folder that is a link is listed as unreadable.
func TestListFollowsNoLink(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Join(t.TempDir(), "outside")
	fillOutside(t, outside)
	pkg := filepath.Join(root, "Linked.silverpoint")
	symlink(t, outside, filepath.Join(pkg, "agent"))
	got, err := List(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Path != pkg || !strings.Contains(got[0].Unreadable, "symbolic link") || got[0].Items != 0 {
		t.Errorf("List = %+v, want %s unreadable as a link", got, pkg)
	}
}
