package checkpoint

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"unicode/utf8"

	"spbridge/internal/canonjson"
)

// IndexVersion is the version of agent/checkpoints/index.json this
// spbridge reads and writes.
const IndexVersion = 1

// maxIndexDepth bounds how deep the index nests: an entry's conversation
// part is the caller's, so there is room for it.
const maxIndexDepth = 64

// Entry is one turn's change set as the index keeps it, or a rewind's.
type Entry struct {
	// Key is the id of the notice item that ends the turn, or the id of a
	// rewind.
	Key      string
	Kind     string // EntryTurn or EntryRewind
	UserItem string // a turn's user item
	Files    []FileChange
	Skipped  []Skipped
	// Folders are the folders a turn created or deleted; for a rewind,
	// those it made or removed.
	Folders []FolderChange
	// Undoes are, for a rewind, the keys of the entries it undid, newest
	// first.
	Undoes []string
	// Conversation is, for a rewind, what the caller kept of the
	// conversation it cut (any JSON value canonjson encodes), stored and
	// given back as it is.
	Conversation any
	raw          map[string]any // the entry as read: members this spbridge does not know are written back
}

// The kinds of entry.
const (
	EntryTurn   = "turn"
	EntryRewind = "rewind"
)

// index is agent/checkpoints/index.json.
type index struct {
	since   string // the user item of the first turn checkpointed
	entries []Entry
	dropped []string // keys of entries dropped by the policy, oldest first
	raw     map[string]any
}

// VersionError reports an index written by a newer spbridge: it is read
// by none of this one's operations and never written over.
type VersionError struct{ Version string }

func (e *VersionError) Error() string {
	return "agent/checkpoints/index.json is version " + e.Version + ", newer than this spbridge reads (" + strconv.Itoa(IndexVersion) + ")"
}

// decodeIndex reads an index. Members it does not know are kept.
func decodeIndex(data []byte) (*index, error) {
	v, err := canonjson.DecodeDepth(data, maxIndexDepth)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("not an object")
	}
	ver, ok := m["spbridgeCheckpoints"].(json.Number)
	if !ok {
		return nil, errors.New("no spbridgeCheckpoints version")
	}
	if n, err := strconv.Atoi(string(ver)); err != nil || n != IndexVersion {
		if err == nil && n > IndexVersion {
			return nil, &VersionError{Version: string(ver)}
		}
		return nil, fmt.Errorf("unknown version %s", ver)
	}
	idx := &index{raw: m}
	idx.since, _ = m["since"].(string)
	if list, ok := m["dropped"].([]any); ok {
		for _, k := range list {
			if s, ok := k.(string); ok {
				idx.dropped = append(idx.dropped, s)
			}
		}
	}
	list, ok := m["entries"].([]any)
	if !ok && m["entries"] != nil {
		return nil, errors.New("entries is not a list")
	}
	for i, e := range list {
		em, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("entry %d is not an object", i)
		}
		en, err := decodeEntry(em)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		idx.entries = append(idx.entries, en)
	}
	return idx, nil
}

func decodeEntry(m map[string]any) (Entry, error) {
	e := Entry{raw: m}
	e.Key, _ = m["key"].(string)
	e.Kind, _ = m["kind"].(string)
	e.UserItem, _ = m["userItem"].(string)
	e.Conversation = m["conversation"]
	if e.Key == "" {
		return e, errors.New("no key")
	}
	if e.Kind != EntryTurn && e.Kind != EntryRewind {
		return e, fmt.Errorf("unknown kind %q", e.Kind)
	}
	for _, u := range asList(m["undoes"]) {
		if s, ok := u.(string); ok {
			e.Undoes = append(e.Undoes, s)
		}
	}
	for i, f := range asList(m["files"]) {
		fm, ok := f.(map[string]any)
		if !ok {
			return e, fmt.Errorf("file %d is not an object", i)
		}
		fc, err := decodeFile(fm)
		if err != nil {
			return e, fmt.Errorf("file %d: %w", i, err)
		}
		e.Files = append(e.Files, fc)
	}
	for i, s := range asList(m["skipped"]) {
		sm, ok := s.(map[string]any)
		if !ok {
			return e, fmt.Errorf("skipped %d is not an object", i)
		}
		root, _ := getBytes(sm, "root")
		rel, _ := getBytes(sm, "rootRel")
		p, _ := getBytes(sm, "path")
		reason, _ := sm["reason"].(string)
		e.Skipped = append(e.Skipped, Skipped{Root: root, Path: p, Reason: reason, rel: rel})
	}
	for i, f := range asList(m["folders"]) {
		fm, ok := f.(map[string]any)
		if !ok {
			return e, fmt.Errorf("folder %d is not an object", i)
		}
		var fc FolderChange
		var err error
		if fc.Root, err = getBytes(fm, "root"); err != nil || fc.Root == "" {
			return e, fmt.Errorf("folder %d: no folder", i)
		}
		if fc.Path, err = getBytes(fm, "path"); err != nil || !validRel(fc.Path) {
			return e, fmt.Errorf("folder %d: a path that is not relative", i)
		}
		if fc.Change = Kind(str(fm["change"])); fc.Change != Created && fc.Change != Deleted {
			return e, fmt.Errorf("folder %d: change %q", i, fc.Change)
		}
		if fc.rel, err = getBytes(fm, "rootRel"); err != nil {
			fc.rel = ""
		}
		e.Folders = append(e.Folders, fc)
	}
	return e, nil
}

