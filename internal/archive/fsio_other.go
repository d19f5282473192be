//go:build !unix

package archive

import "io/fs"

// openReadFlags adds nothing where opens do not block on special files.
const openReadFlags = 0

// inode is 0 where FileInfo carries no inode number; a stamp then rests on
// the size and modification time.
func inode(fs.FileInfo) uint64 { return 0 }
