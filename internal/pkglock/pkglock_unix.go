//go:build unix

package pkglock

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

var errNotDir = syscall.ENOTDIR

// flockLock is an exclusive flock(2) on the package folder itself.
type flockLock struct{ fd int }

// lockOS takes an exclusive, non-blocking flock(2) on the package folder dir
// (opened O_RDONLY|O_DIRECTORY|O_CLOEXEC), so no file is left in the package.
// flock locks belong to open file descriptions, so a second Acquire in the
// same process is refused like another process's.
func lockOS(dir, _, _ string) (osLock, error) {
	var fd int
	err := ignoringEINTR(func() error {
		var err error
		fd, err = unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, err
	}
	err = ignoringEINTR(func() error { return unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) })
	if err == nil {
		return &flockLock{fd: fd}, nil
	}
	unix.Close(fd)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return nil, errWouldBlock
	}
	return nil, err
}

func (l *flockLock) unlock() error {
	// Closing the only descriptor of the open file description releases the
	// lock anyway; the explicit LOCK_UN also covers a descriptor that was
	// somehow duplicated.
	uerr := ignoringEINTR(func() error { return unix.Flock(l.fd, unix.LOCK_UN) })
	cerr := unix.Close(l.fd)
	if uerr != nil {
		return uerr
	}
	return cerr
}

// ignoringEINTR calls fn until it returns something other than EINTR.
func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// ProcessAlive reports whether a process with this pid exists (a lock's
// holder, a secret file's writer).
func ProcessAlive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}
