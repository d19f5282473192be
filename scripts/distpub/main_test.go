package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

const releaseURL = "https://github.com/example/spbridge/releases/download/v1.2.3"

// registrySchema is the ACP registry's agent.schema.json (testdata/README.md
// says where it comes from), with format assertions on.
func registrySchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "agent.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("agent.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("agent.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validate(s *jsonschema.Schema, data []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return err
	}
	return s.Validate(v)
}

func TestRegistryEntryMatchesSchema(t *testing.T) {
	s := registrySchema(t)
	for _, v := range []struct{ version, archive string }{{"1.2.3", "v1.2.3"}, {"0.0.0-dev.620a8ae", "620a8ae"}, {"0.0.0-dev.620a8ae.dirty", "620a8ae-dirty"}} {
		data, err := registryEntry(v.version, v.archive, releaseURL+"/")
		if err != nil {
			t.Fatal(err)
		}
		if err := validate(s, data); err != nil {
			t.Errorf("%s: the entry breaks the registry's schema: %v\n%s", v.version, err, data)
		}
		var e agentEntry
		if err := json.Unmarshal(data, &e); err != nil {
			t.Fatal(err)
		}
		if e.ID != "spbridge" || e.Version != v.version || e.License != "MIT" {
			t.Errorf("id %q version %q license %q", e.ID, e.Version, e.License)
		}
		// The registry's checks beyond the schema: every system, each
		// archive under the release URL, no /latest/.
		want := map[string][2]string{
			"darwin-aarch64": {"spbridge_%s_darwin_arm64.tar.gz", "./spbridge_%s_darwin_arm64/spbridge"},
			"darwin-x86_64":  {"spbridge_%s_darwin_amd64.tar.gz", "./spbridge_%s_darwin_amd64/spbridge"},
			"linux-aarch64":  {"spbridge_%s_linux_arm64.tar.gz", "./spbridge_%s_linux_arm64/spbridge"},
			"linux-x86_64":   {"spbridge_%s_linux_amd64.tar.gz", "./spbridge_%s_linux_amd64/spbridge"},
			"windows-x86_64": {"spbridge_%s_windows_amd64.zip", "./spbridge_%s_windows_amd64/spbridge.exe"},
		}
		if len(e.Distribution.Binary) != len(want) {
			t.Errorf("%d platforms, want %d", len(e.Distribution.Binary), len(want))
		}
		for platform, w := range want {
			b, ok := e.Distribution.Binary[platform]
			archive := releaseURL + "/" + strings.ReplaceAll(w[0], "%s", v.archive)
			cmd := strings.ReplaceAll(w[1], "%s", v.archive)
			if !ok || b.Archive != archive || b.Cmd != cmd || strings.Join(b.Args, " ") != "serve" {
				t.Errorf("%s: %+v, want %s %s serve", platform, b, archive, cmd)
			}
			if strings.Contains(b.Archive, "/latest/") {
				t.Errorf("%s: %s", platform, b.Archive)
			}
		}
	}
	// A release's version is what the registry takes: x.y.z, numeric, the
	// same as the one in the download URL.
	data, _ := registryEntry("1.2.3", "v1.2.3", releaseURL)
	var e agentEntry
	json.Unmarshal(data, &e)
	if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(e.Version) || !strings.Contains(e.Distribution.Binary["linux-x86_64"].Archive, "/download/v"+e.Version+"/") {
		t.Errorf("version %q, archive %s", e.Version, e.Distribution.Binary["linux-x86_64"].Archive)
	}
	if _, err := registryEntry("1.2.3", "v1.2.3", "releases/v1.2.3"); err == nil {
		t.Error("a relative release URL was taken")
	}
}

