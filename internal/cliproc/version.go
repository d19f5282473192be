package cliproc

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// Version returns the first line of what `path --version` prints with the
// environment env (nil: this process's), or "" when it cannot be run within
// ten seconds. A program is asked once while its file stays the same (the
// same file, size and modification time): every session of a serve asks,
// and a CLI that starts another program to answer (codex's npm wrapper)
// costs a fifth of a second of CPU each time. A program updated or
// replaced is asked again; an answer of "" is not kept.
func Version(path string, env []string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return runVersion(path, env)
	}
	if v, ok := versions.get(path, fi); ok {
		return v
	}
	v, _, _ := versions.group.Do(path, func() (any, error) {
		v := runVersion(path, env)
		if v != "" {
			versions.put(path, fi, v)
		}
		return v, nil
	})
	return v.(string)
}

// versions is what each program path answered, with the file it was.
var versions = versionCache{m: map[string]knownVersion{}}

type versionCache struct {
	group singleflight.Group

	mu sync.Mutex
	m  map[string]knownVersion
}

type knownVersion struct {
	file    os.FileInfo
	version string
}

func (c *versionCache) get(path string, fi os.FileInfo) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.m[path]
	if !ok || !os.SameFile(k.file, fi) || k.file.Size() != fi.Size() || !k.file.ModTime().Equal(fi.ModTime()) {
		return "", false
	}
	return k.version, true
}

func (c *versionCache) put(path string, fi os.FileInfo, v string) {
	c.mu.Lock()
	c.m[path] = knownVersion{file: fi, version: v}
	c.mu.Unlock()
}

func runVersion(path string, env []string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}
