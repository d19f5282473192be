package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"spbridge/internal/canonjson"
	"spbridge/internal/regfile"
)

// The key, the index and the head beside each log catch whatever is done
// to a log by someone without the key, except one thing: putting back
// earlier copies of the index, a log and its head together (a restore
// from a backup, or someone who saved them) needs no key, and leaves a
// state that is the earlier state, records later appended gone. Only a
// head kept outside the state folder can tell; Heads makes one, and
// VerifyKept checks a log against it.

// Head is where a log ended when it was read: its conversation's identity,
// its count of whole records and the tag (hmac, or the sha256 of an older
// record) of its last one (64 zeros for a log without a whole record).
type Head struct {
	ID      string
	Records int64
	Last    string
}

// String is the head as one line of text without its newline: the
// identity, the count and the tag, separated by a space.
func (h Head) String() string {
	return h.ID + " " + strconv.FormatInt(h.Records, 10) + " " + h.Last
}

// JSON is the head as a one-line JSON object (canonical: keys sorted):
// {"id":…,"last":…,"records":…}.
func (h Head) JSON() []byte {
	data, _ := canonjson.EncodeCompact(map[string]any{"id": h.ID, "records": h.Records, "last": h.Last})
	return data
}

// Heads returns the head of every log in stateDir's audit folder, sorted
// by identity, as the logs stand: it reads only each log's last whole
// record, and checks nothing (Verify does). A log whose head cannot be read
// is left out and named in the error, which joins every such problem; the
// heads that could be read are returned with it.
func Heads(stateDir string) ([]Head, error) {
	paths, err := logFiles(stateDir)
	if err != nil {
		return nil, err
	}
	var heads []Head
	var errs []error
	for _, path := range paths {
		h, err := headOf(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("audit log %s: %w", path, err))
			continue
		}
		heads = append(heads, h)
	}
	return heads, errors.Join(errs...)
}

// headOf is the head of the log at path.
func headOf(path string) (Head, error) {
	_, id := stateOf(path)
	f, err := regfile.Open(path)
	if err != nil {
		return Head{}, err
	}
	defer f.Close()
	last, _, err := lastRecord(f)
	if err != nil {
		return Head{}, err
	}
	if last == nil {
		return Head{ID: id, Last: zeroHash}, nil
	}
	if last.seq <= 0 || last.tag == "" {
		return Head{}, errors.New("the last record has no seq or tag: run spbridge audit verify")
	}
	return Head{ID: id, Records: last.seq, Last: last.tag}, nil
}

// logFiles returns the logs in stateDir's audit folder (files named as
// Path names them), sorted.
func logFiles(stateDir string) ([]string, error) {
	dir := filepath.Join(stateDir, "audit")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	var paths []string
	for _, de := range entries {
		id, ok := strings.CutSuffix(de.Name(), ".jsonl")
		if !ok || !de.Type().IsRegular() || !identityRE.MatchString(id) {
			continue
		}
		paths = append(paths, filepath.Join(dir, de.Name()))
	}
	return paths, nil
}

// maxHeadsLine bounds a line of a heads file.
const maxHeadsLine = 64 << 10

var tagRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// ParseHeads reads heads as spbridge audit head prints them, one a line,
// in either form: text (identity, count, tag, separated by spaces or tabs)
// or a JSON object with id, records and last. Blank lines and lines that
// begin with # are skipped. The same log may have several heads (heads
// kept one after another, appended to one file): each is checked. A line
// that is neither form is an error naming it.
func ParseHeads(r io.Reader) ([]Head, error) {
	var heads []Head
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxHeadsLine)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		h, err := parseHead(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		heads = append(heads, h)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return heads, nil
}