// TestSchemaRejectsBrokenEntries: the schema check fails on an entry that
// breaks the registry's schema.
func TestSchemaRejectsBrokenEntries(t *testing.T) {
	s := registrySchema(t)
	good, err := registryEntry("1.2.3", "v1.2.3", releaseURL)
	if err != nil {
		t.Fatal(err)
	}
	for name, breakIt := range map[string]func(m map[string]any){
		"no cmd":             func(m map[string]any) { delete(platform(m, "linux-x86_64"), "cmd") },
		"no archive":         func(m map[string]any) { delete(platform(m, "darwin-aarch64"), "archive") },
		"archive not a URL":  func(m map[string]any) { platform(m, "windows-x86_64")["archive"] = "not a url" },
		"args not a list":    func(m map[string]any) { platform(m, "linux-aarch64")["args"] = "serve" },
		"unknown platform":   func(m map[string]any) { binary(m)["linux-riscv64"] = platform(m, "linux-x86_64") },
		"unknown field":      func(m map[string]any) { platform(m, "linux-x86_64")["sha256"] = "00" },
		"version not semver": func(m map[string]any) { m["version"] = "v1.2.3" },
		"id with capitals":   func(m map[string]any) { m["id"] = "SpBridge" },
		"no description":     func(m map[string]any) { delete(m, "description") },
		"empty name":         func(m map[string]any) { m["name"] = "" },
		"no distribution":    func(m map[string]any) { m["distribution"] = map[string]any{} },
		"unknown distribution": func(m map[string]any) {
			m["distribution"].(map[string]any)["docker"] = map[string]any{"package": "spbridge"}
		},
	} {
		var m map[string]any
		if err := json.Unmarshal(good, &m); err != nil {
			t.Fatal(err)
		}
		breakIt(m)
		bad, _ := json.Marshal(m)
		if err := validate(s, bad); err == nil {
			t.Errorf("%s: the schema check passed %s", name, bad)
		}
	}
}

func binary(m map[string]any) map[string]any {
	return m["distribution"].(map[string]any)["binary"].(map[string]any)
}

func platform(m map[string]any, p string) map[string]any { return binary(m)[p].(map[string]any) }

// TestIcon holds icon.svg to the registry's rules: a square 16×16 SVG,
// monochrome through currentColor (fills and strokes only currentColor,
// none or inherit; no colour in a style).
func TestIcon(t *testing.T) {
	dec := xml.NewDecoder(bytes.NewReader(iconSVG))
	sawCurrent, sawRoot := false, false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		el, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		attrs := map[string]string{}
		for _, a := range el.Attr {
			attrs[a.Name.Local] = a.Value
		}
		if !sawRoot {
			sawRoot = true
			if el.Name.Local != "svg" || attrs["width"] != "16" || attrs["height"] != "16" || attrs["viewBox"] != "0 0 16 16" {
				t.Errorf("root %s %v, want svg 16×16 with viewBox 0 0 16 16", el.Name.Local, attrs)
			}
		}
		for _, k := range []string{"fill", "stroke", "color", "stop-color"} {
			v, ok := attrs[k]
			if !ok {
				continue
			}
			switch strings.ToLower(v) {
			case "currentcolor":
				sawCurrent = true
			case "none", "inherit":
			default:
				t.Errorf("<%s %s=%q>: a colour of its own", el.Name.Local, k, v)
			}
		}
		if st, ok := attrs["style"]; ok {
			t.Errorf("<%s style=%q>: colours go in fill and stroke", el.Name.Local, st)
		}
		if el.Name.Local == "style" {
			t.Error("a <style> element")
		}
	}
	if !sawCurrent {
		t.Error("nothing drawn in currentColor")
	}
}

