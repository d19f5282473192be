//go:build unix

package main

import (
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// catchSIGPIPE makes a write to a client that went away (its pipe or
// socket closed, on standard output or on standard error) fail with EPIPE
// instead of killing serve: Go's runtime ends a program by SIGPIPE on such
// a write to file descriptor 1 or 2 unless the program is notified of
// SIGPIPE. Serve takes a failed output as the end of its client and shuts
// down as when its input ends; a log line that cannot be written is lost.
// Notified rather than ignored, so that the CLIs serve starts get SIGPIPE's
// default action as usual (an ignored signal stays ignored across exec).
func catchSIGPIPE() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
}

// pollableOutput returns serve's output f as a file that Go's poller
// drives, when f is a pipe or a socket: a copy of its descriptor in
// non-blocking mode, so that a write the client does not take can be given
// up at shutdown (a write deadline) rather than hold the session that
// wrote, and the shutdown, forever. restore puts the pipe back in blocking
// mode: the mode belongs to the pipe, which the program that started serve
// may share. Any other f is returned as it is, and so is a pipe or socket
// that is also standard input or standard error (socat's EXEC gives one
// socket for both input and output; 2>&1), whose reads and writes
// elsewhere expect blocking mode: internal/acp then writes from a
// goroutine of its own, which it can leave behind.
func pollableOutput(f *os.File) (out io.Writer, restore func()) {
	restore = func() {}
	rc, err := f.SyscallConn()
	if err != nil {
		return f, restore
	}
	fd := -1
	rc.Control(func(u uintptr) {
		var st unix.Stat_t
		if unix.Fstat(int(u), &st) != nil {
			return
		}
		if t := st.Mode & unix.S_IFMT; t != unix.S_IFIFO && t != unix.S_IFSOCK {
			return
		}
		for _, other := range []int{0, 2} {
			var o unix.Stat_t
			if other != int(u) && unix.Fstat(other, &o) == nil && o.Dev == st.Dev && o.Ino == st.Ino {
				return
			}
		}
		if d, err := unix.FcntlInt(u, unix.F_DUPFD_CLOEXEC, 0); err == nil {
			fd = d
		}
	})
	if fd < 0 {
		return f, restore
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return f, restore
	}
	return os.NewFile(uintptr(fd), f.Name()), func() {
		rc.Control(func(u uintptr) { unix.SetNonblock(int(u), false) })
	}
}
