package statefile

import (
	"os"

	"golang.org/x/sys/windows"
)

// lockFile takes an exclusive LockFileEx on f's first byte, waiting for it.
func lockFile(f *os.File) error {
	var ol windows.Overlapped
	return windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, &ol)
}

// SyncDir does nothing: Windows cannot sync a folder, and a rename is
// durable with its file.
func SyncDir(string) error { return nil }