// TestRunWritesEverything runs distpub as scripts/dist does, for the five
// targets (stand-in binaries, the real npm pack), and checks what it wrote:
// the registry entry against the schema, each npm package's manifest and
// files, and install.js.
func TestRunWritesEverything(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed")
	}
	schema := registrySchema(t)
	// distpub runs in the repository's root (it reads LICENSE there).
	t.Chdir(filepath.Join("..", ".."))
	tmp := t.TempDir()
	var built []string
	for _, tg := range targets {
		bin := filepath.Join(tmp, "bin", tg.goos+"_"+tg.goarch, tg.exe())
		os.MkdirAll(filepath.Dir(bin), 0o755)
		if err := os.WriteFile(bin, []byte("binary for "+tg.goos+"/"+tg.goarch), 0o755); err != nil {
			t.Fatal(err)
		}
		built = append(built, tg.goos+"/"+tg.goarch+"="+bin)
	}
	out := filepath.Join(tmp, "out")
	const version = "1.2.3"
	if err := run(version, "v1.2.3", releaseURL, out, built); err != nil {
		t.Fatal(err)
	}

	entry, err := os.ReadFile(filepath.Join(out, "acp-registry", "spbridge", "agent.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := validate(schema, entry); err != nil {
		t.Errorf("agent.json breaks the registry's schema: %v", err)
	}
	if icon, err := os.ReadFile(filepath.Join(out, "acp-registry", "spbridge", "icon.svg")); err != nil || !bytes.Equal(icon, iconSVG) {
		t.Errorf("icon.svg: %v", err)
	}

	for _, tg := range targets {
		files := readTgz(t, filepath.Join(out, "npm", tg.npmName()+"-"+version+".tgz"))
		var pkg npmPackage
		if err := json.Unmarshal(files["package/package.json"].data, &pkg); err != nil {
			t.Fatal(err)
		}
		if pkg.Name != tg.npmName() || pkg.Version != version || strings.Join(pkg.OS, ",") != tg.nodeOS || strings.Join(pkg.CPU, ",") != tg.nodeCPU {
			t.Errorf("%s: package.json %+v", tg.npmName(), pkg)
		}
		bin := files["package/bin/"+tg.exe()]
		if string(bin.data) != "binary for "+tg.goos+"/"+tg.goarch || bin.mode&0o111 == 0 {
			t.Errorf("%s: bin/%s %q mode %v", tg.npmName(), tg.exe(), bin.data, bin.mode)
		}
		if _, ok := files["package/LICENSE"]; !ok {
			t.Errorf("%s: no LICENSE", tg.npmName())
		}
	}

	files := readTgz(t, filepath.Join(out, "npm", "spbridge-"+version+".tgz"))
	var pkg npmPackage
	if err := json.Unmarshal(files["package/package.json"].data, &pkg); err != nil {
		t.Fatal(err)
	}
	if pkg.Name != "spbridge" || pkg.Version != version || pkg.Bin["spbridge"] != "bin/spbridge.js" || len(pkg.OS) != 0 || len(pkg.CPU) != 0 {
		t.Errorf("spbridge: package.json %+v", pkg)
	}
	if len(pkg.OptionalDependencies) != len(targets) {
		t.Errorf("optionalDependencies %v", pkg.OptionalDependencies)
	}
	launcher := files["package/bin/spbridge.js"]
	for _, tg := range targets {
		if pkg.OptionalDependencies[tg.npmName()] != version {
			t.Errorf("optionalDependencies[%s] = %q, want exactly %s", tg.npmName(), pkg.OptionalDependencies[tg.npmName()], version)
		}
		// The launcher looks for the same packages.
		if !bytes.Contains(launcher.data, []byte(`"`+tg.nodeOS+"-"+tg.nodeCPU+`": "`+tg.npmName()+`"`)) {
			t.Errorf("the launcher does not look for %s", tg.npmName())
		}
	}
	if !bytes.HasPrefix(launcher.data, []byte("#!/usr/bin/env node\n")) || launcher.mode&0o111 == 0 {
		t.Errorf("bin/spbridge.js mode %v", launcher.mode)
	}

	// install.js, for this version.
	install, err := os.ReadFile(filepath.Join(out, "npm", "install.js"))
	if err != nil || !bytes.Contains(install, []byte(`const version = "`+version+`";`)) || bytes.Contains(install, []byte("@VERSION@")) {
		t.Errorf("npm/install.js does not install version %s: %v\n%s", version, err, install)
	}

	// The registry entry needs every target.
	if err := run(version, "v1.2.3", releaseURL, filepath.Join(tmp, "partial"), built[:1]); err == nil {
		t.Error("a registry entry was written with one target")
	}
}

type tgzFile struct {
	data []byte
	mode os.FileMode
}

func readTgz(t *testing.T, path string) map[string]tgzFile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	files := map[string]tgzFile{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = tgzFile{data, h.FileInfo().Mode()}
	}
}
