package audit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Prune removes the logs under stateDir (with their heads) that have not
// changed since before cutoff, and marks them pruned in the index, so that
// verify reports them as pruned rather than missing. With dryRun nothing is
// removed. It returns the logs it removed (or would remove), oldest first.
func Prune(stateDir string, cutoff time.Time, dryRun bool) ([]string, error) {
	var removed []string
	err := withLock(stateDir, func() error {
		dir := filepath.Join(stateDir, "audit")
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("audit prune: %w", err)
		}
		type old struct {
			path string
			mod  time.Time
		}
		var olds []old
		for _, de := range entries {
			if !de.Type().IsRegular() || !strings.HasSuffix(de.Name(), ".jsonl") {
				continue
			}
			fi, err := de.Info()
			if err != nil {
				continue // removed meanwhile
			}
			if fi.ModTime().Before(cutoff) {
				olds = append(olds, old{filepath.Join(dir, de.Name()), fi.ModTime()})
			}
		}
		sort.Slice(olds, func(i, j int) bool { return olds[i].mod.Before(olds[j].mod) })
		if len(olds) == 0 || dryRun {
			for _, o := range olds {
				removed = append(removed, o.path)
			}
			return nil
		}
		// The index must say these were pruned: a key is made if there is
		// none, and an index that does not match it is not rewritten.
		_, keyErr := os.Stat(filepath.Join(stateDir, KeyFile))
		key, err := loadKey(stateDir, true)
		if err != nil {
			return err
		}
		ix, err := readIndex(stateDir, key)
		switch {
		case errors.Is(err, ErrIndexMissing) && keyErr != nil:
			ix = &index{logs: map[string]*entry{}}
		case errors.Is(err, ErrIndexMissing):
			ix = &index{logs: map[string]*entry{}, restarted: time.Now().UTC().Format(time.RFC3339) + ": the index was missing"}
		case err != nil:
			return fmt.Errorf("audit prune: %w; nothing was removed", err)
		}
		now := time.Now().UTC().Format(time.RFC3339)
		for _, o := range olds {
			_, id := stateOf(o.path)
			ix.logs[id] = &entry{pruned: now}
		}
		// The index first: a log it marks pruned and that is still there
		// verifies as a log; one removed and not marked would read missing.
		if err := ix.write(stateDir, key); err != nil {
			return fmt.Errorf("audit index: %w", err)
		}
		for _, o := range olds {
			if err := os.Remove(o.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("audit prune: %w", err)
			}
			if err := os.Remove(headPath(o.path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("audit prune: %w", err)
			}
			removed = append(removed, o.path)
		}
		return nil
	})
	return removed, err
}
