//go:build !darwin && !windows

package statedir

import (
	"os"
	"path/filepath"
)

// defaultDir is $XDG_STATE_HOME/spbridge, else ~/.local/state/spbridge.
func defaultDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "spbridge"), nil
	}
	return homeJoin(".local", "state", "spbridge")
}
