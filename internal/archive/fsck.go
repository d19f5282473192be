package archive

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"spbridge/internal/canonjson"
)

// LeftoverNote is what a check says of a file an interrupted save left
// behind.
const LeftoverNote = "leftover of an interrupted save, removed at the next save"

// CheckReport is what Inspect finds in a package: problems, and what an
// interrupted save left behind, which is no problem.
type CheckReport struct {
	Problems []string // one a line: a path in the package, then what is wrong
	// Leftovers are the paths, in the package, of the temporary files of an
	// interrupted save and of stored images no conversation references (a
	// save writes images before the conversation that references them, and
	// removes unreferenced ones after it). The next save removes them.
	Leftovers []string
}

// Check examines a package's saved conversation without changing anything
// and returns each problem as one line; see Inspect.
func Check(dir string) ([]string, error) {
	r, err := Inspect(dir)
	if err != nil {
		return nil, err
	}
	return r.Problems, nil
}

// Inspect examines a package's saved conversation without changing anything
// and without following a link: an unreadable, newer or too large
// conversation.json, an image that is missing, too large or does not match
// its hash, images over the cap, stray or unreferenced files, links, and
// modes other than 0600 for files and 0700 for folders are problems; what an
// interrupted save left behind is reported apart. It fails only when dir is
// not a folder. No agent folder is no problem.
func Inspect(dirPath string) (*CheckReport, error) {
	if err := statFolder("check package", dirPath); err != nil {
		return nil, err
	}
	rep := &CheckReport{}
	add := func(format string, args ...any) { rep.Problems = append(rep.Problems, fmt.Sprintf(format, args...)) }
	pkg, err := openDir(dirPath, "")
	if err != nil {
		return nil, fmt.Errorf("check package %s: %w", dirPath, err)
	}
	defer pkg.close()
	agent, err := pkg.sub(AgentDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return rep, nil
	case err != nil:
		add("%s", describeFileError(AgentDir, err))
		return rep, nil
	}
	defer agent.close()
	if afi, err := pkg.lstat(AgentDir); err == nil {
		checkMode(add, AgentDir, afi, dirMode)
	}

	entries, err := agent.entries()
	if err != nil {
		add("agent: %v", err)
		return rep, nil
	}
	hasConv := false
	for _, e := range entries {
		hasConv = hasConv || e.Name() == ConversationFile
	}
	// The conversation first, to know what is a leftover; its lines come
	// after the stray files'.
	var convProblems []string
	addConv := func(format string, args ...any) { convProblems = append(convProblems, fmt.Sprintf(format, args...)) }
	var conv *Conversation
	journaled := 0
	if hasConv {
		data, _, err := agent.readFile(ConversationFile, sizeLimit)
		var tl *TooLargeError
		switch {
		case errors.As(err, &tl):
			addConv("agent/%s: %d bytes, more than the %d spbridge reads (it opens as unreadable)", ConversationFile, tl.Size, tl.Limit)
		case err != nil:
			addConv("%s", describeFileError("agent/"+ConversationFile, err))
		default:
			if cfi, err := agent.lstat(ConversationFile); err == nil {
				checkMode(addConv, "agent/"+ConversationFile, cfi, fileMode)
			}
			conv, _, journaled, err = decodeJournaled(agent, data)
			var verr *VersionError
			var derr *canonjson.DepthError
			switch {
			case errors.As(err, &verr):
				addConv("agent/%s: %v (this spbridge reads format %d)", ConversationFile, err, FormatVersion)
			case errors.As(err, &derr):
				addConv("agent/%s: %v, deeper than spbridge reads (it opens as unreadable)", ConversationFile, err)
			case err != nil:
				addConv("agent/%s: unreadable: %v", ConversationFile, err)
			}
		}
	}
	// A save cleans up, unless the conversation it finds is unreadable and
	// kept as it is.
	cleaned := !hasConv || conv != nil
	for _, e := range entries {
		switch name := e.Name(); {
		case name == ConversationFile, name == ImagesDir:
		case name == RewindsDir && e.IsDir():
		case name == CheckpointsDir && e.IsDir():
		case isJournal(e) && journaled > 0:
			if jfi, err := agent.lstat(name); err == nil {
				checkMode(add, "agent/"+name, jfi, fileMode)
			}
		case cleaned && isJournal(e):
			// A journal of another conversation.json: a whole save
			// interrupted before it removed it, or another program's.
			rep.Leftovers = append(rep.Leftovers, "agent/"+name)
		case cleaned && isTemp(name) && e.Type().IsRegular():
			rep.Leftovers = append(rep.Leftovers, "agent/"+name)
		default:
			add("agent/%s: stray file", name)
		}
	}
	rep.Problems = append(rep.Problems, convProblems...)

	images, ierr := agent.sub(ImagesDir)
	if ierr == nil {
		defer images.close()
	}
	referenced := make(map[string]bool)
	if conv != nil {
		rep.Problems = append(rep.Problems, checkImages(images, errors.Is(ierr, fs.ErrNotExist), conv, referenced)...)
	}
	switch {
	case errors.Is(ierr, fs.ErrNotExist):
	case ierr != nil:
		add("%s", describeFileError("agent/"+ImagesDir, ierr))
	default:
		if ifi, err := agent.lstat(ImagesDir); err == nil {
			checkMode(add, "agent/images", ifi, dirMode)
		}
		files, err := images.entries()
		if err != nil {
			add("agent/images: %v", err)
		}
		for _, e := range files {
			name, rel := e.Name(), "agent/images/"+e.Name()
			if e.Type()&fs.ModeSymlink != 0 {
				add("%s", describeFileError(rel, &LinkError{Path: rel}))
				continue
			}
			if cleaned && isTemp(name) && e.Type().IsRegular() {
				rep.Leftovers = append(rep.Leftovers, rel)
				continue
			}
			hash, ok := parseImageFileName(name)
			if !ok {
				add("%s: stray file (not an image name)", rel)
				continue
			}
			if efi, err := images.lstat(name); err == nil && efi.Mode().IsRegular() {
				checkMode(add, rel, efi, fileMode)
			}
			if !cleaned || referenced[name] {
				continue
			}
			// An image no conversation references is what a save interrupted
			// between storing it and writing the conversation leaves, or between
			// writing the conversation and removing what it no longer needs.
			if data, _, err := images.readFile(name, ImageCap); err == nil && hashHex(data) == hash {
				rep.Leftovers = append(rep.Leftovers, rel)
			} else {
				add("%s: not referenced by the conversation", rel)
			}
		}
	}
	return rep, nil
}

