package claude

import (
	"os"
	"runtime"
	"testing"
)

// TestBypassAllowed: as root, Claude Code takes bypassPermissions only with
// IS_SANDBOX=1; any other value makes it exit at start, so the mode must
// not be offered (nor its flag passed).
func TestBypassAllowed(t *testing.T) {
	if runtime.GOOS == "windows" || os.Geteuid() != 0 {
		if !bypassAllowed([]string{"IS_SANDBOX=yes"}) {
			t.Error("not root: bypassPermissions not allowed")
		}
		t.Skip("the rest is about root")
	}
	for _, tc := range []struct {
		env  []string
		want bool
	}{
		{[]string{"IS_SANDBOX=1"}, true},
		{[]string{"IS_SANDBOX=yes"}, false},
		{[]string{"IS_SANDBOX=true"}, false},
		{[]string{"IS_SANDBOX="}, false},
		{[]string{"HOME=/root"}, false},
		{[]string{"IS_SANDBOX=1", "IS_SANDBOX=yes"}, false},
		{[]string{"IS_SANDBOX=yes", "IS_SANDBOX=1"}, true},
	} {
		if got := bypassAllowed(tc.env); got != tc.want {
			t.Errorf("bypassAllowed(%q) = %v, want %v", tc.env, got, tc.want)
		}
	}
}
