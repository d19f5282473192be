package audit

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"spbridge/internal/canonjson"
)

const testID = "0D7E8C55-0F3A-4E7B-8D61-2B9A0C1D2E30"

// plainChain rewrites records as an earlier spbridge wrote them, or as
// someone without the key would forge them: seq, prev and a plain sha256
// recomputed over each record, the head beside the log to match.
func plainChain(t *testing.T, path string, recs []map[string]any) {
	t.Helper()
	var out []byte
	prev := zeroHash
	for i, rec := range recs {
		delete(rec, FieldHMAC)
		rec[FieldSeq] = i + 1
		rec[FieldPrev] = prev
		sum, err := hashRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		rec[FieldSHA256] = sum
		line, _ := canonjson.EncodeCompact(rec)
		out = append(append(out, line...), '\n')
		prev = sum
	}
	os.MkdirAll(filepath.Dir(path), 0o700)
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	head, _ := canonjson.EncodeCompact(map[string]any{"records": len(recs), "sha256": prev})
	os.WriteFile(headPath(path), head, 0o600)
}

func readRecs(t *testing.T, path string) []map[string]any {
	t.Helper()
	recs, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestRecomputedPlainHashesCaught: editing a keyed log and recomputing the
// plain hashes (and the head) is caught, for one record or the whole log.
func TestRecomputedPlainHashesCaught(t *testing.T) {
	for _, whole := range []bool{false, true} {
		path := newLog(t, 3)
		recs := readRecs(t, path)
		recs[1]["user"] = "something else"
		if whole {
			plainChain(t, path, recs)
		} else {
			// Only the edited record and those after it are re-chained.
			var out []byte
			for _, l := range lines(t, path)[:1] {
				out = append(out, l...)
			}
			prev := tagOf(recs[0])
			for _, rec := range recs[1:] {
				delete(rec, FieldHMAC)
				rec[FieldPrev] = prev
				rec[FieldSHA256], _ = hashRecord(rec)
				prev = rec[FieldSHA256].(string)
				line, _ := canonjson.EncodeCompact(rec)
				out = append(append(out, line...), '\n')
			}
			os.WriteFile(path, out, 0o600)
		}
		r, err := Verify(path)
		if err != nil {
			t.Fatal(err)
		}
		if r.OK() {
			t.Errorf("whole=%v: recomputed plain hashes pass: %+v", whole, r)
		}
		if whole && r.Bad != 1 || !whole && r.Bad != 2 {
			t.Errorf("whole=%v: bad record %d (%s)", whole, r.Bad, r.Problem)
		}
	}
}

// TestKeyReplacedCaught: records do not verify under another key (the key
// file replaced), nor without one.
func TestKeyReplacedCaught(t *testing.T) {
	path := newLog(t, 2)
	state, _ := stateOf(path)
	os.Remove(filepath.Join(state, KeyFile))
	if _, err := loadKey(state, true); err != nil {
		t.Fatal(err)
	}
	r, err := Verify(path)
	if err != nil || r.OK() || r.Bad != 1 {
		t.Errorf("after the key was replaced: %+v, %v", r, err)
	}
	// With the key gone, keyed records cannot be checked: not ok either.
	os.Remove(filepath.Join(state, KeyFile))
	r, err = Verify(path)
	if err != nil || r.OK() || !strings.Contains(r.Problem, "key") {
		t.Errorf("without the key: %+v, %v", r, err)
	}
}

// TestLegacyLogVerifiesUnkeyed: a plain SHA-256 chain from an earlier
// spbridge verifies, reported as unkeyed; appending to it goes on keyed, and
// the unkeyed part cannot be extended past the keyed records.
func TestLegacyLogVerifiesUnkeyed(t *testing.T) {
	path, _ := Path(t.TempDir(), testID)
	plainChain(t, path, []map[string]any{{"user": "one"}, {"user": "two"}, {"user": "three"}})
	r, err := Verify(path)
	if err != nil || !r.OK() || r.Records != 3 || r.Unkeyed != 3 || r.Keyed != 0 || r.Indexed {
		t.Fatalf("legacy: %+v, %v", r, err)
	}
	if err := Append(path, map[string]any{"user": "four"}); err != nil {
		t.Fatal(err)
	}
	r, err = Verify(path)
	if err != nil || !r.OK() || r.Records != 4 || r.Unkeyed != 3 || r.Keyed != 1 || !r.Indexed {
		t.Fatalf("legacy then keyed: %+v, %v", r, err)
	}
	// Rewriting the keyed record as a plain one is caught.
	recs := readRecs(t, path)
	recs[3]["user"] = "forged"
	plainChain(t, path, recs)
	if r, _ := Verify(path); r.OK() || r.Bad != 4 {
		t.Errorf("the keyed record rewritten plain: %+v", r)
	}
}

// TestDeletedLogReadsMissing: a log deleted with its head is reported
// missing, not as a conversation that was never audited; appending again
// keeps the loss on record.
func TestDeletedLogReadsMissing(t *testing.T) {
	path := newLog(t, 2)
	os.Remove(path)
	os.Remove(headPath(path))
	r, err := Verify(path)
	if err != nil || r.OK() || !r.Missing || !strings.Contains(r.Problem, "log missing") {
		t.Fatalf("deleted log: %+v, %v", r, err)
	}
	state, _ := stateOf(path)
	other, _ := Path(state, "OTHER")
	if _, err := Verify(other); !errors.Is(err, ErrNoLog) {
		t.Errorf("a log never written: %v, want ErrNoLog", err)
	}
	if err := Append(path, map[string]any{"user": "after"}); err != nil {
		t.Fatal(err)
	}
	r, err = Verify(path)
	if err != nil || r.OK() || !strings.Contains(r.Problem, "records were lost") {
		t.Errorf("a new log where one was deleted: %+v, %v", r, err)
	}
}

// TestIndexTamperingCaught: the index cannot be edited or removed unseen.
func TestIndexTamperingCaught(t *testing.T) {
	path := newLog(t, 3)
	state, _ := stateOf(path)
	ixPath := filepath.Join(state, IndexFile)
	data, _ := os.ReadFile(ixPath)
	// Drop the last record and lower the count the index keeps.
	ls := lines(t, path)
	write(t, path, ls[:2])
	os.WriteFile(ixPath, bytes.Replace(data, []byte(`"records":3`), []byte(`"records":2`), 1), 0o600)
	if r, _ := Verify(path); r.OK() || r.IndexProblem == "" {
		t.Errorf("an edited index: %+v", r)
	}
	os.Remove(ixPath)
	if r, _ := Verify(path); r.OK() || !strings.Contains(r.IndexProblem, "missing") {
		t.Errorf("a deleted index: %+v", r)
	}
}

// TestKeyFile: the key is made once, 0600, beside the logs' folder, and
// never replaced, however many make it at once.
func TestKeyFile(t *testing.T) {
	state := t.TempDir()
	var wg sync.WaitGroup
	keys := make([][]byte, 8)
	errs := make([]error, 8)
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keys[i], errs[i] = loadKey(state, true)
		}()
	}
	wg.Wait()
	for i := range keys {
		if errs[i] != nil || !bytes.Equal(keys[i], keys[0]) || len(keys[i]) != keySize {
			t.Fatalf("key %d: %x, %v (first %x)", i, keys[i], errs[i], keys[0])
		}
	}
	fi, err := os.Stat(filepath.Join(state, KeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v, %v", fi, err)
	}
	if entries, _ := os.ReadDir(state); len(entries) != 1 {
		t.Errorf("the state folder holds %d entries, want the key alone", len(entries))
	}
	if _, err := loadKey(t.TempDir(), false); !errors.Is(err, ErrNoKey) {
		t.Errorf("no key: %v", err)
	}
}

