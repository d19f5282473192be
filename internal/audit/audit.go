// Package audit keeps the tamper-evident record of every turn: one
// append-only JSON-lines file per conversation in the user's state folder,
// each record carrying its HMAC-SHA-256 under a per-user key and the tag of
// the record before it, with every log's head kept in a signed index.
package audit

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"spbridge/internal/canonjson"
	"spbridge/internal/statedir"
	"spbridge/internal/statefile"
)

// StateDir returns spbridge's state folder (statedir.Dir):
// $SPBRIDGE_STATE_DIR, else the operating system's per-user state folder
// ($XDG_STATE_HOME/spbridge or ~/.local/state/spbridge on Linux,
// ~/Library/Application Support/spbridge on macOS, %LocalAppData%\spbridge
// on Windows).
func StateDir() (string, error) { return statedir.Dir() }

// ErrIdentity is matched by the error of an identity that cannot name a log
// file.
var ErrIdentity = errors.New("not a conversation identity")

var identityRE = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z._-]{0,127}$`)

// Path returns the log file of the conversation with this identity (the id
// of its first item) under stateDir.
func Path(stateDir, identity string) (string, error) {
	if !identityRE.MatchString(identity) {
		return "", fmt.Errorf("%w: %q", ErrIdentity, identity)
	}
	return filepath.Join(stateDir, "audit", identity+".jsonl"), nil
}

// zeroHash is the "previous" tag of the first record.
var zeroHash = string(bytes.Repeat([]byte("0"), 64))

// Fields a record always has, set by Append.
const (
	FieldSeq  = "seq"
	FieldPrev = "prev"
	// FieldHMAC is the record's HMAC-SHA-256 under the user's audit key.
	FieldHMAC = "hmac"
	// FieldSHA256 is the plain SHA-256 that records written by earlier
	// versions carry instead of an hmac; Append no longer writes it.
	FieldSHA256 = "sha256"
)

// stateOf returns the state folder and the identity of the log at path
// (stateDir/audit/identity.jsonl, as Path makes it).
func stateOf(path string) (stateDir, identity string) {
	return filepath.Dir(filepath.Dir(path)), strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
}

// recordDomain keeps a record's tag from standing for anything else, and
// binds it to its log: a record moved to another log does not verify.
func recordDomain(identity string) string { return "spbridge audit record\x00" + identity }

// recordMAC is the record's hmac: HMAC-SHA-256 under key of its canonical
// one-line encoding without its hmac and sha256 fields, bound to the log's
// identity.
func recordMAC(key []byte, identity string, record map[string]any) (string, error) {
	r := make(map[string]any, len(record))
	for k, v := range record {
		if k != FieldSHA256 && k != FieldHMAC {
			r[k] = v
		}
	}
	data, err := canonjson.EncodeCompact(r)
	if err != nil {
		return "", err
	}
	return mac(key, recordDomain(identity), data), nil
}

// tagOf is a record's tag: its hmac, or the sha256 of an older record.
func tagOf(rec map[string]any) string {
	if t, ok := rec[FieldHMAC].(string); ok {
		return t
	}
	t, _ := rec[FieldSHA256].(string)
	return t
}

// Append adds record (a JSON object of the kinds canonjson encodes) to the
// log at path (as Path names it), creating it (0600, folders 0700) when
// needed. It sets the record's seq (1, 2, …), prev (the previous record's
// tag) and hmac (HMAC-SHA-256 under the user's audit key, made on first use
// in the state folder, of the record's canonical one-line encoding without
// hmac, bound to the log's identity), writes it as one line with O_APPEND
// and syncs it, then records the new head beside the log and in the
// state folder's index, so that removing the last records, or the whole log
// with its head, is caught too. A torn last line left by a crash is cut off
// first, and the record says how many bytes it had. A log shorter than the
// index counted (deleted or cut) is noted in the index for good, so that
// appending to it does not hide the loss. Appends of every process are
// serialised by a lock in the state folder.
func Append(path string, record map[string]any) error {
	delete(record, FieldSHA256)
	delete(record, FieldHMAC)
	p, err := prepare(path, record)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	appendMu.Lock()
	defer appendMu.Unlock()
	err = withLock(p.stateDir, func() error { return appendLocked(p.stateDir, []*prepared{p}) })
	if err == nil {
		err = p.err
	}
	if err != nil {
		return err
	}
	record[FieldSeq] = json.Number(strconv.FormatInt(p.seq, 10))
	record[FieldPrev] = p.prev
	record[FieldHMAC] = p.tag
	if p.torn > 0 {
		record[FieldTorn] = json.Number(strconv.FormatInt(p.torn, 10))
	}
	return nil
}

// FieldTorn is set on the record appended after a torn last line was cut
// off: the bytes it had.
const FieldTorn = "tornBytesRemoved"

// appendMu serialises this process's appends (the state folder's lock
// serialises those of every process), and guards the cache.
var appendMu sync.Mutex

// prepared is a record encoded ahead of its append: every member but those
// the append sets (seq, prev, hmac, tornBytesRemoved), each as its key and
// its value's canonical one-line encoding (in pieces held in chunks of
// chunkSize bytes taken from a pool and given back once the record is
// written, so that a large record needs no large buffer and a record
// leaves no garbage), keys sorted. It also carries what the append gave
// it.
type prepared struct {
	path, stateDir, identity string
	pkg                      string // its "package" member, "" when none
	keys                     []string
	vals                     [][][]byte
	chunks                   []*[]byte // what vals are in

	// Set by the append.
	seq  int64
	prev string
	tag  string
	torn int64
	err  error // this record's log could not be appended to
}

// chunkSize is the size of the chunks a record's encoding is kept in.
const chunkSize = 64 << 10

var chunks = sync.Pool{New: func() any { b := make([]byte, 0, chunkSize); return &b }}

// valueWriter gathers a value's encoding in p's chunks.
type valueWriter struct {
	p     *prepared
	parts [][]byte
	last  *[]byte // the chunk the last part is in
	from  int     // where the last part begins in it
}

func (v *valueWriter) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		var c *[]byte
		if k := len(v.p.chunks); k > 0 && len(*v.p.chunks[k-1]) < chunkSize {
			c = v.p.chunks[k-1]
		} else {
			c = chunks.Get().(*[]byte)
			*c = (*c)[:0]
			v.p.chunks = append(v.p.chunks, c)
		}
		start := len(*c)
		k := min(chunkSize-start, len(b))
		*c = append(*c, b[:k]...)
		b = b[k:]
		// A part that goes on where the last one ended grows it.
		if i := len(v.parts) - 1; i >= 0 && v.last == c && v.from+len(v.parts[i]) == start {
			v.parts[i] = (*c)[v.from : start+k : start+k]
		} else {
			v.parts = append(v.parts, (*c)[start:start+k:start+k])
			v.last, v.from = c, start
		}
	}
	return n, nil
}

// release gives p's chunks back: its encoding is gone.
func (p *prepared) release() {
	for _, c := range p.chunks {
		chunks.Put(c)
	}
	p.keys, p.vals, p.chunks = nil, nil, nil
}

// prepare encodes record for the log at path.
func prepare(path string, record map[string]any) (*prepared, error) {
	stateDir, identity := stateOf(path)
	p := &prepared{path: path, stateDir: stateDir, identity: identity}
	p.pkg, _ = record[FieldPackage].(string)
	for k := range record {
		switch k {
		case FieldSeq, FieldPrev, FieldHMAC, FieldSHA256, FieldTorn:
			continue
		}
		p.keys = append(p.keys, k)
	}
	slices.Sort(p.keys)
	p.vals = make([][][]byte, len(p.keys))
	for i, k := range p.keys {
		val := valueWriter{p: p}
		if err := canonjson.WriteCompact(&val, record[k]); err != nil {
			p.release()
			return nil, err
		}
		p.vals[i] = val.parts
	}
	return p, nil
}

// members calls fn with each member of the record's canonical one-line
// encoding, in order: the prepared ones with seq, prev and (when torn)
// tornBytesRemoved among them, and hmac too when withTag.
func (p *prepared) members(withTag bool, fn func(key string, val [][]byte)) {
	type member struct {
		key string
		val [][]byte
	}
	one := func(b []byte) [][]byte { return [][]byte{b} }
	extra := []member{{FieldPrev, one(canonjson.AppendString(nil, p.prev))}, {FieldSeq, one(strconv.AppendInt(nil, p.seq, 10))}}
	if withTag {
		extra = append(extra, member{FieldHMAC, one(canonjson.AppendString(nil, p.tag))})
	}
	if p.torn > 0 {
		extra = append(extra, member{FieldTorn, one(strconv.AppendInt(nil, p.torn, 10))})
	}
	slices.SortFunc(extra, func(a, b member) int { return strings.Compare(a.key, b.key) })
	i := 0
	for _, m := range extra {
		for ; i < len(p.keys) && p.keys[i] < m.key; i++ {
			fn(p.keys[i], p.vals[i])
		}
		fn(m.key, m.val)
	}
	for ; i < len(p.keys); i++ {
		fn(p.keys[i], p.vals[i])
	}
}

// encode writes the record's canonical one-line encoding to w, with the
// hmac when withTag, and returns w's first error.
func (p *prepared) encode(w io.Writer, withTag bool) error {
	var err error
	put := func(b []byte) {
		if err == nil {
			_, err = w.Write(b)
		}
	}
	var head []byte
	n := 0
	p.members(withTag, func(key string, val [][]byte) {
		head = head[:0]
		if n == 0 {
			head = append(head, '{')
		} else {
			head = append(head, ',')
		}
		n++
		head = append(canonjson.AppendString(head, key), ':')
		put(head)
		for _, b := range val {
			put(b)
		}
	})
	if n == 0 {
		put([]byte("{}"))
	} else {
		put([]byte("}"))
	}
	return err
}

// line is the record's line (with its hmac) without the newline.
func (p *prepared) line() []byte {
	var b bytes.Buffer
	p.encode(&b, true)
	return b.Bytes()
}

// appendLocked appends records, in order, to their logs (all under
// stateDir), each log's in one write and one sync, then updates each log's
// head and the index once. A record whose log could not be written has its
// err set; the error returned is one that stopped everything (the key, the
// index). The state folder's lock and appendMu are held.
func appendLocked(stateDir string, recs []*prepared) (err error) {
	dc := cacheOf(stateDir)
	defer func() {
		if err != nil {
			dc.forget()
		}
	}()
	key, err := dc.loadKey()
	if err != nil {
		return err
	}
	ix, err := dc.readIndex(key)
	if err != nil {
		return err
	}
	changed := false
	for len(recs) > 0 {
		n := 1
		for n < len(recs) && recs[n].path == recs[0].path {
			n++
		}
		group := recs[:n]
		recs = recs[n:]
		if err := appendLog(dc, ix, key, group); err != nil {
			dc.forgetLog(group[0].path)
			for _, p := range group {
				p.err = err
			}
		}
		changed = true
	}
	if !changed {
		return nil
	}
	return dc.writeIndex(ix, key)
}

// appendLog appends recs (all of one log) and writes the log's head; it
// updates the log's entry in ix.
func appendLog(dc *dirCache, ix *index, key []byte, recs []*prepared) error {
	path, identity := recs[0].path, recs[0].identity
	now := time.Now().UTC().Format(time.RFC3339)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("audit log %s: %w", path, err)
	}
	last, end, ok := dc.lastOf(path, fi)
	if !ok {
		if last, end, err = lastRecord(f); err != nil {
			return fmt.Errorf("audit log %s: %w", path, err)
		}
	}
	if size := fi.Size(); size > end {
		if err := f.Truncate(end); err != nil {
			return fmt.Errorf("audit log %s: cut a torn line: %w", path, err)
		}
		recs[0].torn = size - end
	}
	seq, prev := int64(1), zeroHash
	if last != nil {
		if last.seq <= 0 || last.tag == "" {
			return fmt.Errorf("audit log %s: the last record has no seq or tag", path)
		}
		seq, prev = last.seq+1, last.tag
	}
	e := ix.logs[identity]
	if e == nil {
		e = &entry{}
		ix.logs[identity] = e
	}
	if e.records > seq-1 {
		e.lost = append(e.lost, map[string]any{"time": now, "indexed": json.Number(strconv.FormatInt(e.records, 10)),
			"found": json.Number(strconv.FormatInt(seq-1, 10)), "last": e.last})
		e.keyedFrom = 0
	}
	first := seq
	// Each record goes to the file through a small buffer, its members as
	// they were prepared: no copy of a whole record is made.
	if dc.bw == nil {
		dc.bw = bufio.NewWriterSize(f, 64<<10)
	}
	dc.bw.Reset(f)
	defer dc.bw.Reset(nil)
	out := &countingWriter{w: dc.bw}
	for _, p := range recs {
		p.seq, p.prev = seq, prev
		m := newMAC(key, recordDomain(identity))
		p.encode(m, false)
		p.tag = hex.EncodeToString(m.Sum(nil))
		p.encode(out, true)
		out.Write([]byte{'\n'})
		p.release() // written: the encoding can go
		seq, prev = seq+1, p.tag
	}
	seq--
	if err := out.flush(); err != nil {
		return fmt.Errorf("audit log %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("audit log %s: %w", path, err)
	}
	dc.setLast(path, fi, end+out.n, &lastInfo{seq: seq, tag: prev})
	if err := writeHead(path, seq, prev); err != nil {
		return err
	}
	e.records, e.last = seq, prev
	if p := recs[len(recs)-1]; p.pkg != "" {
		e.pkg = p.pkg
	}
	if e.keyedFrom == 0 || e.keyedFrom > first {
		e.keyedFrom = first
	}
	return nil
}

// readAtMost reads r to its end, refusing more than limit bytes.
func readAtMost(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return data, nil
}

// hashRecord is the SHA-256 of the record's canonical one-line encoding
// without its sha256 field.
func hashRecord(record map[string]any) (string, error) {
	r := make(map[string]any, len(record))
	for k, v := range record {
		if k != FieldSHA256 {
			r[k] = v
		}
	}
	data, err := canonjson.EncodeCompact(r)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// countingWriter counts what goes through a bufio.Writer and keeps its
// first error.
type countingWriter struct {
	w   *bufio.Writer
	n   int64
	err error
}

func (c *countingWriter) Write(b []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(b)
	c.n += int64(n)
	c.err = err
	return n, err
}

// flush writes what the buffer holds and returns the first error.
func (c *countingWriter) flush() error {
	if c.err == nil {
		c.err = c.w.Flush()
	}
	return c.err
}

// lastInfo is what Append needs of the log's last record.
type lastInfo struct {
	seq int64
	tag string // its hmac, or the sha256 of an older record
}

// lastRecord returns the seq and tag of the log's last whole record and the
// offset just after it (the length of the whole part of the file). It reads
// backwards from the end, so a long log costs no more than its last record,
// and reads only those two fields of it.
func lastRecord(f *os.File) (*lastInfo, int64, error) {
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil || size == 0 {
		return nil, 0, err
	}
	// Find the last newline: the whole part ends there.
	end, err := lastNewline(f, size)
	if err != nil {
		return nil, 0, err
	}
	if end < 0 {
		return nil, 0, nil // only a torn line
	}
	start, err := lastNewline(f, end)
	if err != nil {
		return nil, 0, err
	}
	buf := make([]byte, end-(start+1))
	if _, err := f.ReadAt(buf, start+1); err != nil {
		return nil, 0, err
	}
	if !utf8.Valid(buf) || !gjson.ValidBytes(buf) || !gjson.ParseBytes(buf).IsObject() {
		return nil, 0, fmt.Errorf("the last record is not a JSON object: run spbridge audit verify")
	}
	var info lastInfo
	fields := gjson.GetManyBytes(buf, FieldSeq, FieldHMAC, FieldSHA256)
	if fields[0].Type == gjson.Number {
		info.seq, _ = json.Number(fields[0].Raw).Int64()
	}
	switch {
	case fields[1].Type == gjson.String:
		info.tag = fields[1].String()
	case fields[2].Type == gjson.String:
		info.tag = fields[2].String()
	}
	return &info, end + 1, nil
}

// lastNewline returns the offset of the last '\n' before offset before, or
// -1.
func lastNewline(f *os.File, before int64) (int64, error) {
	const chunk = 64 << 10
	buf := make([]byte, chunk)
	for pos := before; pos > 0; {
		n := int64(chunk)
		if pos < n {
			n = pos
		}
		pos -= n
		if _, err := f.ReadAt(buf[:n], pos); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return pos + int64(i), nil
		}
	}
	return -1, nil
}

// headPath is where the log's head (its record count and last hash) is kept.
func headPath(path string) string { return path[:len(path)-len(filepath.Ext(path))] + ".head" }

func writeHead(path string, seq int64, tag string) error {
	data, err := canonjson.EncodeCompact(map[string]any{"records": seq, "last": tag})
	if err != nil {
		return err
	}
	if err := statefile.WriteAtomic(headPath(path), data); err != nil {
		return fmt.Errorf("audit head: %w", err)
	}
	return nil
}
