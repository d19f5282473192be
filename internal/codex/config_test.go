package codex

import (
	"context"
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

// TestAuthStatusProviderKey: a configured provider whose env_key is set
// counts as logged in, without asking codex; unset, as not logged in
// (codex refuses its turns whatever it stored), naming the variable.
func TestAuthStatusProviderKey(t *testing.T) {
	home := t.TempDir()
	cfg := "model = \"m\"\nmodel_provider = \"fake\"\n\n[model_providers.fake]\nname = \"Fake\"\nbase_url = \"http://127.0.0.1:1/v1\"\nenv_key = \"FAKE_KEY\"\n"
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"CODEX_HOME=" + home, "FAKE_KEY=secret"}
	st, err := AuthStatus(context.Background(), "/nonexistent/codex", env)
	if err != nil || !st.LoggedIn || st.Method != "api_key" || st.Source != "FAKE_KEY" {
		t.Errorf("AuthStatus with FAKE_KEY set = %+v, %v; want logged in by api_key from FAKE_KEY", st, err)
	}
	if got := configModel(env); got != "m" {
		t.Errorf("configModel = %q, want m", got)
	}
	if st, err := AuthStatus(context.Background(), "/nonexistent/codex", env[:1]); err != nil || st.LoggedIn || st.Source != "FAKE_KEY" {
		t.Errorf("AuthStatus without FAKE_KEY = %+v, %v; want not logged in, naming FAKE_KEY", st, err)
	}
}
