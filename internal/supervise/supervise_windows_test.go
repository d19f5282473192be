package supervise

import (
	"os/exec"
	"syscall"
	"testing"

	"golang.org/x/sys/windows"
)

func TestJobLimits(t *testing.T) {
	info := jobLimits()
	if f := info.BasicLimitInformation.LimitFlags; f&windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE == 0 {
		t.Errorf("jobLimits().LimitFlags = %#x, want KILL_ON_JOB_CLOSE", f)
	}
}

func TestGroupAttr(t *testing.T) {
	if a := groupAttr(nil); a.CreationFlags != windows.CREATE_NEW_PROCESS_GROUP {
		t.Errorf("groupAttr(nil).CreationFlags = %#x, want CREATE_NEW_PROCESS_GROUP", a.CreationFlags)
	}
	in := &syscall.SysProcAttr{HideWindow: true, CreationFlags: windows.CREATE_NO_WINDOW}
	a := groupAttr(in)
	if a == in || !a.HideWindow || a.CreationFlags != windows.CREATE_NO_WINDOW|windows.CREATE_NEW_PROCESS_GROUP {
		t.Errorf("groupAttr(%+v) = %+v, want a copy adding CREATE_NEW_PROCESS_GROUP", in, a)
	}
	if in.CreationFlags != windows.CREATE_NO_WINDOW {
		t.Errorf("groupAttr changed its argument")
	}
}

func TestCommandRefusesCommandContext(t *testing.T) {
	cli := exec.Command("cmd.exe")
	cli.Cancel = func() error { return nil }
	if _, _, err := Command("", cli); err == nil {
		t.Errorf("Command(with Cancel) = nil error, want one")
	}
}
