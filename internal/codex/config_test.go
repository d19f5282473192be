package codex

import (
	"os"
	"path/filepath"
	"testing"

	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
)

func TestConfigModel(t *testing.T) {
	for _, tc := range []struct{ config, want string }{
		{`model = "gpt-5.5"` + "\n", "gpt-5.5"},
		{"# a comment\nmodel_provider = \"fake\"\nmodel = 'o3' # why\n", "o3"},
		{"model = \"gpt-5\" # default\n", "gpt-5"},
		{"[profiles.x]\nmodel = \"other\"\n", ""},
		{"approval_policy = \"never\"\n", ""},
	} {
		home := t.TempDir()
		if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(tc.config), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := configModel([]string{"CODEX_HOME=" + home}); got != tc.want {
			t.Errorf("configModel(%q) = %q, want %q", tc.config, got, tc.want)
		}
	}
	if got := configModel([]string{"CODEX_HOME=" + filepath.Join(t.TempDir(), "none")}); got != "" {
		t.Errorf("configModel without a config = %q", got)
	}
	// The backend's env: CodexHome wins.
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.toml"), []byte(`model = "from-home"`+"\n"), 0o600)
	b := New(Options{Options: backend.Options{Env: []string{"CODEX_HOME=/nowhere"}}, Transport: TransportExec, CodexHome: home})
	if got := b.withModel(&itemmap.TurnEnd{}).Model; got != "from-home" {
		t.Errorf("exec turn's model = %q, want from-home", got)
	}
}