// describeFileError is a problem line for an error met at rel.
func describeFileError(rel string, err error) string {
	var le *LinkError
	switch {
	case errors.As(err, &le):
		return rel + ": a symbolic link (spbridge follows no link in agent/; a save refuses it and leaves it alone)"
	case errors.Is(err, errNotFolder):
		return rel + ": not a folder"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	msg := err.Error()
	if after, ok := strings.CutPrefix(msg, rel+" "); ok {
		msg = after // "X is not a regular file" reads "X: is not a regular file"
	}
	return rel + ": " + msg
}

// checkImages checks every image block of conv: its name, its file in the
// images folder (nil when there is none, missing true, or when it is not a
// real folder, whose own line says so) and its bytes, and the cap over them.
// It records the referenced file names.
func checkImages(images *dir, missing bool, conv *Conversation, referenced map[string]bool) []string {
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
			sizes[hash] = 0
			if images == nil {
				if missing {
					add("agent/images/%s: missing (it reads as imageOmitted)", name)
				}
				continue
			}
			data, _, err := images.readFile(name, ImageCap)
			var tl *TooLargeError
			var le *LinkError
			switch {
			case errors.Is(err, fs.ErrNotExist):
				add("agent/images/%s: missing (it reads as imageOmitted)", name)
				continue
			case errors.As(err, &le):
				continue // the listing of the folder reports it
			case errors.As(err, &tl) && tl.Size > imageCheckLimit:
				add("agent/images/%s: %d bytes, more than the image cap of %d (it reads as imageOmitted)", name, tl.Size, tl.Limit)
				continue
			case errors.As(err, &tl):
				// Read as an image when its bytes match (readStoredImage).
				got, size, _, err := images.hashFile(name, imageCheckLimit)
				switch {
				case err != nil:
					add("%s (it reads as imageOmitted)", describeFileError("agent/images/"+name, err))
				case got != hash:
					add("agent/images/%s: bytes hash to %s (it reads as imageOmitted)", name, got)
				default:
					add("agent/images/%s: %d bytes, more than the image cap of %d (the next save omits it and every older image)", name, size, ImageCap)
					sizes[hash] = size
					order = append(order, hash)
				}
				continue
			case err != nil:
				add("%s (it reads as imageOmitted)", describeFileError("agent/images/"+name, err))
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
		if s, ok := summarize(path); ok {
			out = append(out, s)
			return fs.SkipDir
		}
		return nil
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

// summarize describes the package at path, and reports false when it holds
// no conversation. Nothing is read through a link: an agent folder or
// conversation.json that is a link is listed as unreadable.
func summarize(path string) (Summary, bool) {
	afi, err := os.Lstat(filepath.Join(path, AgentDir))
	switch {
	case err != nil:
		return Summary{}, false
	case isLink(afi):
		return Summary{Path: path, Modified: afi.ModTime(), Unreadable: (&LinkError{Path: AgentDir}).Error()}, true
	case !afi.IsDir():
		return Summary{}, false
	}
	pkg, err := openDir(path, "")
	if err != nil {
		return Summary{}, false
	}
	defer pkg.close()
	agent, err := pkg.sub(AgentDir)
	if err != nil {
		return Summary{}, false
	}
	defer agent.close()
	cfi, err := agent.lstat(ConversationFile)
	if err != nil {
		return Summary{}, false
	}
	s := Summary{Path: path, Modified: cfi.ModTime()}
	data, _, err := agent.readFile(ConversationFile, sizeLimit)
	if err == nil {
		var conv *Conversation
		if conv, _, _, err = decodeJournaled(agent, data); err == nil {
			s.Items, s.Provider, s.Model, s.Cost = len(conv.Items), conv.Provider, conv.Model, conv.EstimatedCost
			if s.Cost.Kind == "" {
				s.Cost.Kind = CostUnknown
			}
		}
	}
	if err != nil {
		s.Unreadable = describeLoadError(err)
	}
	return s, true
}
