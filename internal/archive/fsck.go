package archive

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Check examines a package's saved conversation without changing anything
// and returns each problem as one line: an unreadable or newer
// conversation.json, an image that is missing or does not match its hash,
// images over the cap, stray or unreferenced files, links, and modes other
// than 0600 for files and 0700 for folders. It fails only when dir is not a
// folder. No agent folder is no problem.
func Check(dir string) ([]string, error) {
	if err := statFolder("check package", dir); err != nil {
		return nil, err
	}
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	agent := filepath.Join(dir, AgentDir)
	afi, err := os.Lstat(agent)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		add("agent: %v", err)
		return problems, nil
	case afi.Mode()&fs.ModeSymlink != 0:
		add("agent: a symbolic link")
		return problems, nil
	case !afi.IsDir():
		add("agent: not a folder")
		return problems, nil
	}
	checkMode(add, "agent", afi, dirMode)

	entries, err := os.ReadDir(agent)
	if err != nil {
		add("agent: %v", err)
		return problems, nil
	}
	hasConv := false
	for _, e := range entries {
		switch name := e.Name(); name {
		case ConversationFile:
			hasConv = true
		case ImagesDir:
		default:
			add("agent/%s: stray file", name)
		}
	}
	convPath := filepath.Join(agent, ConversationFile)
	var conv *Conversation
	if !hasConv {
		add("agent/%s: missing", ConversationFile)
	} else if data, _, err := readRegular(convPath); err != nil {
		add("agent/%s: %v", ConversationFile, err)
	} else {
		if cfi, err := os.Lstat(convPath); err == nil {
			checkMode(add, "agent/"+ConversationFile, cfi, fileMode)
		}
		conv, err = Decode(data)
		var verr *VersionError
		switch {
		case errors.As(err, &verr):
			add("agent/%s: %v (this spbridge reads format %d)", ConversationFile, err, FormatVersion)
		case err != nil:
			add("agent/%s: unreadable: %v", ConversationFile, err)
		}
	}

	referenced := make(map[string]bool)
	if conv != nil {
		problems = append(problems, checkImages(agent, conv, referenced)...)
	}

	imagesDir := filepath.Join(agent, ImagesDir)
	ifi, err := os.Lstat(imagesDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		add("agent/images: %v", err)
	case !ifi.IsDir():
		add("agent/images: not a folder")
	default:
		checkMode(add, "agent/images", ifi, dirMode)
		files, err := os.ReadDir(imagesDir)
		if err != nil {
			add("agent/images: %v", err)
		}
		for _, e := range files {
			rel := "agent/images/" + e.Name()
			if _, ok := parseImageFileName(e.Name()); !ok {
				add("%s: stray file (not an image name)", rel)
				continue
			}
			if conv != nil && !referenced[e.Name()] {
				add("%s: not referenced by the conversation", rel)
			}
			if efi, err := os.Lstat(filepath.Join(imagesDir, e.Name())); err == nil && efi.Mode().IsRegular() {
				checkMode(add, rel, efi, fileMode)
			}
		}
	}
	return problems, nil
}

// checkImages checks every image block of conv: its name, its file and its
// bytes, and the cap over them. It records the referenced file names.
func checkImages(agent string, conv *Conversation, referenced map[string]bool) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	sizes := make(map[string]int64)
	var order []string // hashes newest first
	for i := len(conv.History) - 1; i >= 0; i-- {
		content := conv.History[i].Content
		for j := len(content) - 1; j >= 0; j-- {
			b := content[j]
			if b.Type() != BlockImage {
				continue
			}
			where := fmt.Sprintf("history[%d].content[%d]", i, j)
			hash, name := b.String("sha256"), imageFileName(b)
			switch {
			case !validHash(hash):
				add("%s: image name %q is not 64 lowercase hex digits", where, hash)
				continue
			case name == "":
				add("%s: image type %q has no file extension", where, b.String("mimeType"))
				continue
			}
			referenced[name] = true
			if _, seen := sizes[hash]; seen {
				continue
			}
			path := filepath.Join(agent, ImagesDir, name)
			data, _, err := readRegular(path)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					add("agent/images/%s: missing (it reads as imageOmitted)", name)
				} else {
					add("agent/images/%s: %v", name, err)
				}
				sizes[hash] = 0
				continue
			}
			if got := hashHex(data); got != hash {
				add("agent/images/%s: bytes hash to %s (it reads as imageOmitted)", name, got)
			}
			sizes[hash] = int64(len(data))
			order = append(order, hash)
		}
	}
	var total int64
	for _, h := range order {
		total += sizes[h]
	}
	if total > ImageCap {
		add("agent/images: %d bytes of images, over the cap of %d", total, ImageCap)
	}
	return problems
}

func checkMode(add func(string, ...any), rel string, fi fs.FileInfo, want fs.FileMode) {
	if fi.Mode()&fs.ModeSymlink != 0 {
		add("%s: a symbolic link", rel)
		return
	}
	if got := fi.Mode().Perm(); got != want {
		add("%s: mode %04o, want %04o", rel, got, want)
	}
}

// Summary describes one package that holds a conversation.
type Summary struct {
	Path       string
	Items      int
	Provider   string
	Model      string
	Cost       Cost
	Modified   time.Time // of conversation.json
	Unreadable string    // why it could not be read, or ""
}

// List finds every package under root that holds a conversation (a folder
// with agent/conversation.json), without descending into packages or
// following links, and summarizes each, sorted by path.
func List(root string) ([]Summary, error) {
	if err := statFolder("list", root); err != nil {
		return nil, err
	}
	var out []Summary
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == root {
				return err
			}
			return nil // an unreadable folder deep inside is skipped
		}
		if !d.IsDir() {
			return nil
		}
		if d.Name() == AgentDir && path != root {
			return fs.SkipDir
		}
		convPath := filepath.Join(path, AgentDir, ConversationFile)
		cfi, err := os.Lstat(convPath)
		if err != nil || !cfi.Mode().IsRegular() {
			return nil
		}
		s := Summary{Path: path, Modified: cfi.ModTime()}
		data, _, err := readRegular(convPath)
		if err == nil {
			var conv *Conversation
			if conv, err = Decode(data); err == nil {
				s.Items, s.Provider, s.Model, s.Cost = len(conv.Items), conv.Provider, conv.Model, conv.EstimatedCost
				if s.Cost.Kind == "" {
					s.Cost.Kind = CostUnknown
				}
			}
		}
		if err != nil {
			s.Unreadable = describeLoadError(err)
		}
		out = append(out, s)
		return fs.SkipDir
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", root, err)
	}
	slices.SortFunc(out, func(a, b Summary) int {
		if a.Path < b.Path {
			return -1
		}
		if a.Path > b.Path {
			return 1
		}
		return 0
	})
	return out, nil
}
