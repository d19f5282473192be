package statedir

import (
	"errors"
	"os"
	"path/filepath"
)

// defaultDir is %LocalAppData%\spbridge.
func defaultDir() (string, error) {
	d := os.Getenv("LocalAppData")
	if d == "" {
		return "", errors.New("%LocalAppData% is not set")
	}
	return filepath.Join(d, "spbridge"), nil
}
