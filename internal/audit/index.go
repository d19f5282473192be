package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"

	"spbridge/internal/canonjson"
	"spbridge/internal/regfile"
	"spbridge/internal/statefile"
)

// IndexFile is the name of the index of every log's head in the state
// folder, beside the key.
const IndexFile = "audit-index.json"

// lockName is the file whose lock serialises every change to the logs and
// the index, across processes.
const lockName = "audit-index.lock"

// entry is what the index knows of one log.
type entry struct {
	records   int64  // whole records when it was last written
	last      string // the tag (hmac, or sha256 of an older record) of the last
	keyedFrom int64  // the first keyed record, 0 when none
	pruned    string // when state prune removed the log, "" when it did not
	pkg       string // the package of its last record (its "package"), "" when unknown
	// lost says what vanished: when a record was appended to a log that
	// was shorter than the index said (deleted or cut).
	lost []any
}

// index is the per-user record of every log's head, signed with the key so
// that it cannot be edited without it.
type index struct {
	logs map[string]*entry
	// restarted is when Append found the index missing although the key was
	// there, and started it again: a log deleted before then cannot be
	// told from one never written.
	restarted string
}

func indexDomain() string { return "spbridge audit index" }

func (ix *index) value() map[string]any {
	logs := make(map[string]any, len(ix.logs))
	for id, e := range ix.logs {
		m := map[string]any{"records": json.Number(strconv.FormatInt(e.records, 10)), "last": e.last,
			"keyedFrom": json.Number(strconv.FormatInt(e.keyedFrom, 10))}
		if e.pruned != "" {
			m["pruned"] = e.pruned
		}
		if e.pkg != "" {
			m["package"] = e.pkg
		}
		if len(e.lost) > 0 {
			m["lost"] = e.lost
		}
		logs[id] = m
	}
	v := map[string]any{"logs": logs}
	if ix.restarted != "" {
		v["restarted"] = ix.restarted
	}
	return v
}

// ErrIndexMissing is matched by the error of a state folder with a key but
// no index.
var ErrIndexMissing = errors.New("the audit index is missing")

// readIndex reads and checks the index of stateDir.
func readIndex(stateDir string, key []byte) (*index, error) {
	path := filepath.Join(stateDir, IndexFile)
	data, err := readLimited(path, maxIndex)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrIndexMissing, path)
	}
	if err != nil {
		return nil, fmt.Errorf("audit index: %w", err)
	}
	v, err := canonjson.Decode(data)
	top, ok := v.(map[string]any)
	if err != nil || !ok {
		return nil, fmt.Errorf("audit index %s: not a JSON object", path)
	}
	tag, _ := top["mac"].(string)
	delete(top, "mac")
	body, err := canonjson.EncodeCompact(top)
	if err != nil {
		return nil, fmt.Errorf("audit index %s: %w", path, err)
	}
	if tag != mac(key, indexDomain(), body) {
		return nil, fmt.Errorf("audit index %s: its signature does not match the key (edited, or the key was replaced)", path)
	}
	ix := &index{logs: map[string]*entry{}}
	ix.restarted, _ = top["restarted"].(string)
	logs, _ := top["logs"].(map[string]any)
	for id, x := range logs {
		m, _ := x.(map[string]any)
		e := &entry{}
		e.records = number(m["records"])
		e.keyedFrom = number(m["keyedFrom"])
		e.last, _ = m["last"].(string)
		e.pruned, _ = m["pruned"].(string)
		e.pkg, _ = m["package"].(string)
		e.lost, _ = m["lost"].([]any)
		ix.logs[id] = e
	}
	return ix, nil
}

func number(v any) int64 {
	n, _ := v.(json.Number)
	i, _ := n.Int64()
	return i
}

// write replaces the index atomically: a temporary file, synced, renamed.
func (ix *index) write(stateDir string, key []byte) error {
	v := ix.value()
	body, err := canonjson.EncodeCompact(v)
	if err != nil {
		return err
	}
	v["mac"] = mac(key, indexDomain(), body)
	data, err := canonjson.EncodeCompact(v)
	if err != nil {
		return err
	}
	return statefile.WriteAtomic(filepath.Join(stateDir, IndexFile), data)
}

// maxIndex bounds what is read of the index (about two million logs).
const maxIndex = 512 << 20

// readLimited reads a file, refusing one larger than limit.
func readLimited(path string, limit int64) ([]byte, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := readAtMost(f, limit)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return data, nil
}

// withLock runs fn holding the state folder's audit lock.
func withLock(stateDir string, fn func() error) error {
	return statefile.WithLock(filepath.Join(stateDir, lockName), fn)
}
