// Package audit keeps the tamper-evident record of every turn: one
// append-only JSON-lines file per conversation in the user's state folder,
// each record carrying its own SHA-256 and that of the record before it.
package audit

import (
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
	"strconv"

	"spbridge/internal/canonjson"
)

// StateDir returns spbridge's state folder: $SPBRIDGE_STATE_DIR, else
// $XDG_STATE_HOME/spbridge, else ~/.local/state/spbridge.
func StateDir() (string, error) {
	if d := os.Getenv("SPBRIDGE_STATE_DIR"); d != "" {
		return d, nil
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "spbridge"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the state folder: %w", err)
	}
	return filepath.Join(home, ".local", "state", "spbridge"), nil
}

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

// zeroHash is the "previous" hash of the first record.
var zeroHash = string(bytes.Repeat([]byte("0"), 64))

// Fields a record always has, set by Append.
const (
	FieldSeq    = "seq"
	FieldPrev   = "prev"
	FieldSHA256 = "sha256"
)

// Append adds record (a JSON object of the kinds canonjson encodes) to the
// log at path, creating it (0600, folders 0700) when needed. It sets the
// record's seq (1, 2, …), prev (the previous record's sha256) and sha256
// (of the record's canonical one-line encoding without sha256), writes it as
// one line with O_APPEND and syncs it, then records the new head beside the
// log so that removing the last records is caught too. A torn last line left
// by a crash is cut off first, and the record says how many bytes it had.
func Append(path string, record map[string]any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	defer f.Close()
	last, end, err := lastRecord(f)
	if err != nil {
		return fmt.Errorf("audit log %s: %w", path, err)
	}
	if size, err := f.Seek(0, io.SeekEnd); err == nil && size > end {
		if err := f.Truncate(end); err != nil {
			return fmt.Errorf("audit log %s: cut a torn line: %w", path, err)
		}
		record["tornBytesRemoved"] = size - end
	}
	seq, prev := int64(1), zeroHash
	if last != nil {
		n, err := last[FieldSeq].(json.Number).Int64()
		h, ok := last[FieldSHA256].(string)
		if err != nil || !ok {
			return fmt.Errorf("audit log %s: the last record has no seq or sha256", path)
		}
		seq, prev = n+1, h
	}
	record[FieldSeq] = json.Number(strconv.FormatInt(seq, 10))
	record[FieldPrev] = prev
	delete(record, FieldSHA256)
	sum, err := hashRecord(record)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	record[FieldSHA256] = sum
	line, err := canonjson.EncodeCompact(record)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("audit log %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("audit log %s: %w", path, err)
	}
	return writeHead(path, seq, sum)
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

// lastRecord returns the log's last whole record and the offset just after
// it (the length of the whole part of the file). It reads backwards from the
// end, so a long log costs no more than its last record.
func lastRecord(f *os.File) (map[string]any, int64, error) {
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
	v, err := canonjson.Decode(buf)
	rec, ok := v.(map[string]any)
	if err != nil || !ok {
		return nil, 0, fmt.Errorf("the last record is not a JSON object: run spbridge audit verify")
	}
	return rec, end + 1, nil
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

func writeHead(path string, seq int64, sum string) error {
	data, err := canonjson.EncodeCompact(map[string]any{"records": seq, "sha256": sum})
	if err != nil {
		return err
	}
	head := headPath(path)
	tmp := head + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("audit head: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("audit head: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("audit head: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("audit head: %w", err)
	}
	return os.Rename(tmp, head)
}
