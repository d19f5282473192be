// Command distpub writes what the two common ways of installing an ACP agent
// need, from the binaries scripts/dist built, so that publishing a release is
// copying files:
//
//   - OUT/acp-registry/spbridge/: the ACP registry entry (agent.json, whose
//     binary distribution points at the release archives under a release URL,
//     and icon.svg), to copy into the registry repository as the folder
//     spbridge/;
//   - OUT/npm/: npm packages, made by npm pack: spbridge-<os>-<cpu>-VERSION.tgz
//     for each system, holding its binary, and spbridge-VERSION.tgz, whose
//     launcher (bin/spbridge.js) runs the one for the system it is on, listed
//     as optional dependencies, so that `npx spbridge serve` works; and
//     install.js, which installs the launcher and the package of the system
//     it runs on from those files, before they are published.
//
// scripts/dist runs it:
//
//	go run ./scripts/distpub -version SEMVER -archive-version V [-release-url URL] -o OUT GOOS/GOARCH=BINARY...
package main

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// The files that go into the registry entry and the npm packages as they are.
var (
	//go:embed icon.svg
	iconSVG []byte
	//go:embed npm/spbridge.js
	launcherJS []byte
	//go:embed npm/README.md
	npmReadme []byte
	//go:embed npm/install.js
	installJS []byte
)

const (
	id          = "spbridge"
	name        = "spbridge"
	description = "Claude Code and Codex in your editor, each conversation kept in the document it belongs to"
	license     = "MIT"
	author      = "The spbridge authors"
)

// target is one release target: how Go, the ACP registry and Node name it.
type target struct {
	goos, goarch string
	registry     string // the registry's platform key
	nodeOS       string // process.platform
	nodeCPU      string // process.arch
}

// targets are the release targets, in the order scripts/dist builds them.
var targets = []target{
	{"linux", "amd64", "linux-x86_64", "linux", "x64"},
	{"linux", "arm64", "linux-aarch64", "linux", "arm64"},
	{"darwin", "amd64", "darwin-x86_64", "darwin", "x64"},
	{"darwin", "arm64", "darwin-aarch64", "darwin", "arm64"},
	{"windows", "amd64", "windows-x86_64", "win32", "x64"},
}

func (t target) exe() string {
	if t.goos == "windows" {
		return "spbridge.exe"
	}
	return "spbridge"
}

// archive is the name scripts/dist gives the target's release archive, and
// dir the folder in it that holds the binary.
func (t target) archive(archiveVersion string) (file, dir string) {
	dir = fmt.Sprintf("spbridge_%s_%s_%s", archiveVersion, t.goos, t.goarch)
	if t.goos == "windows" {
		return dir + ".zip", dir
	}
	return dir + ".tar.gz", dir
}

// npmName is the name of the target's npm package.
func (t target) npmName() string { return "spbridge-" + t.nodeOS + "-" + t.nodeCPU }

// semverRE is semver 2.0.0's own pattern, which npm and the registry go by.
var semverRE = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

func main() {
	version := flag.String("version", "", "the semver version of the registry entry and the npm packages")
	archiveVersion := flag.String("archive-version", "", "the version in the release archives' names")
	releaseURL := flag.String("release-url", "", "the URL the release archives are published under (no registry entry without it)")
	out := flag.String("o", "", "the folder to write acp-registry/ and npm/ in")
	flag.Parse()
	if *version == "" || *archiveVersion == "" || *out == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: distpub -version SEMVER -archive-version V [-release-url URL] -o OUT GOOS/GOARCH=BINARY...")
		os.Exit(2)
	}
	if err := run(*version, *archiveVersion, *releaseURL, *out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "distpub:", err)
		os.Exit(1)
	}
}

