package testbin

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	code := m.Run()
	Cleanup()
	os.Exit(code)
}

// TestHelper: the helper is this package's test binary (it lists this
// test), a copy built without the race detector when this one has it, and
// the same path each time.
func TestHelper(t *testing.T) {
	h := Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if raceEnabled == (h == self) {
		t.Errorf("Helper() = %q, this binary %q, race detector %v", h, self, raceEnabled)
	}
	if h2 := Helper(); h2 != h {
		t.Errorf("Helper() = %q, then %q", h, h2)
	}
	out, err := exec.Command(h, "-test.list", "^TestHelper$").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "TestHelper" {
		t.Errorf("%s -test.list: %q, %v", h, out, err)
	}
}
