package history_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"spbridge/internal/history"
)

// cacheStore is a store of one Claude Code session whose title its last
// line gives, and the cache of a state folder of its own.
func cacheStore(t *testing.T) (history.Options, string, string) {
	t.Helper()
	root := t.TempDir()
	opts := history.Options{Stores: stores, Dirs: dirs(filepath.Join(root, "claude"), filepath.Join(root, "codex"))}
	path := filepath.Join(opts.Dirs["claude"], "projects", "-w", "s1.jsonl")
	setFile(t, path, []byte(titled("Alpha")), base)
	state := filepath.Join(root, "state")
	opts.Cache = history.NewHeadCache(state)
	return opts, path, filepath.Join(state, history.HeadCacheFile)
}

func titled(title string) string {
	return claudeUser + "\n" + claudeReply + "\n" + `{"type":"custom-title","customTitle":"` + title + `","sessionId":"s1"}` + "\n"
}

func titles(t *testing.T, opts history.Options) string {
	t.Helper()
	es, err := history.List(opts)
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, e := range es {
		s = append(s, e.Title)
	}
	return strings.Join(s, ",")
}

// rewrite replaces the file's bytes in place (the same inode) and sets its
// modification time.
func rewrite(t *testing.T, path, data string, mod time.Time) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(path, mod, mod); err != nil {
		t.Fatal(err)
	}
}

// TestHeadCache: a listing reads a file again only when its size, its
// modification time or its inode changed; otherwise the head kept in the
// state folder is used, also by another process (a new cache on the same
// folder). A file rewritten with its size, time and inode kept is the one
// change the cache cannot see: the test uses it to tell a hit.
func TestHeadCache(t *testing.T) {
	opts, path, file := cacheStore(t)
	if got := titles(t, opts); got != "Alpha" {
		t.Fatalf("first listing: %q", got)
	}
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("the cache was not written: %v", err)
	}
	// Same size, time and inode: the kept head (a hit), in this process
	// and in another.
	rewrite(t, path, titled("Bravo"), base)
	if got := titles(t, opts); got != "Alpha" {
		t.Errorf("unchanged file: %q, want the kept head", got)
	}
	other := opts
	other.Cache = history.NewHeadCache(filepath.Dir(file))
	if got := titles(t, other); got != "Alpha" {
		t.Errorf("another process: %q, want the kept head", got)
	}
	// Another time: read again.
	rewrite(t, path, titled("Bravo"), base.Add(time.Second))
	if got := titles(t, opts); got != "Bravo" {
		t.Errorf("after a new time: %q", got)
	}
	// Another size (the time kept): read again.
	rewrite(t, path, titled("Charlie"), base.Add(time.Second))
	if got := titles(t, opts); got != "Charlie" {
		t.Errorf("after a new size: %q", got)
	}
	// Another file of the same size and time in its place.
	if runtime.GOOS != "windows" {
		tmp := path + ".new"
		setFile(t, tmp, []byte(titled("Delta01")), base.Add(time.Second))
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
		if got := titles(t, opts); got != "Delta01" {
			t.Errorf("after a new inode: %q", got)
		}
	}
	// A file that became no session is left out, and kept as none.
	rewrite(t, path, `{"type":"summary","summary":"x","leafUuid":"l"}`+"\n", base.Add(2*time.Second))
	if got := titles(t, opts); got != "" {
		t.Errorf("no session: %q", got)
	}
	if got := titles(t, other); got != "" {
		t.Errorf("no session, another process: %q", got)
	}
}

// TestHeadCacheCorrupt: a cache file that cannot be read (not JSON, cut,
// another format, a folder) is built again, and the listing is right.
func TestHeadCacheCorrupt(t *testing.T) {
	for name, data := range map[string]string{
		"garbage": "\x00\xffnot json",
		"cut":     `{"version":1,"heads":{"`,
		"format":  `{"version":99,"heads":{}}`,
		"wrong":   `{"version":1,"heads":{"x":{"backend":"other"}},"extra":[1]}`,
	} {
		t.Run(name, func(t *testing.T) {
			opts, _, file := cacheStore(t)
			setFile(t, file, []byte(data), base)
			if got := titles(t, opts); got != "Alpha" {
				t.Errorf("listing: %q", got)
			}
			raw, err := os.ReadFile(file)
			var f history.HeadCacheData
			if err != nil || json.Unmarshal(raw, &f) != nil || f.Version != history.HeadCacheVersion || len(f.Heads) != 1 {
				t.Errorf("the cache was not built again: %q, %v", raw, err)
			}
		})
	}
	t.Run("folder", func(t *testing.T) {
		opts, _, file := cacheStore(t)
		if err := os.MkdirAll(file, 0o700); err != nil {
			t.Fatal(err)
		}
		if got := titles(t, opts); got != "Alpha" {
			t.Errorf("listing: %q", got)
		}
	})
}

// TestHeadCacheBounded: the cache keeps at most maxCachedHeads files, the
// most recently listed, and forgets those not listed for cacheUnused.
func TestHeadCacheBounded(t *testing.T) {
	old := *history.MaxCachedHeads
	*history.MaxCachedHeads = 3
	defer func() { *history.MaxCachedHeads = old }()
	opts, _, file := cacheStore(t)
	now := base
	opts.Cache.SetNow(func() time.Time { return now })
	dir := filepath.Join(opts.Dirs["claude"], "projects", "-w")
	for i := range 5 {
		now = now.Add(time.Hour)
		setFile(t, filepath.Join(dir, "s"+string(rune('a'+i))+".jsonl"), []byte(titled("T")), base)
		titles(t, opts)
	}
	kept := func() map[string]*history.CachedHead {
		raw, err := os.ReadFile(file)
		var f history.HeadCacheData
		if err != nil || json.Unmarshal(raw, &f) != nil {
			t.Fatalf("cache: %v", err)
		}
		return f.Heads
	}
	if h := kept(); len(h) != 3 {
		t.Errorf("%d heads kept, want 3", len(h))
	}
	// Listed no more (the files gone) for longer than cacheUnused: none.
	os.RemoveAll(dir)
	now = now.Add(history.CacheUnused + time.Hour)
	setFile(t, filepath.Join(opts.Dirs["claude"], "projects", "-x", "new.jsonl"), []byte(titled("New")), base)
	if got := titles(t, opts); got != "New" {
		t.Errorf("listing: %q", got)
	}
	if h := kept(); len(h) != 1 {
		t.Errorf("%d heads kept, want 1", len(h))
	}
}
