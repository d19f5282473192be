package sessionindex

import (
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// TestRecorder: records asked for in a burst are written in the
// background, and Wait returns once they are on disk; a record that fails
// is told.
func TestRecorder(t *testing.T) {
	ix := New(t.TempDir())
	pkg := filepath.Join(t.TempDir(), "Doc.silverpoint")
	var clock atomic.Int64
	ix.now = func() time.Time { return time.Unix(clock.Add(1), 0) }
	var r Recorder
	for _, text := range []string{"first", "second", "third"} {
		r.Later(ix, pkg, "/w", text, func(err error) { t.Error(err) })
	}
	r.Wait()
	e, ok, err := ix.Get(pkg)
	if err != nil || !ok {
		t.Fatalf("entry: %v %v", ok, err)
	}
	// The title is the message of the first record written, which may be
	// any of the burst's (the last waiting wins).
	if e.Title == "" || e.Cwd != "/w" {
		t.Errorf("entry %+v", e)
	}
	if n := clock.Load(); n < 1 || n > 3 {
		t.Errorf("%d writes for three records", n)
	}
	failed := make(chan error, 1)
	var bad Recorder
	bad.Later(ix, "", "", "x", func(err error) { failed <- err })
	bad.Wait()
	select {
	case <-failed:
	default:
		t.Error("a record that could not be written was not told")
	}
}
