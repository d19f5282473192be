package audit

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestQueueAppendsInOrder queues records for two logs from several
// goroutines and checks that each log holds its records in the order they
// were queued, encoded as they were when queued, with the chain and the
// index whole.
func TestQueueAppendsInOrder(t *testing.T) {
	dir := t.TempDir()
	a, _ := Path(dir, "A")
	b, _ := Path(dir, "B")
	var mu sync.Mutex
	var errs []error
	q := NewQueue(func(path string, err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() })
	var wg sync.WaitGroup
	for _, path := range []string{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				rec := map[string]any{"user": fmt.Sprint(i), "items": []any{map[string]any{"text": "x"}}}
				if err := q.Append(path, rec); err != nil {
					t.Error(err)
				}
				rec["user"] = "changed after it was queued"
			}
		}()
	}
	wg.Wait()
	q.Flush()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, path := range []string{a, b} {
		r, err := Verify(path)
		if err != nil || !r.OK() || r.Records != 50 || r.HeadBehind {
			t.Fatalf("Verify(%s) = %+v, %v", path, r, err)
		}
		recs, err := Read(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, rec := range recs {
			if rec["user"] != fmt.Sprint(i) {
				t.Fatalf("%s record %d: user %v", path, i+1, rec["user"])
			}
		}
	}
	// What the queue wrote, Append goes on from.
	if err := Append(a, map[string]any{"user": "after"}); err != nil {
		t.Fatal(err)
	}
	if r, err := Verify(a); err != nil || !r.OK() || r.Records != 51 {
		t.Fatalf("Verify after Append = %+v, %v", r, err)
	}
}

// TestQueueReportsFailure checks that an append that cannot be written
// reaches onError and that Flush still returns.
func TestQueueReportsFailure(t *testing.T) {
	dir := t.TempDir()
	path, _ := Path(dir, "A")
	// A log whose folder is a file (another log) cannot be made.
	if err := Append(path, map[string]any{"user": "x"}); err != nil {
		t.Fatal(err)
	}
	bad := path + "/C.jsonl"
	got := make(chan error, 2)
	q := NewQueue(func(p string, err error) {
		if p != bad {
			t.Errorf("error for %s", p)
		}
		got <- err
	})
	if err := q.Append(bad, map[string]any{"user": "y"}); err != nil {
		t.Fatal(err)
	}
	q.Flush()
	select {
	case err := <-got:
		if err == nil {
			t.Fatal("nil error reported")
		}
	default:
		t.Fatal("no error reported")
	}
}

// TestCacheSeesOtherWriters checks that what a process keeps of the state
// folder is read again once another process wrote it: the other's records
// are chained onto and its index entries kept.
func TestCacheSeesOtherWriters(t *testing.T) {
	dir := t.TempDir()
	a, _ := Path(dir, "A")
	b, _ := Path(dir, "B")
	for range 2 {
		if err := Append(a, map[string]any{"user": "this process"}); err != nil {
			t.Fatal(err)
		}
	}
	appendMu.Lock()
	kept := dirs[dir]
	delete(dirs, dir) // another process: nothing kept
	appendMu.Unlock()
	if err := Append(a, map[string]any{"user": "another process"}); err != nil {
		t.Fatal(err)
	}
	if err := Append(b, map[string]any{"user": "another process"}); err != nil {
		t.Fatal(err)
	}
	appendMu.Lock()
	dirs[dir] = kept
	appendMu.Unlock()
	if err := Append(a, map[string]any{"user": "this process again"}); err != nil {
		t.Fatal(err)
	}
	if r, err := Verify(a); err != nil || !r.OK() || r.Records != 4 || r.HeadBehind {
		t.Fatalf("Verify(A) = %+v, %v", r, err)
	}
	if r, err := Verify(b); err != nil || !r.OK() || r.Records != 1 || !r.Indexed {
		t.Fatalf("Verify(B) = %+v, %v", r, err)
	}
}

// TestQueueBatchesQuickRecords checks that a record that comes after a
// pause is written at once, that records that come within the gap of the
// last batch wait and go together in one batch, and that Flush does not
// wait for the gap.
func TestQueueBatchesQuickRecords(t *testing.T) {
	dir := t.TempDir()
	a, _ := Path(dir, "A")
	b, _ := Path(dir, "B")
	q := NewQueue(func(path string, err error) { t.Error(path, err) })
	q.gap = time.Hour // only Flush ends the wait

	q.Append(a, map[string]any{"user": "first"})
	q.mu.Lock()
	for q.written < 1 { // no earlier batch: written without waiting
		q.cond.Wait()
	}
	q.mu.Unlock()
	for i := range 5 {
		q.Append([]string{a, b}[i%2], map[string]any{"user": fmt.Sprint(i)})
	}
	q.Flush()
	if q.batches != 2 {
		t.Errorf("%d batches, want 2 (the first record, then the five that waited)", q.batches)
	}
	for path, n := range map[string]int{a: 4, b: 2} {
		if r, err := Verify(path); err != nil || !r.OK() || r.Records != n || r.HeadBehind {
			t.Fatalf("Verify(%s) = %+v, %v", path, r, err)
		}
	}
}

// TestQueueLargeRecordsDoNotWait checks that records that hold
// maxPendingBytes are written without waiting for the gap.
func TestQueueLargeRecordsDoNotWait(t *testing.T) {
	dir := t.TempDir()
	a, _ := Path(dir, "A")
	q := NewQueue(func(path string, err error) { t.Error(path, err) })
	q.gap = time.Hour // only Flush or the size ends the wait
	big := strings.Repeat("x", maxPendingBytes/2)
	q.Append(a, map[string]any{"user": "first"}) // no earlier batch: at once
	for i := range 3 {
		q.Append(a, map[string]any{"user": fmt.Sprint(i), "items": []any{big}})
	}
	q.mu.Lock()
	for q.written < 3 { // the first, then the two that hold enough
		q.cond.Wait()
	}
	q.mu.Unlock()
	q.Flush()
	if r, err := Verify(a); err != nil || !r.OK() || r.Records != 4 {
		t.Fatalf("Verify = %+v, %v", r, err)
	}
}
