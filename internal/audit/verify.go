package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"spbridge/internal/canonjson"
	"spbridge/internal/regfile"
)

// Report is what Verify found.
type Report struct {
	Records int // whole records whose chain holds
	// Keyed and Unkeyed count the records checked with the key (hmac) and
	// those an earlier spbridge wrote with a plain SHA-256, which anyone
	// who edits them can recompute.
	Keyed, Unkeyed int
	// Bad is the 1-based line of the first record that breaks the chain
	// (edited, removed, reordered or inserted), 0 when none; Problem says
	// what is wrong with it.
	Bad     int
	Problem string
	// Missing is set when the log is gone but the index counted its
	// records: it was deleted (with its head). Problem says more.
	Missing bool
	// Pruned is when spbridge state prune removed the log, "" otherwise.
	Pruned string
	// Indexed is set when the state folder's index knows the log.
	Indexed bool
	// IndexProblem says what is wrong with the index (missing while the key
	// is there, or not matching the key): evidence that someone removed or
	// edited it. "" when none.
	IndexProblem string
	// Notes are facts the reader should weigh that are not tampering with
	// this log (the index restarted, the key missing for an unkeyed log).
	Notes []string
	// Torn is set when the log ends in an incomplete line, as a crash in the
	// middle of a write leaves it: not tampering.
	Torn bool
	// HeadBehind is set when the log has whole records the head (or the
	// index) does not count yet, as a crash between the writes leaves it
	// (or an earlier copy of the index put back); Behind is how many.
	HeadBehind bool
	Behind     int64
	// KeptHeads is how many heads kept earlier (see Heads) the log was
	// checked against, KeptRecords the largest record count among them;
	// KeptProblem says which one it does not hold ("N records missing since
	// the kept head", "the record at the kept head differs"), "" when it
	// holds them all.
	KeptHeads   int
	KeptRecords int64
	KeptProblem string
}

// OK reports whether the chain holds and nothing shows tampering.
func (r *Report) OK() bool {
	return r.Bad == 0 && !r.Missing && r.IndexProblem == "" && r.KeptProblem == ""
}

// ErrNoLog is matched by the error of a conversation without an audit log
// that the index does not know either (no turn was audited: none ran, or
// they ran with --no-audit, or before the index existed).
var ErrNoLog = errors.New("no audit log")

// Verify checks the log at path (as Path names it): every record's hmac
// (under the key in the state folder; a plain sha256 for a record an
// earlier spbridge wrote) matches its content, its seq counts up from 1 and
// its prev is the tag of the record before it, no unkeyed record follows a
// keyed one, and the head kept in the index (or beside a log the index does
// not know) matches its last record. So an edit of any record (the last
// included), a removal, a reordering or an insertion is caught, even when
// the plain hashes were recomputed; and a log deleted with its head reads
// as Missing. It cannot catch someone who holds the key, nor a log deleted
// together with the key and the index, nor earlier copies of the index, the
// log and its head put back together (no key is needed for that: the state
// is then the earlier state); VerifyKept catches the last with a head kept
// outside the state folder.
func Verify(path string) (*Report, error) {
	stateDir, _ := stateOf(path)
	vs, err := loadVerifyState(stateDir)
	if err != nil {
		return nil, err
	}
	return vs.verify(path, nil)
}

// verifyState is what verifying any log of a state folder needs of it: the
// key and the index, read once.
type verifyState struct {
	stateDir string
	key      []byte
	keyErr   error // ErrNoKey, or nil
	ix       *index
	// indexProblem and notes go into every log's report.
	indexProblem string
	notes        []string
}

func loadVerifyState(stateDir string) (*verifyState, error) {
	vs := &verifyState{stateDir: stateDir}
	vs.key, vs.keyErr = loadKey(stateDir, false)
	if vs.keyErr == nil {
		ix, err := readIndex(stateDir, vs.key)
		if err != nil {
			vs.indexProblem = err.Error()
			if errors.Is(err, ErrIndexMissing) {
				vs.indexProblem = "the index " + filepath.Join(stateDir, IndexFile) + " is missing while the key is there (deleted)"
			}
		} else {
			vs.ix = ix
			if ix.restarted != "" {
				vs.notes = append(vs.notes, "the index was started again ("+ix.restarted+"): a log deleted before then would not read as missing")
			}
		}
	} else if !errors.Is(vs.keyErr, ErrNoKey) {
		return nil, vs.keyErr
	}
	return vs, nil
}

