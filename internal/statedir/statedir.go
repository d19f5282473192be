// Package statedir finds spbridge's per-user state folder, where the audit
// logs, the package-lock records and editor-less sessions live.
package statedir

import (
	"fmt"
	"os"
	"path/filepath"
)

// EnvVar names the environment variable that overrides the state folder.
const EnvVar = "SPBRIDGE_STATE_DIR"

// Dir returns the state folder: $SPBRIDGE_STATE_DIR when set, else the
// operating system's place for per-user application state (see
// defaultDir in the file for each OS). The folder may not exist yet.
func Dir() (string, error) {
	if d := os.Getenv(EnvVar); d != "" {
		return d, nil
	}
	d, err := defaultDir()
	if err != nil {
		return "", fmt.Errorf("find the state folder: %w", err)
	}
	return d, nil
}

// homeJoin joins elem under the user's home folder.
func homeJoin(elem ...string) (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(append([]string{home}, elem...)...), nil
}
