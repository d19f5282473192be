package disttest

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"spbridge/internal/fakeapi"
)

// dist is what scripts/dist --targets host wrote, built once for the
// package's tests.
type dist struct {
	root        string // the module's root
	out         string // scripts/dist's OUTDIR
	version     string // the archives' version, what spbridge version prints
	semver      string // the npm packages' version
	platformPkg string // this system's npm package, spbridge-OS-CPU
	launcherTgz string
	platformTgz string
	binary      string // spbridge, unpacked from this system's archive
}

var (
	distOnce  sync.Once
	distBuilt *dist
	distErr   string
	distDir   string // removed by TestMain
)

func TestMain(m *testing.M) {
	code := m.Run()
	if distDir != "" {
		os.RemoveAll(distDir)
	}
	os.Exit(code)
}

// needNPM skips the test where Node.js and npm are not installed.
func needNPM(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"node", "npm", "npx"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
}

// buildDist runs scripts/dist for this system (once for all the tests)
// and returns what it wrote.
func buildDist(t *testing.T) *dist {
	t.Helper()
	nodeOS, nodeCPU := nodeSystem(t)
	distOnce.Do(func() {
		distBuilt, distErr = makeDist(nodeOS, nodeCPU)
	})
	if distErr != "" {
		t.Fatal(distErr)
	}
	return distBuilt
}

func makeDist(nodeOS, nodeCPU string) (*dist, string) {
	root, err := fakeapi.ModuleRoot()
	if err != nil {
		return nil, err.Error()
	}
	distDir, err = os.MkdirTemp("", "spbridge-disttest-")
	if err != nil {
		return nil, err.Error()
	}
	d := &dist{root: root, out: filepath.Join(distDir, "dist"), platformPkg: "spbridge-" + nodeOS + "-" + nodeCPU}
	cmd := exec.Command("bash", "scripts/dist", "--targets", "host", d.out)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, "scripts/dist: " + err.Error() + "\n" + string(b)
	}
	archives, _ := filepath.Glob(filepath.Join(d.out, "spbridge_*_"+runtime.GOOS+"_"+runtime.GOARCH+".*"))
	if len(archives) != 1 {
		return nil, "archives: " + strings.Join(archives, " ")
	}
	name := filepath.Base(archives[0])
	name = strings.TrimSuffix(strings.TrimSuffix(name, ".zip"), ".tar.gz")
	d.version = strings.TrimPrefix(name, "spbridge_")
	d.version = d.version[:strings.Index(d.version, "_"+runtime.GOOS+"_")]
	platformTgz, _ := filepath.Glob(filepath.Join(d.out, "npm", d.platformPkg+"-*.tgz"))
	if len(platformTgz) != 1 {
		return nil, d.platformPkg + " packages: " + strings.Join(platformTgz, " ")
	}
	d.platformTgz = platformTgz[0]
	d.semver = strings.TrimSuffix(strings.TrimPrefix(filepath.Base(d.platformTgz), d.platformPkg+"-"), ".tgz")
	d.launcherTgz = filepath.Join(d.out, "npm", "spbridge-"+d.semver+".tgz")
	if runtime.GOOS != "windows" {
		// The binary, for the tests that pack it again.
		d.binary = filepath.Join(distDir, "spbridge")
		if err := untarFile(archives[0], name+"/spbridge", d.binary); err != nil {
			return nil, err.Error()
		}
	}
	return d, ""
}

// untarFile writes the file name of the .tar.gz archive to dst.
func untarFile(archive, name, dst string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err != nil {
			return err
		}
		if h.Name != name {
			continue
		}
		out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, tr); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	}
}

// realTempDir is t.TempDir with no symbolic link in its path (macOS's
// /var is one), as Node gives a module's folder.
func realTempDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// npmEnv is the environment npm runs in: a cache of its own under tmp,
// offline (no registry), no notices.
func npmEnv(tmp string) []string {
	return append(os.Environ(), "npm_config_cache="+filepath.Join(tmp, "npm-cache"), "npm_config_offline=true",
		"npm_config_update_notifier=false", "npm_config_audit=false", "npm_config_fund=false")
}

