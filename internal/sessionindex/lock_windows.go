package sessionindex

import (
	"os"

	"golang.org/x/sys/windows"
)

// lockFile takes an exclusive lock on f, waiting for it; closing f
// releases it.
func lockFile(f *os.File) error {
	var ol windows.Overlapped
	return windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, &ol)
}

// syncDir does nothing: Windows cannot sync a folder, and its renames are
// durable with the file.
func syncDir(string) error { return nil }