func decodeFile(m map[string]any) (FileChange, error) {
	var f FileChange
	var err error
	if f.Root, err = getBytes(m, "root"); err != nil || f.Root == "" {
		return f, errors.New("no folder")
	}
	if f.Path, err = getBytes(m, "path"); err != nil || !validRel(f.Path) {
		return f, errors.New("a path that is not relative")
	}
	if f.rel, err = getBytes(m, "rootRel"); err != nil {
		f.rel = ""
	}
	f.Change = Kind(str(m["change"]))
	f.Added, f.Removed, f.Binary = num(m["added"]), num(m["removed"]), m["binary"] == true
	if f.Before, err = decodeVersion(m["before"]); err != nil {
		return f, fmt.Errorf("before: %w", err)
	}
	if f.After, err = decodeVersion(m["after"]); err != nil {
		return f, fmt.Errorf("after: %w", err)
	}
	switch {
	case f.Change == Created && f.Before == nil && f.After != nil:
	case f.Change == Deleted && f.Before != nil && f.After == nil:
	case f.Change == Modified && f.Before != nil && f.After != nil:
	default:
		return f, fmt.Errorf("change %q does not fit its sides", f.Change)
	}
	return f, nil
}

func decodeVersion(v any) (*Version, error) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("not an object")
	}
	ver := &Version{SHA256: str(m["sha256"]), Size: int64(num(m["size"]))}
	mode, err := strconv.ParseUint(str(m["mode"]), 8, 32)
	if err != nil {
		return nil, errors.New("a mode that is not octal")
	}
	ver.Mode = fs.FileMode(mode) & fs.ModePerm
	if _, ok := m["link"]; ok {
		if ver.Link, err = getBytes(m, "link"); err != nil || ver.Link == "" {
			return nil, errors.New("a damaged link")
		}
		ver.Mode |= fs.ModeSymlink
		if ver.SHA256 != "" {
			return nil, errors.New("a link with contents")
		}
	} else if !validHash(ver.SHA256) || ver.Size < 0 {
		return nil, errors.New("no valid sha256")
	}
	return ver, nil
}

func (idx *index) value() map[string]any {
	m := maps.Clone(idx.raw)
	if m == nil {
		m = make(map[string]any)
	}
	m["spbridgeCheckpoints"] = IndexVersion
	m["since"] = idx.since
	entries := make([]any, len(idx.entries))
	for i, e := range idx.entries {
		entries[i] = e.value()
	}
	m["entries"] = entries
	dropped := make([]any, len(idx.dropped))
	for i, k := range idx.dropped {
		dropped[i] = k
	}
	m["dropped"] = dropped
	return m
}

func (e Entry) value() map[string]any {
	m := maps.Clone(e.raw)
	if m == nil {
		m = make(map[string]any)
	}
	m["key"], m["kind"] = e.Key, e.Kind
	delete(m, "userItem")
	if e.UserItem != "" {
		m["userItem"] = e.UserItem
	}
	files := make([]any, len(e.Files))
	for i, f := range e.Files {
		files[i] = f.value()
	}
	m["files"] = files
	skipped := make([]any, len(e.Skipped))
	for i, s := range e.Skipped {
		sm := map[string]any{"reason": s.Reason}
		putRoot(sm, s.Root, s.rel)
		putBytes(sm, "path", s.Path)
		skipped[i] = sm
	}
	m["skipped"] = skipped
	delete(m, "folders")
	if len(e.Folders) > 0 {
		folders := make([]any, len(e.Folders))
		for i, f := range e.Folders {
			fm := map[string]any{"change": string(f.Change)}
			putRoot(fm, f.Root, f.rel)
			putBytes(fm, "path", f.Path)
			folders[i] = fm
		}
		m["folders"] = folders
	}
	delete(m, "undoes")
	if e.Kind == EntryRewind {
		undoes := make([]any, len(e.Undoes))
		for i, k := range e.Undoes {
			undoes[i] = k
		}
		m["undoes"] = undoes
	}
	delete(m, "conversation")
	if e.Conversation != nil {
		m["conversation"] = e.Conversation
	}
	return m
}

