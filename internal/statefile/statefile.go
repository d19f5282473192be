// Package statefile keeps the small files of spbridge's state folder safe
// across crashes and processes: atomic replacement and an exclusive lock
// between processes.
package statefile

import (
	"fmt"
	"os"
	"path/filepath"

	"spbridge/internal/holdexit"
)

// WriteAtomic replaces path with data (mode 0600) through a synced
// temporary file in the same folder, renamed over it, then syncs the
// folder: a crash leaves the old file or the new one, whole.
func WriteAtomic(path string, data []byte) error {
	defer holdexit.Hold()() // a signal's exit waits for the rename
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o600)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// WithLock runs fn while holding an exclusive lock on the file lockPath
// (created 0600, its folder 0700, when missing), waiting for another
// process that holds it, and returns fn's error as it is. The lock is the
// operating system's, so it is released when its holder exits, however it
// exits. A lock that cannot be taken is an error naming lockPath.
func WithLock(lockPath string, fn func() error) error {
	if err := os.MkdirAll(filepath.Dir(lockPath), 0o700); err != nil {
		return fmt.Errorf("lock %s: %w", lockPath, err)
	}
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("lock %s: %w", lockPath, err)
	}
	defer f.Close() // closing releases the lock
	if err := lockFile(f); err != nil {
		return fmt.Errorf("lock %s: %w", lockPath, err)
	}
	return fn()
}