// globalBin is the spbridge command npm install -g --prefix prefix makes.
func globalBin(prefix string) string {
	if runtime.GOOS == "windows" {
		return filepath.Join(prefix, "spbridge.cmd")
	}
	return filepath.Join(prefix, "bin", "spbridge")
}

// globalModules lists the packages npm install -g --prefix prefix holds.
func globalModules(t *testing.T, prefix string) []string {
	t.Helper()
	dir := filepath.Join(prefix, "lib", "node_modules")
	if runtime.GOOS == "windows" {
		dir = filepath.Join(prefix, "node_modules")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	return names
}

// installCommand runs npm/install.js of the scripts/dist output out with
// args, and returns the npm command it printed (its arguments after npm)
// and what it wrote on stderr.
func installCommand(t *testing.T, out string, env []string, args ...string) (npmArgs []string, stderr string, err error) {
	t.Helper()
	cmd := exec.Command("node", append([]string{filepath.Join(out, "npm", "install.js")}, args...)...)
	cmd.Env = env
	var eb bytes.Buffer
	cmd.Stderr = &eb
	stdout, err := cmd.Output()
	first, _, _ := strings.Cut(string(stdout), "\n")
	fields := strings.Fields(first)
	if len(fields) > 0 && fields[0] == "npm" {
		npmArgs = fields[1:]
	}
	return npmArgs, eb.String(), err
}

// allTargets are the release targets in Node's names.
var allTargets = [][2]string{{"linux", "x64"}, {"linux", "arm64"}, {"darwin", "x64"}, {"darwin", "arm64"}, {"win32", "x64"}}

// TestInstallRecipe: docs/editors.md's install before a release, `node
// DIST/npm/install.js`, from what scripts/dist writes for every system. For
// each system it picks exactly the launcher and that system's package (npm
// refuses to install another system's: EBADPLATFORM); on this system it
// installs them with npm from the files (offline, into a temporary prefix),
// and the installed spbridge answers --version and serve's initialize.
//
// The npm/ folder of all five systems is made by the same distpub run
// scripts/dist ends with, over this system's binary from scripts/dist and
// stand-ins for the others' (they are never run here, and building all five
// would take minutes on a cold build cache).
func TestInstallRecipe(t *testing.T) {
	needNPM(t)
	d := buildDist(t)
	if d.binary == "" {
		t.Skip("the binary is unpacked from a .tar.gz archive only")
	}
	tmp := realTempDir(t)
	env := npmEnv(tmp)

	// Every system's packages, as a full scripts/dist writes them.
	stand := filepath.Join(tmp, "stand-in")
	if err := os.WriteFile(stand, []byte("not this system's binary\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	full := filepath.Join(tmp, "full")
	nodeOS, nodeCPU := nodeSystem(t)
	args := []string{"run", "./scripts/distpub", "-version", d.semver, "-archive-version", d.version, "-o", full}
	for _, target := range []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64"} {
		bin := stand
		if target == runtime.GOOS+"/"+runtime.GOARCH {
			bin = d.binary
		}
		args = append(args, target+"="+bin)
	}
	pub := exec.Command("go", args...)
	pub.Dir = d.root
	pub.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	if b, err := pub.CombinedOutput(); err != nil {
		t.Fatalf("distpub: %v\n%s", err, b)
	}
	tgzs, _ := filepath.Glob(filepath.Join(full, "npm", "*.tgz"))
	if len(tgzs) != 6 {
		t.Fatalf("the npm packages of every system: %v", tgzs)
	}

	launcher := filepath.Join(full, "npm", "spbridge-"+d.semver+".tgz")
	for _, target := range allTargets {
		pkg := filepath.Join(full, "npm", "spbridge-"+target[0]+"-"+target[1]+"-"+d.semver+".tgz")
		got, stderr, err := installCommand(t, full, env, "--dry-run", "--os", target[0], "--cpu", target[1])
		want := []string{"install", "-g", "--offline", launcher, pkg}
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("install.js --dry-run for %s-%s: npm %q, %v %s\nwant npm %q", target[0], target[1], got, err, stderr, want)
		}
	}

	// This system's: really installed.
	prefix := filepath.Join(tmp, "prefix")
	cmd := exec.Command("node", filepath.Join(full, "npm", "install.js"), "--prefix", prefix)
	cmd.Env = env
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node install.js --prefix: %v\n%s", err, b)
	}
	platformPkg := "spbridge-" + nodeOS + "-" + nodeCPU
	if got := globalModules(t, prefix); !slices.Equal(got, []string{"spbridge", platformPkg}) {
		t.Errorf("installed packages %v, want spbridge and %s only", got, platformPkg)
	}
	if runtime.GOOS == "windows" {
		return
	}
	spbridge := globalBin(prefix)
	if got, err := exec.Command(spbridge, "--version").Output(); err != nil || string(got) != "spbridge "+d.version+"\n" {
		t.Errorf("spbridge --version: %q %v, want %q", got, err, "spbridge "+d.version+"\n")
	}
	serveInitialize(t, exec.Command(spbridge, "serve"))

	// Built for this system alone, the folder says what it holds and how
	// to build another system's.
	other := [2]string{"darwin", "arm64"}
	if nodeOS == "darwin" {
		other = [2]string{"linux", "x64"}
	}
	got, stderr, err := installCommand(t, d.out, env, "--dry-run", "--os", other[0], "--cpu", other[1])
	if err == nil || got != nil || !strings.Contains(stderr, "no package for "+other[0]+"-"+other[1]) ||
		!strings.Contains(stderr, "this build holds "+nodeOS+"-"+nodeCPU) || !strings.Contains(stderr, "scripts/dist --targets ") {
		t.Errorf("install.js --dry-run for %v from a build for this system: npm %q, %v\n%s", other, got, err, stderr)
	}
	got, stderr, err = installCommand(t, d.out, env, "--dry-run")
	if want := []string{"install", "-g", "--offline", d.launcherTgz, d.platformTgz}; err != nil || !slices.Equal(got, want) {
		t.Errorf("install.js --dry-run from a build for this system: npm %q, %v %s\nwant npm %q", got, err, stderr, want)
	}
}

