package archive

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// File and folder modes: a conversation is private.
const (
	fileMode = 0o600
	dirMode  = 0o700
)

// tempPrefix starts the name of every temporary file a save writes; a file
// left behind by a crash is removed by the next save.
const tempPrefix = ".spbridge-tmp-"

// writeFileAtomic writes data to dir/name through a temporary file in dir
// that is synced and renamed over the old file, so a crash leaves the old or
// the new bytes. The caller syncs dir afterwards.
func writeFileAtomic(dir, name string, data []byte) (err error) {
	f, err := os.CreateTemp(dir, tempPrefix+name+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = f.Chmod(fileMode); err != nil {
		return err
	}
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, name))
}

// syncDir makes a folder's entries (renames, removals) durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
}

// readRegular reads a file only if it is a regular file, never following a
// symbolic link. It returns the file's stamp with the bytes.
func readRegular(path string) ([]byte, stamp, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, stamp{}, fmt.Errorf("%s is a symbolic link", path)
		}
		return nil, stamp{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, stamp{}, err
	}
	if !fi.Mode().IsRegular() {
		return nil, stamp{}, fmt.Errorf("%s is not a regular file", path)
	}
	data := make([]byte, fi.Size())
	n, err := readFull(f, data)
	if err != nil {
		return nil, stamp{}, err
	}
	if int64(n) != fi.Size() {
		return nil, stamp{}, fmt.Errorf("%s changed while read", path)
	}
	return data, stampOf(fi), nil
}

func readFull(f *os.File, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := f.Read(buf[n:])
		n += m
		if err != nil {
			if n == len(buf) {
				break
			}
			return n, err
		}
	}
	return n, nil
}

// stamp identifies one version of a file cheaply, so that a save can tell a
// file it wrote or verified is still as it left it.
type stamp struct {
	size  int64
	mtime time.Time
	ino   uint64
}

func stampOf(fi fs.FileInfo) stamp {
	s := stamp{size: fi.Size(), mtime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.ino = st.Ino
	}
	return s
}

// lstatStamp returns the stamp of a regular file at path, and false when
// there is none (missing, a link, or not a regular file).
func lstatStamp(path string) (stamp, bool) {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return stamp{}, false
	}
	return stampOf(fi), true
}

// ensureDir makes path a real folder with mode 0700: it creates it, or
// replaces a link or file that stands in its place.
func ensureDir(path string) (created bool, err error) {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return false, err
	case fi.IsDir():
		if fi.Mode().Perm() != dirMode {
			return false, os.Chmod(path, dirMode)
		}
		return false, nil
	default:
		if err := os.Remove(path); err != nil {
			return false, err
		}
	}
	if err := os.Mkdir(path, dirMode); err != nil {
		return false, err
	}
	return true, nil
}

func isTemp(name string) bool { return strings.HasPrefix(name, tempPrefix) }

// statFolder checks that dir is a folder (following a link to one), for
// the error of an operation op on it: "open package X: not a folder".
func statFolder(op, dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is named once, by op
		}
		return fmt.Errorf("%s %s: %w", op, dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s %s: %w", op, dir, ErrNotFolder)
	}
	return nil
}