func parseHead(line []byte) (Head, error) {
	var h Head
	if line[0] == '{' {
		v, err := canonjson.Decode(line)
		m, ok := v.(map[string]any)
		if err != nil || !ok {
			return h, errors.New("not a JSON object")
		}
		h.ID, _ = m["id"].(string)
		h.Last, _ = m["last"].(string)
		n, ok := m["records"].(json.Number)
		if !ok {
			return h, errors.New(`no "records" count`)
		}
		if h.Records, err = n.Int64(); err != nil {
			return h, errors.New(`"records" is not a whole number`)
		}
	} else {
		f := strings.Fields(string(line))
		if len(f) != 3 {
			return h, errors.New("want the identity, the record count and the last tag, separated by spaces")
		}
		h.ID, h.Last = f[0], f[2]
		var err error
		if h.Records, err = strconv.ParseInt(f[1], 10, 64); err != nil {
			return h, fmt.Errorf("the record count %q is not a whole number", f[1])
		}
	}
	switch {
	case !identityRE.MatchString(h.ID):
		return h, fmt.Errorf("%w: %q", ErrIdentity, h.ID)
	case h.Records < 0:
		return h, errors.New("a negative record count")
	case !tagRE.MatchString(h.Last):
		return h, fmt.Errorf("the last tag %q is not 64 hex digits", h.Last)
	}
	return h, nil
}

// VerifyKept is Verify, and checks the log against heads kept earlier (the
// heads in kept that name it; the others are ignored): a log whose records
// are fewer than a kept head counts reads as "N records missing since the
// kept head", one whose record at a kept head's count does not carry its
// tag as "the record at the kept head differs", and a log that is gone
// while a kept head counts records as Missing. So a rollback of the state
// folder's files to an earlier copy, which Verify alone cannot tell from
// that earlier state, is caught for any log whose head was kept after the
// records the rollback removed.
func VerifyKept(path string, kept []Head) (*Report, error) {
	stateDir, id := stateOf(path)
	vs, err := loadVerifyState(stateDir)
	if err != nil {
		return nil, err
	}
	return vs.verify(path, headsOf(kept, id))
}

func headsOf(kept []Head, id string) []Head {
	var out []Head
	for _, h := range kept {
		if h.ID == id {
			out = append(out, h)
		}
	}
	return out
}

// LogReport is what VerifyAll found of one log.
type LogReport struct {
	ID   string
	Path string
	*Report
}

// AllReport is what VerifyAll found.
type AllReport struct {
	Logs []LogReport // by identity
	// IndexProblem and Notes are the state folder's, the same in each log's
	// report: said once here.
	IndexProblem string
	Notes        []string
}

// OK reports whether every log verifies and the index is sound.
func (a *AllReport) OK() bool {
	if a.IndexProblem != "" {
		return false
	}
	for _, l := range a.Logs {
		if !l.OK() {
			return false
		}
	}
	return true
}

// VerifyAll verifies every log of stateDir, each as VerifyKept does with
// the heads in kept: the logs in its audit folder, those the index knows
// (a log deleted reads as missing; one pruned, unless kept names it, is
// left out), and those kept names (a log gone reads as missing).
func VerifyAll(stateDir string, kept []Head) (*AllReport, error) {
	vs, err := loadVerifyState(stateDir)
	if err != nil {
		return nil, err
	}
	paths, err := logFiles(stateDir)
	if err != nil {
		return nil, err
	}
	ids := map[string]bool{}
	for _, p := range paths {
		_, id := stateOf(p)
		ids[id] = true
	}
	if vs.ix != nil {
		for id, e := range vs.ix.logs {
			if e.pruned == "" || e.records > 0 {
				ids[id] = true
			}
		}
	}
	// The kept heads by log, grouped once: a look-up per log, not a pass
	// over them all, keeps the check linear in the number of logs.
	keptOf := map[string][]Head{}
	for _, h := range kept {
		ids[h.ID] = true
		keptOf[h.ID] = append(keptOf[h.ID], h)
	}
	a := &AllReport{IndexProblem: vs.indexProblem, Notes: vs.notes}
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		path, err := Path(stateDir, id)
		if err != nil {
			continue // not a log name: the index holds none such
		}
		r, err := vs.verify(path, keptOf[id])
		if errors.Is(err, ErrNoLog) {
			continue // a kept head of no record, of a log never written
		}
		if err != nil {
			return nil, err
		}
		a.Logs = append(a.Logs, LogReport{ID: id, Path: path, Report: r})
	}
	return a, nil
}