// verify checks the log at path (in vs's state folder) as Verify does, and
// against kept, the heads of this log kept earlier (see VerifyKept).
func (vs *verifyState) verify(path string, kept []Head) (*Report, error) {
	stateDir := vs.stateDir
	_, identity := stateOf(path)
	key, keyErr, ix := vs.key, vs.keyErr, vs.ix
	r := &Report{IndexProblem: vs.indexProblem, Notes: slices.Clone(vs.notes)}
	var e *entry
	if ix != nil {
		e = ix.logs[identity]
	}
	r.Indexed = e != nil
	// keptAt is the tags the kept heads name, by their record count;
	// keptMost the largest count.
	var keptAt map[int64][]string
	var keptMost int64
	for _, h := range kept {
		if keptAt == nil {
			keptAt = map[int64][]string{}
		}
		keptAt[h.Records] = append(keptAt[h.Records], h.Last)
		keptMost = max(keptMost, h.Records)
	}
	r.KeptHeads, r.KeptRecords = len(kept), keptMost

	data, err := regfile.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		switch {
		case e != nil && e.records == 0 && e.pruned != "":
			r.Pruned = e.pruned
			return r, nil
		case e != nil:
			r.Missing = true
			r.Problem = fmt.Sprintf("log missing: the index counts %d records, but the log is gone (deleted, with its head)", e.records)
			return r, nil
		case keptMost > 0:
			r.Missing = true
			r.Problem = fmt.Sprintf("log missing: a head kept earlier counts %d records, but the log is gone (deleted, or the state folder rolled back to before it)", keptMost)
			return r, nil
		case r.IndexProblem != "":
			// The index that could tell is itself missing or edited.
			r.Missing = true
			r.Problem = "no log, and the index that would tell whether one was written cannot be trusted"
			return r, nil
		}
		return nil, fmt.Errorf("%w: %s", ErrNoLog, path)
	}
	if err != nil {
		return nil, err
	}
	lines := bytes.Split(data, []byte("\n"))
	if len(lines[len(lines)-1]) != 0 {
		r.Torn = true
	}
	lines = lines[:len(lines)-1]
	prev := zeroHash
	var firstKeyed int64
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
		if tag, keyed := rec[FieldHMAC].(string); keyed {
			if key == nil {
				return bad("a keyed record, but the key %s is missing (deleted?): it cannot be checked", filepath.Join(stateDir, KeyFile))
			}
			want, err := recordMAC(key, identity, rec)
			if err != nil || tag != want {
				return bad("its content does not match its hmac (edited, or the key was replaced)")
			}
			if firstKeyed == 0 {
				firstKeyed = int64(n)
			}
			r.Keyed++
		} else {
			if firstKeyed != 0 {
				return bad("an unkeyed record after keyed ones (rewritten without the key)")
			}
			if e != nil && e.keyedFrom > 0 && int64(n) >= e.keyedFrom {
				return bad("unkeyed, but the index says the log is keyed from record %d (rewritten without the key)", e.keyedFrom)
			}
			sum, _ := rec[FieldSHA256].(string)
			want, err := hashRecord(rec)
			if err != nil || sum != want {
				return bad("its content does not match its sha256 (edited)")
			}
			r.Unkeyed++
		}
		seq, err := rec[FieldSeq].(json.Number).Int64()
		if err != nil || seq != int64(n) {
			return bad("it is record %v where record %d belongs (removed, reordered or inserted records)", rec[FieldSeq], n)
		}
		if p, _ := rec[FieldPrev].(string); p != prev {
			return bad("it does not follow the record before it (removed, reordered or inserted records)")
		}
		prev = tagOf(rec)
		r.Records = n
		for _, tag := range keptAt[int64(n)] {
			if tag != prev && r.KeptProblem == "" {
				r.KeptProblem = fmt.Sprintf("the record at the kept head differs: record %d is not the one a head kept earlier names (the log was rolled back to an earlier copy and written anew, or replaced)", n)
			}
		}
	}
	n := int64(r.Records)
	if keptMost > n && r.Bad == 0 && r.KeptProblem == "" {
		r.KeptProblem = fmt.Sprintf("%d records missing since the kept head: the log ends at record %d, a head kept earlier counts %d (rolled back to an earlier copy, or records removed)", keptMost-n, n, keptMost)
	}
	if e != nil {
		if e.pruned != "" {
			r.Notes = append(r.Notes, "an earlier log of this conversation was pruned on "+e.pruned)
		}
		switch {
		case len(e.lost) > 0:
			l, _ := e.lost[0].(map[string]any)
			r.Bad = int(number(l["found"])) + 1
			r.Problem = fmt.Sprintf("records were lost: on %v the index counted %v records but the log held %v (deleted or cut)", l["time"], l["indexed"], l["found"])
		case e.keyedFrom > 0 && firstKeyed == 0 && e.keyedFrom <= n:
			r.Bad, r.Problem = int(e.keyedFrom), fmt.Sprintf("unkeyed, but the index says the log is keyed from record %d (rewritten without the key)", e.keyedFrom)
		case e.records > n:
			r.Bad, r.Problem = r.Records+1, fmt.Sprintf("missing: the log ends at record %d, the index counts %d (removed records)", n, e.records)
		case e.records == n && e.last != prev:
			r.Bad, r.Problem = r.Records, "it is not the last record the index names (edited or replaced)"
		case e.records < n:
			r.HeadBehind, r.Behind = true, n-e.records
		}
		return r, nil
	}
	if r.Keyed > 0 && ix != nil {
		r.Bad, r.Problem = r.Records, "a keyed log the index does not know (its entry was removed)"
		return r, nil
	}
	if keyErr != nil && r.Keyed == 0 {
		r.Notes = append(r.Notes, "no audit key in "+stateDir+": this log was written by an earlier spbridge")
	}
	head, err := readHead(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if r.Records > 0 {
			r.Bad, r.Problem = r.Records, "the head kept beside the log is missing"
		}
	case err != nil:
		r.Bad, r.Problem = r.Records, "the head kept beside the log cannot be read: "+err.Error()
	case head.records > n:
		r.Bad, r.Problem = r.Records+1, fmt.Sprintf("missing: the log ends at record %d, the head counts %d (removed records)", r.Records, head.records)
	case head.records == n && head.last != prev:
		r.Bad, r.Problem = r.Records, "it is not the last record the head names (edited or replaced)"
	case head.records < n:
		r.HeadBehind, r.Behind = true, n-head.records
	}
	return r, nil
}

type headInfo struct {
	records int64
	last    string
}

func readHead(path string) (headInfo, error) {
	data, err := regfile.ReadFile(headPath(path))
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
	last, ok := m["last"].(string)
	if !ok {
		last, _ = m["sha256"].(string) // as earlier versions wrote it
	}
	return headInfo{records: count, last: last}, nil
}

// Read returns the log's whole records in order (a torn last line is left
// out).
func Read(path string) ([]map[string]any, error) {
	data, err := regfile.ReadFile(path)
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
