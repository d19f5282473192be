package acp

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"spbridge/internal/sessionindex"
)

// TestListSkipsGonePackages: packages that are gone are left out before
// paging, so session/list never answers an empty page with a nextCursor:
// a full page of gone packages ahead of a live one gives the live one,
// alone, with no cursor.
func TestListSkipsGonePackages(t *testing.T) {
	state := t.TempDir()
	live := newPackage(t)
	root := t.TempDir()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type entry struct {
		Package   string    `json:"package"`
		Cwd       string    `json:"cwd"`
		UpdatedAt time.Time `json:"updatedAt"`
	}
	// More gone packages than a page holds, all newer than the live one.
	entries := []entry{{live, filepath.Dir(live), base}}
	for i := range sessionindex.DefaultPageSize + 3 {
		entries = append(entries, entry{filepath.Join(root, fmt.Sprintf("gone%d.silverpoint", i)), root, base.Add(time.Duration(i+1) * time.Minute)})
	}
	data, _ := json.Marshal(map[string]any{"version": 1, "sessions": entries})
	if err := os.WriteFile(filepath.Join(state, sessionindex.File), data, 0o600); err != nil {
		t.Fatal(err)
	}
	c := startServerWith(t, Config{Index: sessionindex.New(state)})
	res, _ := c.request("session/list", map[string]any{})
	list, _ := res["sessions"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["sessionId"] != live || res["nextCursor"] != nil {
		t.Errorf("session/list = %v, want %s alone, no cursor", res, live)
	}
}