// serveInitialize runs cmd, spbridge serve, sends it initialize, waits for
// its answer, closes its input and wants exit code 0.
func serveInitialize(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	cmd.Env = append(os.Environ(), "SPBRIDGE_STATE_DIR="+t.TempDir())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`+"\n")
	line, rerr := bufio.NewReader(stdout).ReadString('\n')
	stdin.Close()
	io.Copy(io.Discard, stdout)
	werr := cmd.Wait()
	var answer struct {
		ID     int `json:"id"`
		Result struct {
			ProtocolVersion int `json:"protocolVersion"`
		} `json:"result"`
	}
	if rerr != nil || json.Unmarshal([]byte(line), &answer) != nil || answer.ID != 1 || answer.Result.ProtocolVersion != 1 {
		t.Errorf("%s: the answer to initialize %q (%v), want protocol version 1\n%s", cmd, line, rerr, stderr.String())
	}
	if werr != nil {
		t.Errorf("%s: %v after its input closed\n%s", cmd, werr, stderr.String())
	}
}

// TestLauncherMissingPackage: the launcher installed without its system's
// package says which package and version is missing, that it is not
// installed (blaming npm's omit=optional only when that is set), and the
// command that installs it, which does.
func TestLauncherMissingPackage(t *testing.T) {
	needNPM(t)
	d := buildDist(t)
	if runtime.GOOS == "windows" {
		t.Skip("runs the installed command as a Unix one")
	}
	tmp := realTempDir(t)
	env := npmEnv(tmp)

	// Installed globally (a prefix of its own), the launcher alone: npm,
	// offline, leaves the optional packages it cannot fetch out.
	prefix := filepath.Join(tmp, "prefix")
	install := exec.Command("npm", "install", "-g", "--prefix", prefix, d.launcherTgz)
	install.Env = env
	if b, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm install -g launcher: %v\n%s", err, b)
	}
	if got := globalModules(t, prefix); !slices.Equal(got, []string{"spbridge"}) {
		t.Fatalf("installed packages %v, want spbridge alone", got)
	}
	spbridge := globalBin(prefix)
	run := func(extraEnv ...string) string {
		cmd := exec.Command(spbridge, "version")
		cmd.Env = append(slices.Clone(env), extraEnv...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if code := cmd.ProcessState.ExitCode(); code != 1 || len(out) != 0 {
			t.Errorf("spbridge version without %s: exit %d (%v), stdout %q, want exit 1 and nothing", d.platformPkg, code, err, out)
		}
		return stderr.String()
	}
	fix := "npm install -g --prefix " + prefix + " " + filepath.Join("DIST", "npm", d.platformPkg+"-"+d.semver+".tgz")
	msg := run("npm_config_omit=")
	for _, want := range []string{d.platformPkg + "@" + d.semver, "is not installed", "\n  " + fix + "\n",
		"node " + filepath.Join("DIST", "npm", "install.js") + " --prefix " + prefix} {
		if !strings.Contains(msg, want) {
			t.Errorf("the launcher's error has no %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "omit") {
		t.Errorf("the launcher's error blames omit=optional, which is not set:\n%s", msg)
	}
	if msg := run("npm_config_omit=dev,optional"); !strings.Contains(msg, "omit=optional") || !strings.Contains(msg, fix) {
		t.Errorf("with npm_config_omit=dev,optional the launcher's error does not say so:\n%s", msg)
	}
	// npm's own global prefix goes without saying.
	if msg, want := run("npm_config_prefix="+prefix), "\n  npm install -g "+filepath.Join("DIST", "npm", d.platformPkg+"-"+d.semver+".tgz")+"\n"; !strings.Contains(msg, want) {
		t.Errorf("with npm's global prefix %s the launcher's error does not say %q:\n%s", prefix, want, msg)
	}

	// The command it gives installs the package, and spbridge runs.
	args := strings.Fields(strings.Replace(fix, "DIST", d.out, 1))
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = env
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", fix, err, b)
	}
	if got, err := exec.Command(spbridge, "version").Output(); err != nil || string(got) != "spbridge "+d.version+"\n" {
		t.Errorf("spbridge version after %s: %q %v", fix, got, err)
	}

	// A released version, in a project: the registry's package, in the
	// project's folder.
	project := filepath.Join(tmp, "project")
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}
	local := exec.Command("npm", "install", d.launcherTgz)
	local.Dir = project
	local.Env = env
	if b, err := local.CombinedOutput(); err != nil {
		t.Fatalf("npm install launcher: %v\n%s", err, b)
	}
	manifest := filepath.Join(project, "node_modules", "spbridge", "package.json")
	data, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	var pkg map[string]any
	if err := json.Unmarshal(data, &pkg); err != nil {
		t.Fatal(err)
	}
	pkg["version"] = "1.2.3"
	if data, err = json.Marshal(pkg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(manifest, data, 0o644); err != nil {
		t.Fatal(err)
	}
	launch := exec.Command("node", filepath.Join(project, "node_modules", "spbridge", "bin", "spbridge.js"), "version")
	launch.Env = env
	out, _ := launch.CombinedOutput()
	if want := ", in " + project + ":\n  npm install " + d.platformPkg + "@1.2.3\n"; launch.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), want) {
		t.Errorf("a released launcher in a project without %s: exit %d\n%s\nwant %q", d.platformPkg, launch.ProcessState.ExitCode(), out, want)
	}
}
