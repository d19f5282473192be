package audit

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"spbridge/internal/canonjson"
)

// snapshot is a copy of some of the state folder's files, as a backup or
// someone who saved them keeps them.
type snapshot map[string]snapFile

type snapFile struct {
	data []byte
	mod  time.Time
}

func takeSnapshot(t *testing.T, paths ...string) snapshot {
	t.Helper()
	s := snapshot{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		s[p] = snapFile{data, fi.ModTime()}
	}
	return s
}

// restore puts the copies back in place, with their modification times
// (as cp -p or a backup tool does). No key is needed.
func (s snapshot) restore(t *testing.T) {
	t.Helper()
	for p, f := range s {
		if err := os.WriteFile(p, f.data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, f.mod, f.mod); err != nil {
			t.Fatal(err)
		}
	}
}

func appendN(t *testing.T, path string, n int, text string) {
	t.Helper()
	for i := range n {
		if err := Append(path, map[string]any{"user": text + " " + string(rune('a'+i))}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRollbackCaughtByKeptHead: earlier copies of the index and of one
// log and its head, put back, remove that log's last records, and Verify
// cannot tell (the state is the earlier state, signed with the key); a head
// kept before the rollback catches it, and catches the log written anew
// after it too.
func TestRollbackCaughtByKeptHead(t *testing.T) {
	state := t.TempDir()
	path, _ := Path(state, testID)
	other, _ := Path(state, "OTHER")
	appendN(t, path, 2, "before")
	appendN(t, other, 1, "other")
	saved := takeSnapshot(t, filepath.Join(state, IndexFile), path, headPath(path))

	appendN(t, path, 3, "after")
	appendN(t, other, 1, "other later")
	kept, err := Heads(state)
	if err != nil || len(kept) != 2 || kept[0].ID != testID || kept[0].Records != 5 || kept[1].ID != "OTHER" || kept[1].Records != 2 {
		t.Fatalf("Heads = %+v, %v", kept, err)
	}
	saved.restore(t)

	// The limit: without a kept head the rollback cannot be told from the
	// earlier state.
	if r, err := Verify(path); err != nil || !r.OK() || r.Records != 2 {
		t.Fatalf("Verify after the rollback = %+v, %v; want it to pass (what this test shows Verify cannot see)", r, err)
	}
	r, err := VerifyKept(path, kept)
	if err != nil || r.OK() || r.KeptHeads != 1 || !strings.HasPrefix(r.KeptProblem, "3 records missing since the kept head: the log ends at record 2, a head kept earlier counts 5") {
		t.Fatalf("VerifyKept after the rollback = %+v, %v", r, err)
	}
	// The other log, whose records the restored index does not count yet,
	// holds its kept head.
	if r, err := VerifyKept(other, kept); err != nil || !r.OK() || r.KeptHeads != 1 || r.Records != 2 {
		t.Errorf("the other log = %+v, %v", r, err)
	}
	all, err := VerifyAll(state, kept)
	if err != nil || all.OK() || len(all.Logs) != 2 || all.Logs[0].OK() || !all.Logs[1].OK() {
		t.Fatalf("VerifyAll = %+v, %v", all, err)
	}

	// Written anew after the rollback, to as many records or more: the
	// record at the kept head is another one.
	for _, n := range []int{3, 1} {
		appendN(t, path, n, "anew")
		if r, err := Verify(path); err != nil || !r.OK() {
			t.Fatalf("Verify of the log written anew = %+v, %v", r, err)
		}
		r, err := VerifyKept(path, kept)
		if err != nil || r.OK() || !strings.HasPrefix(r.KeptProblem, "the record at the kept head differs: record 5 ") {
			t.Errorf("written anew to %d records: %+v, %v", r.Records, r, err)
		}
	}
}

// TestKeptHeadsHold: heads kept one after another all hold while the log
// only grows; a head of another log is not this log's.
func TestKeptHeadsHold(t *testing.T) {
	state := t.TempDir()
	path, _ := Path(state, testID)
	var kept []Head
	for range 3 {
		appendN(t, path, 2, "turn")
		h, err := Heads(state)
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, h...)
	}
	kept = append(kept, Head{ID: "ELSEWHERE-" + testID[:8], Records: 9, Last: strings.Repeat("a", 64)})
	appendN(t, path, 1, "later")
	r, err := VerifyKept(path, kept)
	if err != nil || !r.OK() || r.KeptHeads != 3 || r.KeptRecords != 6 || r.Records != 7 {
		t.Errorf("VerifyKept = %+v, %v", r, err)
	}
	// Without heads it is Verify.
	if r, err := VerifyKept(path, nil); err != nil || !r.OK() || r.KeptHeads != 0 {
		t.Errorf("no kept heads: %+v, %v", r, err)
	}
	// A kept head with a tag the log never had at that count.
	bad := append(kept[:1:1], Head{ID: testID, Records: 4, Last: strings.Repeat("b", 64)})
	if r, _ := VerifyKept(path, bad); r.OK() || !strings.HasPrefix(r.KeptProblem, "the record at the kept head differs: record 4 ") {
		t.Errorf("a wrong tag: %+v", r)
	}
}

// TestKeptHeadOfAGoneLog: a log deleted with its head after the index was
// put back to before it was written reads as never written to Verify, and
// as missing against a head kept of it.
func TestKeptHeadOfAGoneLog(t *testing.T) {
	state := t.TempDir()
	first, _ := Path(state, "FIRST")
	appendN(t, first, 1, "first")
	saved := takeSnapshot(t, filepath.Join(state, IndexFile))
	path, _ := Path(state, testID)
	appendN(t, path, 2, "gone")
	kept, err := Heads(state)
	if err != nil {
		t.Fatal(err)
	}
	saved.restore(t)
	os.Remove(path)
	os.Remove(headPath(path))
	if _, err := Verify(path); !errors.Is(err, ErrNoLog) {
		t.Fatalf("Verify = %v, want ErrNoLog (the limit)", err)
	}
	r, err := VerifyKept(path, kept)
	if err != nil || r.OK() || !r.Missing || !strings.Contains(r.Problem, "a head kept earlier counts 2 records, but the log is gone") {
		t.Fatalf("VerifyKept = %+v, %v", r, err)
	}
	all, err := VerifyAll(state, kept)
	if err != nil || all.OK() || len(all.Logs) != 2 || all.Logs[0].ID != testID || !all.Logs[0].Missing || !all.Logs[1].OK() {
		t.Errorf("VerifyAll = %+v, %v", all, err)
	}
	// Without kept heads, VerifyAll sees only what the state folder shows.
	if all, err := VerifyAll(state, nil); err != nil || !all.OK() || len(all.Logs) != 1 {
		t.Errorf("VerifyAll without heads = %+v, %v", all, err)
	}
}

// TestVerifyAllLogs: every log in the folder and every log the index
// knows is verified; a deleted one reads as missing, a pruned one is left
// out; an index problem is said once.
func TestVerifyAllLogs(t *testing.T) {
	state := t.TempDir()
	for _, id := range []string{"A1", "B2", "C3", "OLD"} {
		p, _ := Path(state, id)
		appendN(t, p, 2, id)
	}
	b2, _ := Path(state, "B2")
	os.Remove(b2)
	os.Remove(headPath(b2))
	old, _ := Path(state, "OLD")
	long := time.Now().Add(-48 * time.Hour)
	os.Chtimes(old, long, long)
	if _, err := Prune(state, time.Now().Add(-time.Hour), false); err != nil {
		t.Fatal(err)
	}
	all, err := VerifyAll(state, nil)
	if err != nil || all.OK() || len(all.Logs) != 3 {
		t.Fatalf("VerifyAll = %+v, %v", all, err)
	}
	var ids []string
	for _, l := range all.Logs {
		ids = append(ids, l.ID)
	}
	if !reflect.DeepEqual(ids, []string{"A1", "B2", "C3"}) || !all.Logs[1].Missing || !all.Logs[0].OK() || !all.Logs[2].OK() {
		t.Errorf("logs %q: %+v", ids, all.Logs)
	}
	os.Remove(filepath.Join(state, IndexFile))
	all, err = VerifyAll(state, nil)
	if err != nil || all.OK() || !strings.Contains(all.IndexProblem, "missing") || len(all.Logs) != 2 {
		t.Errorf("without the index: %+v, %v", all, err)
	}
	if all, err := VerifyAll(t.TempDir(), nil); err != nil || !all.OK() || len(all.Logs) != 0 {
		t.Errorf("an empty state folder: %+v, %v", all, err)
	}
}

// TestHeadsForms: Heads reads each log's last record; both printed forms
// parse back to the same heads; what is neither form is refused.
func TestHeadsForms(t *testing.T) {
	state := t.TempDir()
	if h, err := Heads(state); err != nil || h != nil {
		t.Fatalf("no audit folder: %v, %v", h, err)
	}
	a, _ := Path(state, "A1")
	b, _ := Path(state, "B2")
	appendN(t, b, 3, "b")
	appendN(t, a, 1, "a")
	// A log of only a torn line has no whole record.
	torn, _ := Path(state, "T3")
	os.WriteFile(torn, []byte(`{"seq":1`), 0o600)
	heads, err := Heads(state)
	if err != nil || len(heads) != 3 {
		t.Fatalf("Heads = %+v, %v", heads, err)
	}
	recs := readRecs(t, b)
	want := []Head{{"A1", 1, tagOf(readRecs(t, a)[0])}, {"B2", 3, tagOf(recs[2])}, {"T3", 0, zeroHash}}
	if !reflect.DeepEqual(heads, want) {
		t.Fatalf("Heads = %+v, want %+v", heads, want)
	}
	var text, js bytes.Buffer
	text.WriteString("# kept on Monday\n\n")
	for _, h := range heads {
		text.WriteString(h.String() + "\n")
		js.Write(append(h.JSON(), '\n'))
	}
	if !strings.HasPrefix(js.String(), `{"id":"A1","last":"`+want[0].Last+`","records":1}`+"\n") {
		t.Errorf("JSON form: %s", js.String())
	}
	if !strings.Contains(text.String(), "\nB2 3 "+want[1].Last+"\n") {
		t.Errorf("text form: %s", text.String())
	}
	for name, in := range map[string]string{"text": text.String(), "json": js.String(), "text, tabs and CRLF": strings.ReplaceAll(strings.ReplaceAll(text.String(), " ", "\t"), "\n", "\r\n")} {
		got, err := ParseHeads(strings.NewReader(in))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: ParseHeads = %+v, %v", name, got, err)
		}
	}
	tag := strings.Repeat("c", 64)
	for _, line := range []string{
		"A1 3",
		"A1 x " + tag,
		"A1 -1 " + tag,
		"../etc 3 " + tag,
		"A1 3 " + strings.ToUpper(tag),
		"A1 3 " + tag + " extra",
		`{"id":"A1","records":3}`,
		`{"id":"A1","records":"3","last":"` + tag + `"}`,
		`{"id":"A1","records":3.5,"last":"` + tag + `"}`,
		`{"id":"A1",`,
	} {
		if h, err := ParseHeads(strings.NewReader("A1 1 " + tag + "\n" + line + "\n")); err == nil || !strings.HasPrefix(err.Error(), "line 2: ") {
			t.Errorf("%q: %+v, %v", line, h, err)
		}
	}

	// A log whose last record cannot be read is named; the others' heads
	// are still given.
	os.WriteFile(a, []byte("not json\n"), 0o600)
	heads, err = Heads(state)
	if err == nil || !strings.Contains(err.Error(), a) || len(heads) != 2 || heads[0].ID != "B2" {
		t.Errorf("an unreadable log: %+v, %v", heads, err)
	}
}

// TestKeptHeadHoldsAgainstTheKey: someone who holds the key can rewrite a
// record and sign the chain, the head and the index anew, which Verify
// cannot tell; a head kept after that record still can, since every tag
// after it changes.
func TestKeptHeadHoldsAgainstTheKey(t *testing.T) {
	path := newLog(t, 4)
	state, id := stateOf(path)
	kept, err := Heads(state)
	if err != nil {
		t.Fatal(err)
	}
	key, err := loadKey(state, false)
	if err != nil {
		t.Fatal(err)
	}
	recs := readRecs(t, path)
	recs[1]["user"] = "rewritten"
	var out []byte
	prev := zeroHash
	for _, rec := range recs {
		rec[FieldPrev] = prev
		if rec[FieldHMAC], err = recordMAC(key, id, rec); err != nil {
			t.Fatal(err)
		}
		prev = rec[FieldHMAC].(string)
		line, _ := canonjson.EncodeCompact(rec)
		out = append(append(out, line...), '\n')
	}
	os.WriteFile(path, out, 0o600)
	if err := writeHead(path, int64(len(recs)), prev); err != nil {
		t.Fatal(err)
	}
	ix, err := readIndex(state, key)
	if err != nil {
		t.Fatal(err)
	}
	ix.logs[id].last = prev
	if err := ix.write(state, key); err != nil {
		t.Fatal(err)
	}
	if r, err := Verify(path); err != nil || !r.OK() {
		t.Fatalf("Verify of the log signed anew = %+v, %v; want it to pass (what the key allows)", r, err)
	}
	if r, err := VerifyKept(path, kept); err != nil || r.OK() || !strings.HasPrefix(r.KeptProblem, "the record at the kept head differs: record 4 ") {
		t.Errorf("VerifyKept = %+v, %v", r, err)
	}
}