// Value is the change as the index and the front ends write it (JSON).
func (f FileChange) value() map[string]any {
	m := map[string]any{"change": string(f.Change), "added": f.Added, "removed": f.Removed, "binary": f.Binary}
	putRoot(m, f.Root, f.rel)
	putBytes(m, "path", f.Path)
	if f.Before != nil {
		m["before"] = f.Before.value()
	}
	if f.After != nil {
		m["after"] = f.After.value()
	}
	return m
}

func (v *Version) value() map[string]any {
	m := map[string]any{"size": v.Size, "mode": strconv.FormatUint(uint64(v.Mode.Perm()), 8)}
	if v.Mode&fs.ModeSymlink != 0 {
		putBytes(m, "link", v.Link)
	} else {
		m["sha256"] = v.SHA256
	}
	return m
}

// Value is the change set as JSON values (canonjson encodes them): for
// the audit record, `conversation show --json` and the editor protocol.
func (c ChangeSet) Value() map[string]any {
	return Entry{Files: c.Files, Skipped: c.Skipped}.changesValue()
}

// changesValue is the entry's files and skipped files.
func (e Entry) changesValue() map[string]any {
	v := e.value()
	return map[string]any{"files": v["files"], "skipped": v["skipped"]}
}

// Value is the entry as the index writes it.
func (e Entry) Value() map[string]any { return e.value() }

// putRoot sets m's root, and its rootRel when rel is set.
func putRoot(m map[string]any, root, rel string) {
	putBytes(m, "root", root)
	if rel != "" {
		putBytes(m, "rootRel", rel)
	}
}

// resolve makes the roots the index keeps relative to the folder holding
// the package (rootRel) absolute again from base, that folder where it
// is now; the others stay as written. base "" resolves none.
func (idx *index) resolve(base string) {
	at := func(root, rel string) string {
		if base == "" || rel == "" {
			return root
		}
		if rel == "." {
			return base
		}
		if !validRel(rel) {
			return root
		}
		return filepath.Join(base, filepath.FromSlash(rel))
	}
	for i := range idx.entries {
		e := &idx.entries[i]
		for j := range e.Files {
			f := &e.Files[j]
			f.Root, f.rel = at(f.Root, f.rel), ""
		}
		for j := range e.Folders {
			f := &e.Folders[j]
			f.Root, f.rel = at(f.Root, f.rel), ""
		}
		for j := range e.Skipped {
			f := &e.Skipped[j]
			f.Root, f.rel = at(f.Root, f.rel), ""
		}
	}
}

// related is the index to write: a copy whose roots inside base (the
// folder holding the package) also say their path relative to it, so
// that they follow the package when it moves with its folder.
func (idx *index) related(base string) *index {
	out := *idx
	if base == "" {
		return &out
	}
	rel := func(root string) string {
		r, err := filepath.Rel(base, root)
		if err != nil || !filepath.IsAbs(root) || (r != "." && !filepath.IsLocal(r)) {
			return ""
		}
		return filepath.ToSlash(r)
	}
	out.entries = make([]Entry, len(idx.entries))
	for i, e := range idx.entries {
		e.Files = slices.Clone(e.Files)
		for j := range e.Files {
			e.Files[j].rel = rel(e.Files[j].Root)
		}
		e.Folders = slices.Clone(e.Folders)
		for j := range e.Folders {
			e.Folders[j].rel = rel(e.Folders[j].Root)
		}
		e.Skipped = slices.Clone(e.Skipped)
		for j := range e.Skipped {
			e.Skipped[j].rel = rel(e.Skipped[j].Root)
		}
		out.entries[i] = e
	}
	return &out
}

// putBytes sets m[k] to s when it is UTF-8; else to s shown with its
// other bytes escaped (Display), and m[k+"Bytes"] to its bytes in
// base64, which a reader takes first.
func putBytes(m map[string]any, k, s string) {
	if utf8.ValidString(s) {
		m[k] = s
		return
	}
	m[k] = Display(s)
	m[k+"Bytes"] = base64.StdEncoding.EncodeToString([]byte(s))
}

func getBytes(m map[string]any, k string) (string, error) {
	if b, ok := m[k+"Bytes"].(string); ok {
		data, err := base64.StdEncoding.DecodeString(b)
		return string(data), err
	}
	s, ok := m[k].(string)
	if !ok {
		return "", errors.New("missing " + k)
	}
	return s, nil
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func num(v any) int {
	n, ok := v.(json.Number)
	if !ok {
		return 0
	}
	i, err := strconv.Atoi(string(n))
	if err != nil || i < 0 {
		return 0
	}
	return i
}
