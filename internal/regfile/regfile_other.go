//go:build !unix

package regfile

import "os"

// open opens path for reading; where opens do not wait on special files,
// a plain open is enough (Open checks what it opened).
func open(path string) (*os.File, error) { return os.Open(path) }
