package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"spbridge/internal/canonjson"
)

// Report is what Verify found.
type Report struct {
	Records int // whole records whose chain holds
	// Bad is the 1-based line of the first record that breaks the chain
	// (edited, removed, reordered or inserted), 0 when none; Problem says
	// what is wrong with it.
	Bad     int
	Problem string
	// Torn is set when the log ends in an incomplete line, as a crash in the
	// middle of a write leaves it: not tampering.
	Torn bool
	// HeadBehind is set when the log has whole records the head does not
	// count yet, as a crash between the two writes leaves it.
	HeadBehind bool
}

// OK reports whether the chain holds.
func (r *Report) OK() bool { return r.Bad == 0 }

// ErrNoLog is matched by the error of a conversation without an audit log.
var ErrNoLog = errors.New("no audit log")

// Verify checks the log at path: every record's sha256 matches its content,
// its seq counts up from 1 and its prev is the sha256 of the record before
// it, and the head kept beside the log matches its last record, so that an
// edit of any record (the last included), a removal, a reordering or an
// insertion is caught.
func Verify(path string) (*Report, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNoLog, path)
	}
	if err != nil {
		return nil, err
	}
	r := &Report{}
	lines := bytes.Split(data, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	} else {
		r.Torn = true
		lines = lines[:len(lines)-1]
	}
	prev := zeroHash
	for i, line := range lines {
		n := i + 1
		bad := func(format string, args ...any) (*Report, error) {
			r.Bad, r.Problem = n, fmt.Sprintf(format, args...)
			return r, nil
		}
		v, err := canonjson.Decode(line)
		rec, ok := v.(map[string]any)
		if err != nil || !ok {
			return bad("not a JSON object")
		}
		sum, _ := rec[FieldSHA256].(string)
		want, err := hashRecord(rec)
		if err != nil || sum != want {
			return bad("its content does not match its sha256 (edited)")
		}
		seq, err := rec[FieldSeq].(json.Number).Int64()
		if err != nil || seq != int64(n) {
			return bad("it is record %v where record %d belongs (removed, reordered or inserted records)", rec[FieldSeq], n)
		}
		if p, _ := rec[FieldPrev].(string); p != prev {
			return bad("it does not follow the record before it (removed, reordered or inserted records)")
		}
		prev = sum
		r.Records = n
	}
	head, err := readHead(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if r.Records > 0 {
			r.Bad, r.Problem = r.Records, "the head kept beside the log is missing"
		}
	case err != nil:
		r.Bad, r.Problem = r.Records, "the head kept beside the log cannot be read: "+err.Error()
	case head.records > int64(r.Records):
		r.Bad, r.Problem = r.Records+1, fmt.Sprintf("missing: the log ends at record %d, the head counts %d (removed records)", r.Records, head.records)
	case head.records == int64(r.Records) && head.sha256 != prev:
		r.Bad, r.Problem = r.Records, "it is not the last record the head names (edited or replaced)"
	case head.records < int64(r.Records):
		r.HeadBehind = true
	}
	return r, nil
}

type headInfo struct {
	records int64
	sha256  string
}

func readHead(path string) (headInfo, error) {
	data, err := os.ReadFile(headPath(path))
	if err != nil {
		return headInfo{}, err
	}
	v, err := canonjson.Decode(data)
	m, ok := v.(map[string]any)
	if err != nil || !ok {
		return headInfo{}, errors.New("not a JSON object")
	}
	n, _ := m["records"].(json.Number)
	count, err := n.Int64()
	if err != nil {
		return headInfo{}, errors.New("no record count")
	}
	sum, _ := m["sha256"].(string)
	return headInfo{records: count, sha256: sum}, nil
}

// Read returns the log's whole records in order (a torn last line is left
// out).
func Read(path string) ([]map[string]any, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNoLog, path)
	}
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break // torn
		}
		v, err := canonjson.Decode(data[:i])
		if rec, ok := v.(map[string]any); err == nil && ok {
			out = append(out, rec)
		}
		data = data[i+1:]
	}
	return out, nil
}
