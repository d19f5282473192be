//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly || solaris || illumos

package checkpoint

import (
	"io/fs"
	"syscall"
)

// openReadFlags keeps an open from blocking on a FIFO put in a file's place
// after it was checked to be a regular file.
const openReadFlags = syscall.O_NONBLOCK

// sysMeta is what the operating system tells of a file beyond its size,
// time and mode: its inode, device and change time.
func sysMeta(fi fs.FileInfo) (ino, dev uint64, ctime int64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		sec, nsec := ctimeOf(st)
		return uint64(st.Ino), uint64(st.Dev), sec*1e9 + nsec
	}
	return 0, 0, 0
}
