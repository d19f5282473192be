package clis

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"
)

// versionsFile names the CLI versions spbridge is tested with, in sets
// (pinned, newest): the scripts read it too, so it is the one place they
// are named.
//
//go:embed versions.sh
var versionsFile string

// A TestedVersion is a version of a CLI spbridge is tested with, and the
// set of versions it belongs to ("pinned": what CI tests; "newest").
type TestedVersion struct {
	Set     string
	Version string
}

// Tested are the versions of the CLI called name that spbridge is tested
// with, in the order of their sets; none for a CLI no set names.
func Tested(name string) []TestedVersion {
	sets, _ := parseVersions(versionsFile, Names()) // TestVersionsFile checks it reads
	var out []TestedVersion
	for _, s := range sets {
		if v, ok := s.versions[name]; ok {
			out = append(out, TestedVersion{s.name, v})
		}
	}
	return out
}

// versionSet is one set of versions.sh: a version by CLI name.
type versionSet struct {
	name     string
	versions map[string]string
}

// parseVersions reads the lines SET_CLI=VERSION of a versions file, for
// the CLIs called names, in the order their sets first appear; comments,
// blank lines and the versions of other tools are skipped.
func parseVersions(file string, names []string) ([]versionSet, error) {
	var sets []versionSet
	for i, line := range strings.Split(file, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok || value == "" || strings.ContainsAny(value, " \t'\"$`") {
			return nil, fmt.Errorf("versions.sh:%d: want SET_NAME=VERSION, got %q", i+1, line)
		}
		for _, name := range names {
			set, ok := strings.CutSuffix(key, "_"+name)
			if !ok || set == "" {
				continue
			}
			if _, _, ok := ParseVersion(value); !ok {
				return nil, fmt.Errorf("versions.sh:%d: %s is not a version", i+1, value)
			}
			j := 0
			for j < len(sets) && sets[j].name != set {
				j++
			}
			if j == len(sets) {
				sets = append(sets, versionSet{set, map[string]string{}})
			}
			if _, dup := sets[j].versions[name]; dup {
				return nil, fmt.Errorf("versions.sh:%d: %s names %s twice", i+1, set, name)
			}
			sets[j].versions[name] = value
		}
	}
	return sets, nil
}

// ParseVersion finds the version number in what a CLI's --version prints
// ("2.1.332 (Claude Code)", "codex-cli 0.171.0"): the first word that
// starts with a digit, as its numbers (2, 1, 332) and what follows them
// ("-beta.1"); false when no word is one.
func ParseVersion(s string) (nums []int, rest string, ok bool) {
	for word := range strings.FieldsSeq(s) {
		word = strings.TrimPrefix(word, "v")
		if word == "" || word[0] < '0' || word[0] > '9' {
			continue
		}
		for {
			end := strings.IndexFunc(word, func(r rune) bool { return r < '0' || r > '9' })
			if end < 0 {
				end = len(word)
			}
			n, err := strconv.Atoi(word[:end])
			if err != nil {
				return nil, "", false
			}
			nums = append(nums, n)
			word = word[end:]
			if len(word) < 2 || word[0] != '.' || word[1] < '0' || word[1] > '9' {
				return nums, word, true
			}
			word = word[1:]
		}
	}
	return nil, "", false
}

// CompareVersions compares the versions a and b as ParseVersion reads
// them: -1, 0 or +1 as a is older, the same or newer; a pre-release
// ("1.2.0-beta") comes before its release. ok is false when either is no
// version.
func CompareVersions(a, b string) (cmp int, ok bool) {
	an, ar, aok := ParseVersion(a)
	bn, br, bok := ParseVersion(b)
	if !aok || !bok {
		return 0, false
	}
	for i := range max(len(an), len(bn)) {
		var x, y int
		if i < len(an) {
			x = an[i]
		}
		if i < len(bn) {
			y = bn[i]
		}
		if x != y {
			if x < y {
				return -1, true
			}
			return 1, true
		}
	}
	switch {
	case ar == br:
		return 0, true
	case ar == "":
		return 1, true
	case br == "":
		return -1, true
	case ar < br:
		return -1, true
	}
	return 1, true
}

// TestedStatus says how the version found of the CLI called name (what
// its --version prints) stands against the versions it is tested with:
// "tested (SET)", "newer than the tested versions", "older than the tested
// versions" or "between the tested versions"; "" when either is not a
// version. Whatever it says, the CLI is used as usual.
func TestedStatus(name, found string) string {
	tested := Tested(name)
	if len(tested) == 0 {
		return ""
	}
	older, newer := 0, 0
	var sets []string
	for _, tv := range tested {
		c, ok := CompareVersions(found, tv.Version)
		switch {
		case !ok:
			return ""
		case c == 0:
			sets = append(sets, tv.Set)
		case c < 0:
			older++
		default:
			newer++
		}
	}
	switch {
	case len(sets) > 0:
		return "tested (" + strings.Join(sets, ", ") + ")"
	case newer == len(tested):
		return "newer than the tested versions"
	case older == len(tested):
		return "older than the tested versions"
	}
	return "between the tested versions"
}
