package audit

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path/filepath"

	"spbridge/internal/regfile"
	"spbridge/internal/statefile"
)

// KeyFile is the name of the audit key in the state folder, beside (not
// inside) the folder of the logs.
const KeyFile = "audit.key"

// ErrNoKey is matched by the error of a state folder without an audit key.
var ErrNoKey = errors.New("no audit key")

// keySize is the key's length in bytes (before its hex encoding).
const keySize = 32

// loadKey reads the audit key of stateDir. With create, a missing key is
// made: 32 random bytes, hex, written 0600 to a temporary file and linked
// into place, so that a key is never seen half written and never
// overwritten (a key that appeared meanwhile wins).
func loadKey(stateDir string, create bool) ([]byte, error) {
	path := filepath.Join(stateDir, KeyFile)
	key, err := readKey(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) || !create {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s", ErrNoKey, path)
		}
		return key, err
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("audit key: %w", err)
	}
	raw := make([]byte, keySize)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("audit key: %w", err)
	}
	f, err := os.CreateTemp(stateDir, ".audit.key.*")
	if err != nil {
		return nil, fmt.Errorf("audit key: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, err = f.Write([]byte(hex.EncodeToString(raw) + "\n"))
	if err == nil {
		err = f.Chmod(0o600)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("audit key: %w", err)
	}
	// link fails when the name exists: an existing key is never replaced.
	if err := os.Link(tmp, path); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("audit key: %w", err)
	}
	if err := statefile.SyncDir(stateDir); err != nil {
		return nil, fmt.Errorf("audit key: %w", err)
	}
	return readKey(path)
}

func readKey(path string) ([]byte, error) {
	data, err := regfile.ReadFile(path)
	if err != nil {
		return nil, err
	}
	key, err := hex.DecodeString(string(bytes.TrimSpace(data)))
	if err != nil || len(key) != keySize {
		return nil, fmt.Errorf("audit key %s: not %d bytes of hex", path, keySize)
	}
	return key, nil
}

// mac is the HMAC-SHA-256 under key of a domain (what is signed, so that a
// tag of one kind cannot stand for another) and data, in hex.
func mac(key []byte, domain string, data []byte) string {
	m := newMAC(key, domain)
	m.Write(data)
	return hex.EncodeToString(m.Sum(nil))
}

// newMAC returns the HMAC-SHA-256 under key of domain and what is written
// to it next (see mac).
func newMAC(key []byte, domain string) hash.Hash {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(domain))
	m.Write([]byte{0})
	return m
}