func run(version, archiveVersion, releaseURL, out string, built []string) error {
	if !semverRE.MatchString(version) {
		return fmt.Errorf("version %q is not a semantic version", version)
	}
	bins := map[target]string{}
	for _, arg := range built {
		platform, bin, ok := strings.Cut(arg, "=")
		i := slices.IndexFunc(targets, func(t target) bool { return t.goos+"/"+t.goarch == platform })
		if !ok || i < 0 {
			return fmt.Errorf("%q: want GOOS/GOARCH=BINARY for one of the release targets", arg)
		}
		bins[targets[i]] = bin
	}

	if releaseURL != "" {
		if len(bins) != len(targets) {
			return errors.New("the registry entry needs every release target built (drop --targets, or --release-url)")
		}
		entry, err := registryEntry(version, archiveVersion, releaseURL)
		if err != nil {
			return err
		}
		dir := filepath.Join(out, "acp-registry", id)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "agent.json"), entry, 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "icon.svg"), iconSVG, 0o644); err != nil {
			return err
		}
		fmt.Println(filepath.Join(dir, "agent.json"))
		fmt.Println(filepath.Join(dir, "icon.svg"))
	} else {
		fmt.Fprintln(os.Stderr, "distpub: no --release-url, so no ACP registry entry")
	}

	npmOut := filepath.Join(out, "npm")
	if err := os.MkdirAll(npmOut, 0o755); err != nil {
		return err
	}
	stage, err := os.MkdirTemp("", "spbridge-npm-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	var names []string
	for _, t := range targets {
		bin, ok := bins[t]
		if !ok {
			continue
		}
		if err := writePlatformPackage(filepath.Join(stage, t.npmName()), t, version, bin); err != nil {
			return err
		}
		names = append(names, t.npmName())
	}
	if err := writeMainPackage(filepath.Join(stage, "spbridge"), version); err != nil {
		return err
	}
	if err := npmPack(stage, npmOut, version, append(names, "spbridge")); err != nil {
		return err
	}
	return writeInstaller(npmOut, version)
}

// writeInstaller writes OUT/npm/install.js, which installs the launcher and
// the package of the system it runs on from the files beside it, for this
// version: `node dist/npm/install.js`.
func writeInstaller(npmOut, version string) error {
	const placeholder = `"@VERSION@"`
	if bytes.Count(installJS, []byte(placeholder)) != 1 {
		return errors.New("npm/install.js: no single " + placeholder)
	}
	quoted, err := json.Marshal(version)
	if err != nil {
		return err
	}
	p := filepath.Join(npmOut, "install.js")
	if err := os.WriteFile(p, bytes.Replace(installJS, []byte(placeholder), quoted, 1), 0o755); err != nil {
		return err
	}
	fmt.Println(p)
	return nil
}

// binaryTarget is one platform of the registry entry's binary distribution.
type binaryTarget struct {
	Archive string   `json:"archive"`
	Cmd     string   `json:"cmd"`
	Args    []string `json:"args"`
}

// agentEntry is the registry entry, its fields in the order the registry's
// own entries have them.
type agentEntry struct {
	ID           string   `json:"id"`
	Name         string   `json:"name"`
	Version      string   `json:"version"`
	Description  string   `json:"description"`
	Authors      []string `json:"authors"`
	License      string   `json:"license"`
	Distribution struct {
		Binary map[string]binaryTarget `json:"binary"`
	} `json:"distribution"`
}

// registryEntry returns agent.json: version, and for each release target
// its archive under releaseURL and the command in it, run as `serve`.
func registryEntry(version, archiveVersion, releaseURL string) ([]byte, error) {
	u, err := url.Parse(releaseURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("release URL %q: want an absolute http(s) URL", releaseURL)
	}
	e := agentEntry{ID: id, Name: name, Version: version, Description: description, Authors: []string{author}, License: license}
	e.Distribution.Binary = map[string]binaryTarget{}
	for _, t := range targets {
		file, dir := t.archive(archiveVersion)
		e.Distribution.Binary[t.registry] = binaryTarget{
			Archive: strings.TrimSuffix(releaseURL, "/") + "/" + url.PathEscape(file),
			Cmd:     "./" + dir + "/" + t.exe(),
			Args:    []string{"serve"},
		}
	}
	return marshal(e)
}

