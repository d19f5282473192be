//go:build unix

package secretfile

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// hold takes an exclusive flock(2) on f, held until f is closed, by this
// process alone (Go opens files close-on-exec, so no child inherits it),
// and reports that f is to be kept open. Where the file system has no
// locks, the pid in the file's name alone tells (held reports true).
func hold(f *os.File) bool {
	ignoringEINTR(func() error { return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) })
	return true
}

// held reports whether another open file holds the flock on path: its
// writer, which is alive. A file that cannot be opened or locked for
// another reason counts as held (it is kept).
func held(path string) bool {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return true
	}
	defer unix.Close(fd)
	err = ignoringEINTR(func() error { return unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) })
	return err != nil
}

// ignoringEINTR calls fn until it returns something other than EINTR.
func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
