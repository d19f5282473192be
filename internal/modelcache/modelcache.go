// Package modelcache keeps the models each CLI last listed, by the program
// that listed them, in the state folder's models/, so that a session opens
// with the CLI's real model list before its CLI has said it again: the
// same program (the same file, size and time of change: the same version)
// lists the same models.
package modelcache

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"spbridge/internal/backend"
	"spbridge/internal/regfile"
	"spbridge/internal/statefile"
)

// Cache is the models folder of a state folder.
type Cache struct {
	dir string
}

// New is the cache of state folder state (its models/ folder).
func New(state string) *Cache { return &Cache{dir: filepath.Join(state, "models")} }

// entry is a CLI's file: the program that listed the models, as it was.
type entry struct {
	Program string          `json:"program"`
	Size    int64           `json:"size"`
	ModTime int64           `json:"modTime"` // nanoseconds since 1970
	Models  []backend.Model `json:"models"`
}

// stamp is program's identity as a file: false when it cannot be read.
func stamp(program string) (entry, bool) {
	fi, err := os.Stat(program)
	if err != nil || program == "" {
		return entry{}, false
	}
	return entry{Program: program, Size: fi.Size(), ModTime: fi.ModTime().UnixNano()}, true
}

// path is the file of CLI name.
func (c *Cache) path(name string) (string, bool) {
	if c == nil || name == "" || strings.ContainsAny(name, `/\.`) {
		return "", false
	}
	return filepath.Join(c.dir, name+".json"), true
}

// Load is the models CLI name's program listed last, when that program is
// still the same file; nil when none are kept or it changed.
func (c *Cache) Load(name, program string) []backend.Model {
	path, ok := c.path(name)
	if !ok {
		return nil
	}
	want, ok := stamp(program)
	if !ok {
		return nil
	}
	data, err := regfile.ReadFile(path)
	if err != nil {
		return nil
	}
	var e entry
	if json.Unmarshal(data, &e) != nil || e.Program != want.Program || e.Size != want.Size || e.ModTime != want.ModTime {
		return nil
	}
	return e.Models
}

// Store keeps the models CLI name's program listed (replacing what was
// kept); an empty list, or a program that cannot be read, is not kept.
func (c *Cache) Store(name, program string, models []backend.Model) error {
	path, ok := c.path(name)
	if !ok || len(models) == 0 {
		return nil
	}
	e, ok := stamp(program)
	if !ok {
		return nil
	}
	e.Models = models
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return err
	}
	return statefile.WriteAtomic(path, data)
}
