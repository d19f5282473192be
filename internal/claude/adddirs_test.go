package claude

import (
	"slices"
	"testing"
)

// TestArgsAddDirs: each additional folder is one --add-dir with the whole
// path as its value, in order, before --resume; none adds no flag.
func TestArgsAddDirs(t *testing.T) {
	if a := New(Options{}).args(); slices.Contains(a, "--add-dir") {
		t.Errorf("args() without folders = %q", a)
	}
	b := New(Options{AddDirs: []string{"/srv/assets", "/home/me/a folder with --flags"}})
	b.session = "s-1"
	a := b.args()
	i := slices.Index(a, "--add-dir")
	want := []string{"--add-dir", "/srv/assets", "--add-dir", "/home/me/a folder with --flags", "--resume", "s-1"}
	if i < 0 || !slices.Equal(a[i:], want) {
		t.Errorf("args() = %q, want it to end with %q", a, want)
	}
}
