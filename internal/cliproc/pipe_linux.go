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

// growPipe asks for pipeSize on the pipe f is an end of.
func growPipe(f *os.File) {
	if c, err := f.SyscallConn(); err == nil {
		c.Control(func(fd uintptr) {
			syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_SETPIPE_SZ, pipeSize)
		})
	}
}
