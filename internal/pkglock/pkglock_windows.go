package pkglock

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/windows"
)

var errNotDir = windows.ERROR_DIRECTORY

// fileLock is an exclusive LockFileEx on a lock file in the state folder:
// Windows cannot lock a folder, and nothing may be written into the package.
type fileLock struct{ f *os.File }

func lockOS(dir, locks, key string) (osLock, error) {
	if locks == "" {
		return nil, errors.New("no state folder to keep the lock in")
	}
	if err := os.MkdirAll(locks, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(locks, key+".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	ol := new(windows.Overlapped)
	err = windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol)
	if err == nil {
		return &fileLock{f: f}, nil
	}
	f.Close()
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) || errors.Is(err, windows.ERROR_IO_PENDING) {
		return nil, errWouldBlock
	}
	return nil, err
}

func (l *fileLock) unlock() error {
	ol := new(windows.Overlapped)
	uerr := windows.UnlockFileEx(windows.Handle(l.f.Fd()), 0, 1, 0, ol)
	cerr := l.f.Close()
	if uerr != nil {
		return uerr
	}
	return cerr
}

// ProcessAlive reports whether a process with this pid is still running
// (a lock's holder, a secret file's writer).
func ProcessAlive(pid int) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil {
		return false
	}
	const stillActive = 259
	return code == stillActive
}
