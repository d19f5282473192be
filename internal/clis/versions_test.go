package clis

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestVersionsFile: versions.sh reads, and names a version of every CLI in
// every set, the pinned set first and older than or as old as the newest;
// bash reads it the same.
func TestVersionsFile(t *testing.T) {
	sets, err := parseVersions(versionsFile, Names())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range sets {
		names = append(names, s.name)
		for _, c := range All {
			if s.versions[c.Name] == "" {
				t.Errorf("set %s names no version of %s", s.name, c.Name)
			}
		}
	}
	if !slices.Equal(names, []string{"pinned", "newest"}) {
		t.Fatalf("sets %q, want pinned and newest", names)
	}
	for _, c := range All {
		tested := Tested(c.Name)
		if len(tested) != 2 || tested[0].Set != "pinned" || tested[1].Set != "newest" {
			t.Fatalf("Tested(%s) = %v", c.Name, tested)
		}
		if cmp, ok := CompareVersions(tested[0].Version, tested[1].Version); !ok || cmp > 0 {
			t.Errorf("%s: the pinned version %s is newer than the newest %s", c.Name, tested[0].Version, tested[1].Version)
		}
	}
	if got := Tested("no-such-cli"); got != nil {
		t.Errorf("Tested of a CLI no set names: %v", got)
	}

	bash, err := exec.LookPath("bash")
	if err != nil || runtime.GOOS == "windows" {
		t.Skip("no bash")
	}
	out, err := exec.Command(bash, "-c", `set -eu; source ./versions.sh; echo "$pinned_claude $pinned_codex $newest_claude $newest_codex"`).CombinedOutput()
	if err != nil {
		t.Fatalf("bash cannot source versions.sh: %v\n%s", err, out)
	}
	var want []string
	for _, s := range sets {
		want = append(want, s.versions["claude"], s.versions["codex"])
	}
	if got := strings.Fields(string(out)); !slices.Equal(got, want) {
		t.Errorf("bash reads %q, Go %q", got, want)
	}
}

func TestParseVersionsRefuses(t *testing.T) {
	for _, file := range []string{
		"pinned_claude",
		"pinned_claude=",
		"pinned_claude=1.2 3",
		"pinned_claude=$(true)",
		"pinned_claude=latest",
		"pinned_claude=1.0\npinned_claude=1.1",
	} {
		if _, err := parseVersions(file, []string{"claude"}); err == nil {
			t.Errorf("%q: no error", file)
		}
	}
	sets, err := parseVersions("# a comment\n\nacp_sdk=2.4.0\nb_x=2\na_x=1.0\n", []string{"x"})
	if err != nil || len(sets) != 2 || sets[0].name != "b" || sets[1].versions["x"] != "1.0" {
		t.Errorf("got %+v, %v", sets, err)
	}
}

func TestCompareVersions(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
		ok   bool
	}{
		{"2.1.332 (Claude Code)", "2.1.332", 0, true},
		{"2.1.333 (Claude Code)", "2.1.332", 1, true},
		{"codex-cli 0.171.0", "0.169.0", 1, true},
		{"codex-cli 0.99.0", "0.169.0", -1, true},
		{"2.1", "2.1.0", 0, true},
		{"2.2", "2.1.9", 1, true},
		{"v1.0.0", "1.0.0", 0, true},
		{"0.172.0-alpha.1", "0.172.0", -1, true},
		{"0.172.0", "0.172.0-alpha.1", 1, true},
		{"0.172.0-alpha.2", "0.172.0-alpha.1", 1, true},
		{"codex-cli", "0.169.0", 0, false},
		{"", "1", 0, false},
		{"99999999999999999999999.1", "1", 0, false},
	} {
		got, ok := CompareVersions(tc.a, tc.b)
		if got != tc.want || ok != tc.ok {
			t.Errorf("CompareVersions(%q, %q) = %d, %v; want %d, %v", tc.a, tc.b, got, ok, tc.want, tc.ok)
		}
	}
}

func TestTestedStatus(t *testing.T) {
	pinned, newest := Tested("codex")[0].Version, Tested("codex")[1].Version
	nums, _, _ := ParseVersion(newest)
	newer := strings.Trim(strings.Repeat("9.", len(nums)), ".")
	for _, tc := range []struct{ found, want string }{
		{"codex-cli " + pinned, "tested (pinned)"},
		{"codex-cli " + newest, "tested (newest)"},
		{"codex-cli " + newer, "newer than the tested versions"},
		{"codex-cli 0.0.1", "older than the tested versions"},
		{"no version here", ""},
	} {
		if got := TestedStatus("codex", tc.found); got != tc.want {
			t.Errorf("TestedStatus(codex, %q) = %q, want %q", tc.found, got, tc.want)
		}
	}
	if between := pinned + ".1"; pinned != newest {
		if c, _ := CompareVersions(between, newest); c < 0 {
			if got := TestedStatus("codex", "codex-cli "+between); got != "between the tested versions" {
				t.Errorf("TestedStatus(codex, %q) = %q", between, got)
			}
		}
	}
	if got := TestedStatus("no-such-cli", "1.0"); got != "" {
		t.Errorf("a CLI with no tested versions: %q", got)
	}
}

