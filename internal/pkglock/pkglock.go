// Package pkglock takes the advisory lock that lets one spbridge process at a
// time write a document package, and names the holder to whoever is refused.
//
// The lock itself is the operating system's: on Unix an exclusive flock(2) on
// the package folder (so nothing is written into the package, and the kernel
// drops the lock when the holder exits, however it exits); on Windows an
// exclusive LockFileEx on a lock file in the state folder. The holder is named
// by a record it writes in the state folder (locks/<key>.json, keyed by the
// package's real path): its pid and command line. The holder removes its
// record on release; a record left by a process that is gone is stale and
// ignored, and the next holder replaces it.
package pkglock

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"spbridge/internal/regfile"
	"spbridge/internal/statedir"
	"spbridge/internal/statefile"
)

// ErrLocked is matched (through errors.Is) by the error Acquire returns when
// another holder has the package's lock.
var ErrLocked = errors.New("package is in use")

// errWouldBlock is what an OS lock returns when another holder has it.
var errWouldBlock = errors.New("lock held")

// maxCommandLen bounds HeldError.Command in bytes, not counting the trailing
// "..." that marks a cut.
const maxCommandLen = 200

// Lock is a held lock on a package folder. Release it with Unlock. A Lock that
// is dropped without Unlock stays held until the process exits.
type Lock struct {
	mu     sync.Mutex
	os     osLock // nil once released
	path   string
	record string // the holder record this lock wrote, "" when none
}

// Acquire takes the exclusive lock on the package folder dir without
// waiting.
//
// When the lock is already held, by another process or through another
// Acquire in this one, Acquire returns a *HeldError naming the holder;
// errors.Is(err, ErrLocked) reports true for it. Any other failure, such as
// dir missing or not being a folder, returns an error that does not match
// ErrLocked. The holder record is written in the state folder
// (statedir.Dir); when there is none, the lock is taken all the same and a
// refused process is told only that another process holds it.
func Acquire(dir string) (*Lock, error) {
	key, real, err := packageKey(dir)
	if err != nil {
		return nil, fmt.Errorf("lock package %s: %w", dir, err)
	}
	locks := locksDir()
	l, err := lockOS(dir, locks, key)
	if errors.Is(err, errWouldBlock) {
		held := &HeldError{Path: dir}
		if locks != "" {
			if r, ok := readRecord(filepath.Join(locks, key+".json")); ok && r.PID > 0 && ProcessAlive(r.PID) {
				held.PID, held.Command = r.PID, r.Command
			}
		}
		return nil, held
	}
	if err != nil {
		return nil, fmt.Errorf("lock package %s: %w", dir, err)
	}
	lock := &Lock{os: l, path: dir}
	if locks != "" {
		path := filepath.Join(locks, key+".json")
		if writeRecord(locks, path, record{PID: os.Getpid(), Command: ownCommand(), Package: real, Since: time.Now().UTC().Format(time.RFC3339)}) == nil {
			lock.record = path
		}
	}
	return lock, nil
}

// Unlock removes the holder record, then releases the lock. It is safe to
// call more than once, and from several goroutines; calls after the first
// return nil.
func (l *Lock) Unlock() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.os == nil {
		return nil
	}
	if l.record != "" {
		// Only the holder writes the record, so while the lock is held it
		// is still ours.
		_ = os.Remove(l.record)
	}
	err := l.os.unlock()
	l.os = nil
	if err != nil {
		return fmt.Errorf("unlock package %s: %w", l.path, err)
	}
	return nil
}

// osLock is the operating system's lock, held until unlock.
type osLock interface {
	unlock() error
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

// record is what a holder writes about itself.
type record struct {
	PID     int    `json:"pid"`
	Command string `json:"command"`
	Package string `json:"package"`
	Since   string `json:"since"`
}

// maxRecord bounds what is read of a record file.
const maxRecord = 64 << 10

// locksDir is the folder of holder records, or "" when there is no state
// folder.
func locksDir() string {
	d, err := statedir.Dir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "locks")
}

// packageKey checks that dir is a folder and returns the key of its record,
// from its real path (links resolved, absolute; on Windows and macOS, whose
// usual file systems ignore case, folded to lower case), and that path.
func packageKey(dir string) (key, real string, err error) {
	fi, err := os.Stat(dir)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", "", err
	}
	if !fi.IsDir() {
		return "", "", errNotDir
	}
	real, err = filepath.EvalSymlinks(dir)
	if err != nil {
		return "", "", err
	}
	if real, err = filepath.Abs(real); err != nil {
		return "", "", err
	}
	k := real
	if runtime.GOOS == "windows" || runtime.GOOS == "darwin" {
		k = strings.ToLower(k)
	}
	sum := sha256.Sum256([]byte(k))
	return hex.EncodeToString(sum[:16]), real, nil
}

func readRecord(path string) (record, bool) {
	f, err := regfile.Open(path)
	if err != nil {
		return record{}, false
	}
	defer f.Close()
	data := make([]byte, maxRecord)
	n, _ := f.Read(data)
	var r record
	if json.Unmarshal(data[:n], &r) != nil {
		return record{}, false
	}
	return r, true
}

// writeRecord replaces the record at path (in dir) atomically, so a reader
// sees the old record or the new one. A stale record is simply replaced.
func writeRecord(dir, path string, r record) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return statefile.WriteAtomic(path, data)
}

// ownCommand is this process's command line, as a holder record names it.
func ownCommand() string { return formatCommand(os.Args) }

// formatCommand joins args with spaces, cut on a character boundary to at
// most maxCommandLen bytes followed by "..." when longer.
func formatCommand(args []string) string {
	s := strings.ToValidUTF8(strings.Join(args, " "), "\uFFFD")
	if len(s) <= maxCommandLen {
		return s
	}
	cut := maxCommandLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
