// Package pkglock takes the advisory lock that lets one spbridge process at a
// time write a document package.
//
// The lock is an exclusive flock(2) on the package folder itself, so taking it
// leaves no file behind in the package. The kernel drops it when the holding
// process exits, however it exits, so a crash never leaves a stale lock.
package pkglock

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// ErrLocked is matched (through errors.Is) by the error Acquire returns when
// another holder has the package's lock.
var ErrLocked = errors.New("package is in use")

// maxCommandLen bounds HeldError.Command in bytes, not counting the trailing
// "..." that marks a cut.
const maxCommandLen = 200

// Lock is a held lock on a package folder. Release it with Unlock. A Lock that
// is dropped without Unlock stays held until the process exits.
type Lock struct {
	mu   sync.Mutex
	fd   int // -1 once released
	path string
}

// Acquire takes an exclusive, non-blocking flock(2) on the package folder dir
// itself (opened O_RDONLY|O_DIRECTORY|O_CLOEXEC), so no file is left in the
// package.
//
// When the lock is already held, by another process or through another
// Acquire in this one (flock locks belong to open file descriptions, not to
// processes), Acquire returns a *HeldError naming the holder; errors.Is(err,
// ErrLocked) reports true for it. Any other failure, such as dir missing or
// not being a folder, returns an error that does not match ErrLocked.
func Acquire(dir string) (*Lock, error) {
	fd, err := openDir(dir)
	if err != nil {
		return nil, fmt.Errorf("lock package %s: %w", dir, err)
	}
	err = ignoringEINTR(func() error { return unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) })
	if err == nil {
		return &Lock{fd: fd, path: dir}, nil
	}
	defer unix.Close(fd)
	if errors.Is(err, unix.EWOULDBLOCK) {
		held := &HeldError{Path: dir}
		held.PID, held.Command = findHolder(fd)
		return nil, held
	}
	return nil, fmt.Errorf("lock package %s: %w", dir, err)
}

// Unlock releases the lock and closes the folder. It is safe to call more than
// once, and from several goroutines; calls after the first return nil.
func (l *Lock) Unlock() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fd < 0 {
		return nil
	}
	fd := l.fd
	l.fd = -1
	// Closing the only descriptor of the open file description releases the
	// lock anyway; the explicit LOCK_UN also covers a descriptor that was
	// somehow duplicated.
	uerr := ignoringEINTR(func() error { return unix.Flock(fd, unix.LOCK_UN) })
	cerr := unix.Close(fd)
	if uerr != nil {
		return fmt.Errorf("unlock package %s: %w", l.path, uerr)
	}
	if cerr != nil {
		return fmt.Errorf("unlock package %s: %w", l.path, cerr)
	}
	return nil
}

// HeldError reports who holds a package's lock. Its fields describe the holder
// as seen at the moment Acquire failed; the holder may have gone since.
type HeldError struct {
	Path    string // the package folder, as passed to Acquire
	PID     int    // the holder's pid when it could be found, else 0
	Command string // the holder's command line, args joined with spaces and cut to about 200 bytes, "" if unknown
}

// Error describes the holder, for example
// "package /x/Poster.silverpoint is in use by pid 1234 (spbridge serve)", or
// "package /x is in use by another process" when the holder is unknown.
func (e *HeldError) Error() string {
	switch {
	case e.PID <= 0:
		return fmt.Sprintf("package %s is in use by another process", e.Path)
	case e.Command == "":
		return fmt.Sprintf("package %s is in use by pid %d", e.Path, e.PID)
	default:
		return fmt.Sprintf("package %s is in use by pid %d (%s)", e.Path, e.PID, e.Command)
	}
}

// Is reports whether target is ErrLocked.
func (e *HeldError) Is(target error) bool { return target == ErrLocked }

// openDir opens dir as a folder for locking. A path that exists but is not a
// folder yields ENOTDIR.
func openDir(dir string) (int, error) {
	var fd int
	err := ignoringEINTR(func() error {
		var err error
		fd, err = unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return err
	})
	return fd, err
}

// ignoringEINTR calls fn until it returns something other than EINTR.
func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// findHolder returns the pid and command line of the process holding the
// flock on the file open as fd, or 0 and "" when they cannot be found.
func findHolder(fd int) (pid int, command string) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, ""
	}
	f, err := os.Open("/proc/locks")
	if err != nil {
		return 0, ""
	}
	defer f.Close()
	dev := uint64(st.Dev) // Dev is uint32 on some platforms.
	pid = flockHolder(f, unix.Major(dev), unix.Minor(dev), uint64(st.Ino))
	if pid <= 0 {
		return 0, ""
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return pid, ""
	}
	return pid, formatCmdline(cmdline)
}

// flockHolder scans r, in the format of /proc/locks, for the granted FLOCK
// WRITE lock on the inode ino of device major:minor, and returns its pid, or 0
// when there is none. Lines of waiters (marked "->"), other lock kinds and
// malformed lines are skipped.
//
// A line looks like "1: FLOCK  ADVISORY  WRITE 12345 fd:01:5678901 0 EOF",
// where the device numbers are hexadecimal and the inode is decimal.
func flockHolder(r io.Reader, major, minor uint32, ino uint64) int {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || !strings.HasSuffix(f[0], ":") || f[1] == "->" {
			continue
		}
		if f[1] != "FLOCK" || f[3] != "WRITE" {
			continue
		}
		id := strings.Split(f[5], ":")
		if len(id) != 3 {
			continue
		}
		maj, err1 := strconv.ParseUint(id[0], 16, 32)
		mnr, err2 := strconv.ParseUint(id[1], 16, 32)
		in, err3 := strconv.ParseUint(id[2], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		if uint32(maj) != major || uint32(mnr) != minor || in != ino {
			continue
		}
		// The pid is 0 or -1 when the holder is outside our pid namespace.
		pid, err := strconv.Atoi(f[4])
		if err != nil || pid <= 0 {
			return 0
		}
		return pid
	}
	return 0
}

// formatCmdline turns the contents of /proc/PID/cmdline (NUL-terminated
// arguments) into the arguments joined with spaces, cut on a character
// boundary to at most maxCommandLen bytes followed by "..." when longer.
func formatCmdline(b []byte) string {
	b = bytes.TrimRight(b, "\x00")
	s := strings.ReplaceAll(string(b), "\x00", " ")
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= maxCommandLen {
		return s
	}
	cut := maxCommandLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