// TestInstallCLIsSets runs scripts/install-clis with a fake npm: each set
// installs its own versions into its own folder, a set already there is
// not installed again, and an unknown set is refused.
func TestInstallCLIsSets(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a bash script")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("no node")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin, tools := t.TempDir(), t.TempDir()
	calls := filepath.Join(t.TempDir(), "npm-calls")
	// The fake npm installs what the prefix's package.json asks for: for
	// each CLI a program printing the version as the real one does, for
	// each library its package.json.
	fakeNPM := `#!/usr/bin/env bash
set -eu
echo "$*" >>"$NPM_CALLS"
prefix=
while [ $# -gt 0 ]; do [ "$1" = --prefix ] && prefix=$2; shift; done
sed -n 's/^ *"\([^"]*\)": "\([0-9][^"]*\)",\{0,1\}$/\1 \2/p' "$prefix/package.json" |
while read -r name v; do
  dir=$prefix/node_modules/$name
  mkdir -p "$dir/bin"
  printf '{"name": "%s", "version": "%s"}\n' "$name" "$v" >"$dir/package.json"
  case $name in
  @anthropic-ai/claude-code) printf '#!/bin/sh\necho "%s (Claude Code)"\n' "$v" >"$dir/bin/claude.exe" ;;
  @openai/codex) printf '#!/bin/sh\necho "codex-cli %s"\n' "$v" >"$dir/bin/codex.js" ;;
  esac
  chmod +x "$dir/bin/"* 2>/dev/null || true
done
`
	if err := os.WriteFile(filepath.Join(bin, "npm"), []byte(fakeNPM), 0o755); err != nil {
		t.Fatal(err)
	}
	install := func(args ...string) (string, error) {
		cmd := exec.Command(bash, append([]string{filepath.Join(root, "scripts", "install-clis")}, args...)...)
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
			"SPBRIDGE_TOOLS="+tools, "NPM_CALLS="+calls, "SPBRIDGE_CLIS=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	npmCalls := func() int {
		data, _ := os.ReadFile(calls)
		return strings.Count(string(data), "\n")
	}
	sets, err := parseVersions(versionsFile, Names())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sets {
		args := []string{s.name}
		prefix := filepath.Join(tools, "npm-"+s.name)
		if s.name == "pinned" {
			args, prefix = nil, filepath.Join(tools, "npm") // the default
		}
		before := npmCalls()
		out, err := install(args...)
		if err != nil {
			t.Fatalf("install-clis %v: %v\n%s", args, err, out)
		}
		if npmCalls() != before+1 {
			t.Errorf("install-clis %v ran npm %d times", args, npmCalls()-before)
		}
		for _, want := range []string{
			"claude " + s.versions["claude"] + ": " + filepath.Join(prefix, "node_modules/@anthropic-ai/claude-code/bin/claude.exe"),
			"codex " + s.versions["codex"] + ": " + filepath.Join(prefix, "node_modules/@openai/codex/bin/codex.js"),
		} {
			if !strings.Contains(out, want+"\n") {
				t.Errorf("install-clis %v does not say %q:\n%s", args, want, out)
			}
		}
		if acp := strings.Contains(out, "@agentclientprotocol/sdk"); acp != (s.name == "pinned") {
			t.Errorf("install-clis %v: the ACP library installed: %v, want only with the pinned set:\n%s", args, acp, out)
		}
		// Again: all there, npm is not run.
		if out, err := install(args...); err != nil || npmCalls() != before+1 {
			t.Errorf("install-clis %v again: npm run %d times more, %v\n%s", args, npmCalls()-before-1, err, out)
		}
	}
	out, err := install("oldest")
	if err == nil || !strings.Contains(out, "unknown set 'oldest'") {
		t.Errorf("an unknown set: %v\n%s", err, out)
	}
	if out, err := install("pinned", "newest"); err == nil || !strings.Contains(out, "usage") {
		t.Errorf("two sets: %v\n%s", err, out)
	}
}

// TestREADMETested: the README's "tested on" line names every version of
// every set.
func TestREADMETested(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, line, ok := strings.Cut(strings.Join(strings.Fields(string(data)), " "), "(tested on ")
	if !ok {
		t.Fatal(`README.md has no "(tested on" line`)
	}
	line, _, _ = strings.Cut(line, ";")
	for _, c := range All {
		for _, tv := range Tested(c.Name) {
			if !strings.Contains(line, tv.Version) {
				t.Errorf("README.md's tested line %q does not name %s %s (%s)", line, c.Name, tv.Version, tv.Set)
			}
		}
	}
}
