package secretfile

import (
	"os"

	"golang.org/x/sys/windows"
)

// hold reports that f is not to be kept open: Windows renames and removes
// no file open without FILE_SHARE_DELETE, as Go opens them, and its locks
// are mandatory (a locked file could not be read by the CLI). Only the pid
// in a file's name tells whether its writer lives.
func hold(*os.File) bool { return false }

// held reports true: see hold.
func held(string) bool { return true }

// processAlive reports whether a process with this pid is still running
// (as internal/pkglock asks of a lock's holder).
func processAlive(pid int) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil {
		return false
	}
	const stillActive = 259
	return code == stillActive
}
