// Package secretfile keeps the files that hand secrets to a CLI (the
// editor's MCP servers with their env and headers) where no crash leaves
// them for good: in the state folder's run folder (0700), each file (0600)
// named by the pid of the spbridge process that wrote it, which removes it
// as soon as the CLI has read it. The files of a process that is gone (one
// killed with SIGKILL before its CLI read them) are removed by the next
// spbridge that starts (Sweep).
package secretfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"spbridge/internal/pkglock"
	"strconv"
	"strings"
	"sync"
)

// Folder is the folder of the state folder that holds the files.
const Folder = "run"

// File is one file written by Write. On Unix its writer holds it (an
// exclusive flock on it) until Remove, so that Sweep tells it from the file
// of a process that is gone even when that process's pid is used again.
type File struct {
	// Path is the file's path, to give to the CLI.
	Path string

	once sync.Once
	f    *os.File // the held file, nil where it is not held
	err  error
}

// Write writes data to a new file in stateDir's run folder whose name
// begins with this process's pid and ends with name. The file is written
// under a name that begins with a dot and renamed once whole, so a CLI is
// never given half of it.
func Write(stateDir, name string, data []byte) (*File, error) {
	dir := filepath.Join(stateDir, Folder)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("secret file: %w", err)
	}
	// A folder made by someone else, or before, is made private.
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("secret file: %w", err)
	}
	var r [8]byte
	rand.Read(r[:])
	base := strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(r[:]) + "-" + name
	path := filepath.Join(dir, base)
	tmp := filepath.Join(dir, "."+base)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("secret file: %w", err)
	}
	fail := func(err error) (*File, error) {
		if f != nil {
			f.Close()
		}
		os.Remove(tmp)
		return nil, fmt.Errorf("secret file %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if !hold(f) {
		err := f.Close()
		f = nil
		if err != nil {
			return fail(err)
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return fail(err)
	}
	return &File{Path: path, f: f}, nil
}

// Remove removes the file; calls after the first return the first's
// error. A file already gone is no error.
func (sf *File) Remove() error {
	sf.once.Do(func() {
		var cerr error
		if sf.f != nil {
			cerr = sf.f.Close()
		}
		err := os.Remove(sf.Path)
		if errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
		sf.err = errors.Join(err, cerr)
	})
	return sf.err
}

// Sweep removes the files in stateDir's run folder whose process is gone:
// no process has its pid, or (on Unix) nobody holds the file, as its
// writer does until it removes it. It returns how many it removed; a
// missing folder is no error.
func Sweep(stateDir string) (int, error) {
	dir := filepath.Join(stateDir, Folder)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sweep %s: %w", dir, err)
	}
	self := os.Getpid()
	removed := 0
	var errs []error
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		name, whole := strings.CutPrefix(e.Name(), ".")
		whole = !whole
		pid, ok := pidOf(name)
		if !ok || pid == self {
			continue
		}
		path := filepath.Join(dir, e.Name())
		// A file still being written (its name begins with a dot) is not
		// held yet: only its pid tells.
		if pkglock.ProcessAlive(pid) && (!whole || held(path)) {
			continue
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	return removed, errors.Join(errs...)
}

// pidOf reads the pid a file's name begins with ("1234-…").
func pidOf(name string) (int, bool) {
	s, _, ok := strings.Cut(name, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(s)
	return pid, err == nil && pid > 0
}
