package archive

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// withSizeLimit lowers the size spbridge reads and writes for one test.
func withSizeLimit(t *testing.T, n int64) {
	t.Helper()
	old := sizeLimit
	sizeLimit = n
	t.Cleanup(func() { sizeLimit = old })
}

// withItems is a conversation of n notices of text.
func withItems(n int, text string) *Conversation {
	c := &Conversation{}
	for i := range n {
		c.Items = append(c.Items, ItemFromMap(map[string]any{"id": fmt.Sprintf("N%d", i), "type": TypeNotice,
			"text": text, "extra": map[string]any{"a": []any{"b", map[string]any{"c": "d"}}}}))
	}
	return c
}

// TestSaveWithinReadLimit: a save never writes a conversation.json that
// spbridge cannot read back. One whose pretty-printed form would pass the
// limit is written on one line, reads back the same and saves again
// unchanged; one that would pass it even so is not written (a
// *TooLargeError), and the file that was there is kept as it was.
func TestSaveWithinReadLimit(t *testing.T) {
	small := withItems(3, "short")
	pretty, err := small.Encode()
	if err != nil {
		t.Fatal(err)
	}
	big := withItems(60, "some words")
	var cb bytes.Buffer
	if err := big.write(&cb, nil, true); err != nil {
		t.Fatal(err)
	}
	compact := cb.Bytes()
	// The limit between the big one's one-line form and its pretty form.
	withSizeLimit(t, int64(len(compact))+100)
	if full, err := big.Encode(); err != nil || bytes.Contains(full, []byte("\n")) || len(full) != len(compact) {
		t.Fatalf("Encode of the big one: %d bytes, %v; want its one-line form", len(full), err)
	}

	pkg := newPackage(t)
	p := mustOpen(t, pkg)
	p.Conv = big
	mustSave(t, p)
	path := filepath.Join(pkg, "agent", "conversation.json")
	data, err := os.ReadFile(path)
	if err != nil || int64(len(data)) > sizeLimit || bytes.Contains(data, []byte("\n")) {
		t.Fatalf("saved %d bytes (limit %d), %v", len(data), sizeLimit, err)
	}
	p2 := mustOpen(t, pkg)
	if p2.Unreadable != "" || len(p2.Conv.Items) != 60 || !reflect.DeepEqual(p2.Conv.Items[59].Map(), big.Items[59].Map()) {
		t.Fatalf("reopened: unreadable %q, %d items", p2.Unreadable, len(p2.Conv.Items))
	}
	if r := mustSave(t, p2); r.Changed() {
		t.Errorf("a save of the reopened conversation changed %+v", r)
	}
	// A small one is pretty-printed again.
	p2.Conv = small
	mustSave(t, p2)
	if data, _ := os.ReadFile(path); !bytes.Equal(data, pretty) {
		t.Errorf("the small one saved as\n%s\nwant\n%s", data, pretty)
	}
	// Too large even on one line: nothing is written.
	before := snapshot(t, pkg)
	p2.Conv = withItems(200, "some words")
	_, err = p2.Save(true)
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Limit != sizeLimit || !strings.Contains(err.Error(), "agent/conversation.json would be more than") {
		t.Fatalf("save of a conversation over the limit: %v", err)
	}
	if !reflect.DeepEqual(snapshot(t, pkg), before) {
		t.Error("the failed save changed the package")
	}
	if _, err := p2.Conv.Encode(); !errors.As(err, &tl) {
		t.Errorf("Encode of a conversation over the limit: %v", err)
	}
	if p3 := mustOpen(t, pkg); p3.Unreadable != "" || len(p3.Conv.Items) != 3 {
		t.Errorf("after the failed save: unreadable %q, %d items", p3.Unreadable, len(p3.Conv.Items))
	}
}
