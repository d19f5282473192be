//go:build linux || solaris || illumos

package checkpoint

import "syscall"

func ctimeOf(st *syscall.Stat_t) (sec, nsec int64) { return int64(st.Ctim.Sec), int64(st.Ctim.Nsec) }
