//go:build unix

package archive

import (
	"io/fs"
	"syscall"
)

// openReadFlags keeps an open from blocking on a FIFO put in a file's place
// after it was checked to be a regular file.
const openReadFlags = syscall.O_NONBLOCK

// inode is the file's inode number, part of its stamp.
func inode(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
