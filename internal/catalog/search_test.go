package catalog

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"spbridge/internal/clis"
	"spbridge/internal/history"
	"spbridge/internal/sessionindex"
)

// TestCatalogSearch: a search answers the sessions the list would that
// match, best first, in pages cut from the first page's results (each
// with its snippets), and refuses a cursor of another query; CLI sessions
// a package imported or ran on are found as the package only.
func TestCatalogSearch(t *testing.T) {
	cwd := t.TempDir()
	now := time.Now()
	at := map[string]time.Time{}
	for i := range 30 {
		at[fmt.Sprintf("s%02d", i)] = now.Add(-time.Duration(i) * time.Minute)
	}
	store := claudeSessions(t, cwd, at)
	state := t.TempDir()
	ix := sessionindex.New(state)
	// s00 was imported into a package that is gone: the index keeps it
	// hidden from the list, so it is not found either.
	if err := ix.Hide("claude:s00"); err != nil {
		t.Fatal(err)
	}
	c := &Catalog{Index: ix, History: &history.Options{Stores: clis.Stores(), Dirs: map[string]string{"claude": store, "codex": t.TempDir()}}}
	page, next, err := c.Search(context.Background(), cwd, "message", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != PageSize || next == "" {
		t.Fatalf("first page: %d sessions, next %q", len(page), next)
	}
	seen := map[string]bool{}
	for _, e := range page {
		seen[e.ID] = true
		if len(e.Snippets) != 1 || e.Snippets[0].Label != "User" {
			t.Errorf("%s: snippets %+v", e.ID, e.Snippets)
		}
	}
	cursor, err := ParseCursor(next)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Search(context.Background(), cwd, "other words", cursor); !errors.Is(err, sessionindex.ErrBadCursor) {
		t.Errorf("a cursor of another query: %v", err)
	}
	page2, next2, err := c.Search(context.Background(), cwd, "message", cursor)
	if err != nil {
		t.Fatal(err)
	}
	if len(page2) != 29-PageSize || next2 != "" {
		t.Fatalf("second page: %d sessions, next %q", len(page2), next2)
	}
	for _, e := range page2 {
		if seen[e.ID] || e.ID == "claude:s00" {
			t.Errorf("%s on the second page again, or hidden", e.ID)
		}
		seen[e.ID] = true
		if len(e.Snippets) != 1 {
			t.Errorf("%s on the second page: snippets %+v", e.ID, e.Snippets)
		}
	}
	// One word of one session: it alone.
	page, _, err = c.Search(context.Background(), cwd, "s17", nil)
	if err != nil || len(page) != 1 || page[0].ID != "claude:s17" {
		t.Errorf("s17: %+v %v", page, err)
	}
	// The snapshot gone (serve restarted): the search runs again and the
	// page starts as far in.
	c2 := &Catalog{Index: ix, History: c.History}
	page3, _, err := c2.Search(context.Background(), cwd, "message", cursor)
	if err != nil || len(page3) != len(page2) {
		t.Errorf("a cursor of a search no longer kept: %d sessions, %v", len(page3), err)
	}
}
