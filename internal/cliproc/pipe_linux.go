package cliproc

import (
	"os"
	"syscall"
)

// pipeSize is the size spbridge asks for the pipe a program's output comes
// through: room for maxBatchSize and more, so that a program that writes
// fast is read in large reads. The system may refuse it (a limit of the
// user's); the pipe then keeps its size.
const pipeSize = 1 << 20

// GrowPipe asks for a pipe of pipeSize (1 MiB) when f is an end of a pipe
// (spbridge serve's output, when an editor reads it through one): a writer
// that writes in bursts then waits less for its reader. It does nothing
// when f is not a pipe or the system refuses.
func GrowPipe(f *os.File) {
	if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
		growPipe(f)
	}
}

// growPipe asks for pipeSize on the pipe f is an end of.
func growPipe(f *os.File) {
	if c, err := f.SyscallConn(); err == nil {
		c.Control(func(fd uintptr) {
			syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_SETPIPE_SZ, pipeSize)
		})
	}
}
