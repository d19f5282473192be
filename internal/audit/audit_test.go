package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/canonjson"
)

func newLog(t *testing.T, n int) string {
	t.Helper()
	path, err := Path(t.TempDir(), "0D7E8C55-0F3A-4E7B-8D61-2B9A0C1D2E30")
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		rec := map[string]any{"user": strings.Repeat("message ", i), "status": "completed", "items": []any{map[string]any{"id": "A", "type": "assistant", "text": "é/<>"}}}
		if err := Append(path, rec); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func lines(t *testing.T, path string) [][]byte {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.SplitAfter(data, []byte("\n"))[:bytes.Count(data, []byte("\n"))]
}

func write(t *testing.T, path string, ls [][]byte, extra ...byte) {
	if err := os.WriteFile(path, append(bytes.Join(ls, nil), extra...), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestChainHolds(t *testing.T) {
	path := newLog(t, 5)
	r, err := Verify(path)
	if err != nil || !r.OK() || r.Records != 5 || r.Torn || r.HeadBehind {
		t.Fatalf("Verify = %+v, %v", r, err)
	}
	recs, err := Read(path)
	if err != nil || len(recs) != 5 || recs[4]["seq"].(interface{ String() string }).String() != "5" {
		t.Fatalf("Read = %d records, %v", len(recs), err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("log mode %v", fi.Mode())
	}
}

func TestTamperingCaught(t *testing.T) {
	tests := []struct {
		name    string
		tamper  func(ls [][]byte) [][]byte
		wantBad int
	}{
		{"edit a middle record", func(ls [][]byte) [][]byte {
			ls[2] = bytes.Replace(ls[2], []byte("message"), []byte("massage"), 1)
			return ls
		}, 3},
		{"edit the last record", func(ls [][]byte) [][]byte {
			ls[4] = bytes.Replace(ls[4], []byte("completed"), []byte("failed!!!"), 1)
			return ls
		}, 5},
		{"remove a middle record", func(ls [][]byte) [][]byte { return append(ls[:1:1], ls[2:]...) }, 2},
		{"remove the last record", func(ls [][]byte) [][]byte { return ls[:4] }, 5},
		{"remove the first record", func(ls [][]byte) [][]byte { return ls[1:] }, 1},
		{"swap two records", func(ls [][]byte) [][]byte { ls[1], ls[2] = ls[2], ls[1]; return ls }, 2},
		{"insert a copy", func(ls [][]byte) [][]byte {
			return append(ls[:3:3], append([][]byte{ls[1]}, ls[3:]...)...)
		}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := newLog(t, 5)
			write(t, path, tt.tamper(lines(t, path)))
			r, err := Verify(path)
			if err != nil {
				t.Fatal(err)
			}
			if r.OK() || r.Bad != tt.wantBad {
				t.Errorf("Verify = %+v, want record %d bad", r, tt.wantBad)
			}
		})
	}
}

func TestTornLastLine(t *testing.T) {
	path := newLog(t, 3)
	ls := lines(t, path)
	// A crash while the fourth record was written: part of a line.
	write(t, path, ls, []byte(`{"items":[{"id":"A","ty`)...)
	r, err := Verify(path)
	if err != nil || !r.OK() || !r.Torn || r.Records != 3 {
		t.Fatalf("Verify = %+v, %v", r, err)
	}
	// The next append cuts the torn line and goes on.
	if err := Append(path, map[string]any{"user": "next"}); err != nil {
		t.Fatal(err)
	}
	r, _ = Verify(path)
	recs, _ := Read(path)
	if !r.OK() || r.Torn || r.Records != 4 || recs[3]["tornBytesRemoved"] == nil {
		t.Errorf("after the next append: %+v, %v", r, recs[3])
	}
}

func TestHeadBehindIsNotTampering(t *testing.T) {
	path := newLog(t, 2)
	state, _ := stateOf(path)
	head, _ := os.ReadFile(headPath(path))
	index, _ := os.ReadFile(filepath.Join(state, IndexFile))
	if err := Append(path, map[string]any{"user": "third"}); err != nil {
		t.Fatal(err)
	}
	// A crash after the log was synced, before the head and the index were
	// written.
	os.WriteFile(headPath(path), head, 0o600)
	os.WriteFile(filepath.Join(state, IndexFile), index, 0o600)
	r, err := Verify(path)
	if err != nil || !r.OK() || !r.HeadBehind || r.Behind != 1 || r.Records != 3 {
		t.Errorf("Verify = %+v, %v", r, err)
	}
	// Two more records written after the copies were taken: the index
	// counts three fewer, not "a record".
	for _, u := range []string{"fourth", "fifth"} {
		if err := Append(path, map[string]any{"user": u}); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(headPath(path), head, 0o600)
	os.WriteFile(filepath.Join(state, IndexFile), index, 0o600)
	if r, err := Verify(path); err != nil || !r.OK() || r.Behind != 3 || r.Records != 5 {
		t.Errorf("Verify after three records = %+v, %v", r, err)
	}
}

func TestPathRefusesBadIdentity(t *testing.T) {
	for _, id := range []string{"", "../x", "a/b", ".hidden", strings.Repeat("a", 200)} {
		if _, err := Path("/state", id); err == nil {
			t.Errorf("Path(%q) succeeded", id)
		}
	}
	p, err := Path("/state", "0D7E8C55-0F3A-4E7B-8D61-2B9A0C1D2E30")
	if err != nil || p != filepath.Join("/state", "audit", "0D7E8C55-0F3A-4E7B-8D61-2B9A0C1D2E30.jsonl") {
		t.Errorf("Path = %q, %v", p, err)
	}
}

func TestStateDir(t *testing.T) {
	t.Setenv("SPBRIDGE_STATE_DIR", "/a")
	t.Setenv("XDG_STATE_HOME", "/b")
	if d, _ := StateDir(); d != "/a" {
		t.Errorf("StateDir = %q", d)
	}
	t.Setenv("SPBRIDGE_STATE_DIR", "")
	if d, _ := StateDir(); d != "/b/spbridge" {
		t.Errorf("StateDir = %q", d)
	}
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", "/h")
	if d, _ := StateDir(); d != "/h/.local/state/spbridge" {
		t.Errorf("StateDir = %q", d)
	}
}

// manyMembers is a record with many small members.
func manyMembers() map[string]any {
	m := map[string]any{}
	for i := range 5000 {
		m[fmt.Sprintf("k%05d", i)] = strings.Repeat("v", i%97)
	}
	return m
}

// TestEncodeOnce checks that the record's line, made from the members
// encoded ahead of the append and the ones the append sets, is the
// record's own canonical encoding.
func TestEncodeOnce(t *testing.T) {
	for _, rec := range []map[string]any{
		{},
		{"a": "x"},
		{"z": []any{"y", map[string]any{"k": true}}},
		{"a": 1, "hmac0": "after", "h": nil, "q": "between", "sz": "after seq", "u": 1, "items": []any{map[string]any{"text": "é\n"}}},
		// Values larger than a chunk, and many values that share chunks.
		{"a": strings.Repeat("x", 3*chunkSize+5), "b": strings.Repeat("é", chunkSize), "c": []any{strings.Repeat("y", 100), strings.Repeat("z", chunkSize-3)}},
		manyMembers(),
	} {
		for _, torn := range []int64{0, 7} {
			p, err := prepare("/state/audit/ID.jsonl", rec)
			if err != nil {
				t.Fatal(err)
			}
			p.seq, p.prev, p.torn, p.tag = 3, "p", torn, "tag"
			var body bytes.Buffer
			p.encode(&body, false)
			full := maps.Clone(rec)
			full[FieldSeq], full[FieldPrev] = json.Number("3"), "p"
			if torn > 0 {
				full[FieldTorn] = json.Number("7")
			}
			if want, _ := canonjson.EncodeCompact(full); body.String() != string(want) {
				t.Errorf("encode(%v) = %s, want %s", rec, body.Bytes(), want)
			}
			full[FieldHMAC] = "tag"
			if want, _ := canonjson.EncodeCompact(full); string(p.line()) != string(want) {
				t.Errorf("line(%v) = %s, want %s", rec, p.line(), want)
			}
		}
	}
}