// TestConcurrentAppendsKeepTheIndex: appends to different logs from many
// goroutines at once all reach the index.
func TestConcurrentAppendsKeepTheIndex(t *testing.T) {
	state := t.TempDir()
	var wg sync.WaitGroup
	ids := []string{"A1", "B2", "C3", "D4", "E5", "F6"}
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path, _ := Path(state, id)
			for range 3 {
				if err := Append(path, map[string]any{"user": id}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	for _, id := range ids {
		path, _ := Path(state, id)
		if r, err := Verify(path); err != nil || !r.OK() || !r.Indexed || r.Records != 3 {
			t.Errorf("%s: %+v, %v", id, r, err)
		}
	}
}

// TestPrune: logs unchanged since before the cutoff go, marked in the index
// so they read as pruned, not missing; the others stay.
func TestPrune(t *testing.T) {
	state := t.TempDir()
	oldPath, _ := Path(state, "OLD")
	newPath, _ := Path(state, "NEW")
	for _, p := range []string{oldPath, newPath} {
		if err := Append(p, map[string]any{"user": "x"}); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-60 * 24 * time.Hour)
	os.Chtimes(oldPath, long, long)
	cutoff := time.Now().Add(-30 * 24 * time.Hour)

	got, err := Prune(state, cutoff, true)
	if err != nil || len(got) != 1 || got[0] != oldPath {
		t.Fatalf("dry run = %q, %v", got, err)
	}
	if _, err := os.Stat(oldPath); err != nil {
		t.Fatalf("the dry run removed the log: %v", err)
	}
	got, err = Prune(state, cutoff, false)
	if err != nil || len(got) != 1 || got[0] != oldPath {
		t.Fatalf("Prune = %q, %v", got, err)
	}
	for _, p := range []string{oldPath, headPath(oldPath)} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there: %v", p, err)
		}
	}
	r, err := Verify(oldPath)
	if err != nil || !r.OK() || r.Pruned == "" || r.Missing {
		t.Errorf("the pruned log: %+v, %v", r, err)
	}
	if r, err := Verify(newPath); err != nil || !r.OK() || r.Records != 1 {
		t.Errorf("the log kept: %+v, %v", r, err)
	}
	// The conversation goes on: a new log, noted.
	if err := Append(oldPath, map[string]any{"user": "y"}); err != nil {
		t.Fatal(err)
	}
	if r, err := Verify(oldPath); err != nil || !r.OK() || r.Records != 1 || len(r.Notes) == 0 {
		t.Errorf("a log after a prune: %+v, %v", r, err)
	}
}
