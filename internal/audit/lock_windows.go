//go:build windows

package audit

import (
	"os"

	"golang.org/x/sys/windows"
)

// errSyncDirUnsupported is what syncing a folder gives on Windows, where
// renames are durable without it.
var errSyncDirUnsupported error = windows.ERROR_ACCESS_DENIED

// lockFile takes an exclusive lock on f, waiting for it.
func lockFile(f *os.File) error {
	var ol windows.Overlapped
	return windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, &ol)
}
