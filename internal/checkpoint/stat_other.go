//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly || solaris || illumos)

package checkpoint

import "io/fs"

// openReadFlags adds nothing where opens do not block on special files.
const openReadFlags = 0

// sysMeta is zero where FileInfo carries no inode, device or change time:
// a file's record then rests on its size, modification time and mode.
func sysMeta(fs.FileInfo) (ino, dev uint64, ctime int64) { return 0, 0, 0 }
