package statefile

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "index.json")
	for _, data := range []string{"first", "second, longer"} {
		if err := WriteAtomic(path, []byte(data)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != data {
			t.Fatalf("after WriteAtomic(%q): %q, %v", data, got, err)
		}
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the folder holds %d entries, want only the file", len(entries))
	}
}

// TestWithLock: holders of the lock never overlap (a counter that only one
// holder may have raised at a time).
func TestWithLock(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "state", "x.lock")
	var (
		mu      sync.Mutex
		inside  int
		overlap bool
		wg      sync.WaitGroup
	)
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := WithLock(lock, func() error {
				mu.Lock()
				inside++
				overlap = overlap || inside > 1
				mu.Unlock()
				mu.Lock()
				inside--
				mu.Unlock()
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if overlap {
		t.Error("two holders of the lock at once")
	}
	if fi, err := os.Stat(filepath.Dir(lock)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("lock folder %v, %v", fi, err)
	}
}