// npmPackage is a package.json.
type npmPackage struct {
	Name                 string            `json:"name"`
	Version              string            `json:"version"`
	Description          string            `json:"description"`
	License              string            `json:"license"`
	Author               string            `json:"author"`
	OS                   []string          `json:"os,omitempty"`
	CPU                  []string          `json:"cpu,omitempty"`
	Bin                  map[string]string `json:"bin,omitempty"`
	Engines              map[string]string `json:"engines,omitempty"`
	Files                []string          `json:"files"`
	OptionalDependencies map[string]string `json:"optionalDependencies,omitempty"`
}

// writePlatformPackage writes the package for one system: its binary in
// bin/, installed by npm only on that system (os, cpu).
func writePlatformPackage(dir string, t target, version, bin string) error {
	pkg := npmPackage{
		Name:        t.npmName(),
		Version:     version,
		Description: fmt.Sprintf("The spbridge binary for %s %s; install spbridge, which runs it", t.nodeOS, t.nodeCPU),
		License:     license,
		Author:      author,
		OS:          []string{t.nodeOS},
		CPU:         []string{t.nodeCPU},
		Files:       []string{"bin/"},
	}
	readme := fmt.Sprintf("# %s\n\nThe spbridge binary for %s on %s. Install [spbridge](https://www.npmjs.com/package/spbridge)\n(`npx spbridge serve`), which runs the binary for your system; npm installs\nthis package with it where it fits.\n", t.npmName(), t.nodeCPU, t.nodeOS)
	data, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	return writePackage(dir, pkg, readme, map[string]fileData{filepath.Join("bin", t.exe()): {data, 0o755}})
}

// writeMainPackage writes the package spbridge: the launcher, and every
// system's package as an optional dependency of exactly this version.
func writeMainPackage(dir, version string) error {
	deps := map[string]string{}
	for _, t := range targets {
		deps[t.npmName()] = version
	}
	pkg := npmPackage{
		Name:                 "spbridge",
		Version:              version,
		Description:          description,
		License:              license,
		Author:               author,
		Bin:                  map[string]string{"spbridge": "bin/spbridge.js"},
		Engines:              map[string]string{"node": ">=18"},
		Files:                []string{"bin/"},
		OptionalDependencies: deps,
	}
	return writePackage(dir, pkg, string(npmReadme), map[string]fileData{filepath.Join("bin", "spbridge.js"): {launcherJS, 0o755}})
}

type fileData struct {
	data []byte
	mode os.FileMode
}

// writePackage writes a package's folder: package.json, README.md, LICENSE
// (the repository's) and files.
func writePackage(dir string, pkg npmPackage, readme string, files map[string]fileData) error {
	manifest, err := marshal(pkg)
	if err != nil {
		return err
	}
	lic, err := os.ReadFile("LICENSE")
	if err != nil {
		return err
	}
	files["package.json"] = fileData{manifest, 0o644}
	files["README.md"] = fileData{[]byte(readme), 0o644}
	files["LICENSE"] = fileData{lic, 0o644}
	for name, f := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.data, f.mode); err != nil {
			return err
		}
		// WriteFile's mode is cut by the umask.
		if err := os.Chmod(p, f.mode); err != nil {
			return err
		}
	}
	return nil
}

// npmPack packs the packages stage/NAME into out/NAME-VERSION.tgz with one
// npm pack.
func npmPack(stage, out, version string, names []string) error {
	abs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	args := []string{"pack", "--ignore-scripts", "--pack-destination", abs}
	for _, name := range names {
		args = append(args, "."+string(filepath.Separator)+name)
	}
	cmd := exec.Command("npm", args...)
	cmd.Dir = stage
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if _, err := cmd.Output(); err != nil {
		return fmt.Errorf("npm pack: %v\n%s", err, stderr.Bytes())
	}
	for _, name := range names {
		tgz := filepath.Join(out, name+"-"+version+".tgz")
		if _, err := os.Stat(tgz); err != nil {
			return fmt.Errorf("npm pack: %v", err)
		}
		fmt.Println(tgz)
	}
	return nil
}

// marshal is JSON indented by two spaces, with a final newline, as npm and
// the registry write theirs.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
