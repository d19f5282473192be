package statedir

import (
	"path/filepath"
	"runtime"
	"testing"
)

func TestDirOverride(t *testing.T) {
	t.Setenv(EnvVar, "/tmp/spbridge-state")
	if d, err := Dir(); err != nil || d != "/tmp/spbridge-state" {
		t.Fatalf("Dir() = %q, %v, want /tmp/spbridge-state", d, err)
	}
}

func TestDirDefault(t *testing.T) {
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		t.Skip("the XDG default is for the other systems")
	}
	t.Setenv(EnvVar, "")
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_STATE_HOME", "")
	want := filepath.Join(home, ".local", "state", "spbridge")
	if d, err := Dir(); err != nil || d != want {
		t.Fatalf("Dir() = %q, %v, want %q", d, err, want)
	}
	t.Setenv("XDG_STATE_HOME", "/srv/state")
	if d, err := Dir(); err != nil || d != "/srv/state/spbridge" {
		t.Fatalf("Dir() with XDG_STATE_HOME = %q, %v, want /srv/state/spbridge", d, err)
	}
	// The XDG specification ignores a relative path.
	t.Setenv("XDG_STATE_HOME", "relative")
	if d, err := Dir(); err != nil || d != want {
		t.Fatalf("Dir() with a relative XDG_STATE_HOME = %q, %v, want %q", d, err, want)
	}
}
