package acp

import (
	"io"
	"os"
	"runtime"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BenchmarkLatencyThreadFloorUnderLoad is the floor of
// BenchmarkLatencyFloorUnderLoad without Go's scheduler: the probe's CLI
// is read by a goroutine that keeps its thread and blocks in read(2)
// itself, so a line is taken as soon as the kernel runs that thread,
// without waiting for the poller or for a free P. The load keeps its two
// Ps (GOMAXPROCS is one more while it runs, the reader holding one). What
// it reports is the system's own delay from a pipe write to a reader under
// this load.
func BenchmarkLatencyThreadFloorUnderLoad(b *testing.B) {
	procs := runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 1)
	defer runtime.GOMAXPROCS(procs)
	latencyUnderLoad(b, &probeRead{wrap: func(f *os.File) io.Reader { return blockingReader(f.Fd()) }, locked: true})
}

// blockingReader reads a file descriptor made blocking (by Fd) with read(2)
// straight, not telling the runtime it blocks.
type blockingReader uintptr

func (r blockingReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, _, errno := unix.RawSyscall(unix.SYS_READ, uintptr(r), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	switch {
	case errno != 0:
		return 0, errno
	case n == 0:
		return 0, io.EOF
	}
	return int(n), nil
}
