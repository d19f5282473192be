package search

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"spbridge/internal/archive"
	"spbridge/internal/history"
	"spbridge/internal/sessionindex"
)

// Packages is the set of the packages the sessions index ix keeps that are
// still there (of the folder cwd when not ""): each read with its journal,
// as an open reads it, when its conversation file or journal changed.
func Packages(ix *sessionindex.Index, cwd string) Set {
	if cwd != "" {
		cwd = filepath.Clean(cwd)
	}
	return Set{Kind: KindPackage, Cwd: cwd, List: func() ([]Source, error) {
		page, err := ix.List(cwd, "", int(^uint(0)>>1), sessionindex.Present)
		if err != nil {
			return nil, err
		}
		out := make([]Source, 0, len(page.Entries))
		for _, e := range page.Entries {
			out = append(out, PackageSource(e.Package, e.Cwd, e.Title, e.UpdatedAt))
		}
		return out, nil
	}}
}

// PackageSource is the package pkg as a source: its stamp is the size and
// modification time of its conversation file and journal.
func PackageSource(pkg, cwd, title string, updated time.Time) Source {
	agent := filepath.Join(pkg, archive.AgentDir)
	stamp := fileStamp(filepath.Join(agent, archive.ConversationFile)) + " " +
		fileStamp(filepath.Join(agent, archive.JournalFile)) + " " + strconv.Quote(title)
	return Source{
		Key: "package:" + pkg, Kind: KindPackage, Ref: pkg, Cwd: cwd, Title: title, Updated: updated, Stamp: stamp,
		Load: func() ([]Segment, int64, error) {
			p, err := archive.Open(pkg, archive.KindDocument, true)
			if err != nil {
				return nil, 0, err
			}
			var n int64
			for _, name := range []string{archive.ConversationFile, archive.JournalFile} {
				if fi, err := os.Stat(filepath.Join(agent, name)); err == nil {
					n += fi.Size()
				}
			}
			if p.Unreadable != "" {
				return nil, n, fmt.Errorf("%s: %s", pkg, p.Unreadable)
			}
			return Segments(p.Conv.Items), n, nil
		},
	}
}

// fileStamp is a file's size and modification time, "-" when it is not
// there.
func fileStamp(path string) string {
	fi, err := os.Lstat(path)
	if err != nil {
		return "-"
	}
	return strconv.FormatInt(fi.Size(), 10) + ":" + strconv.FormatInt(fi.ModTime().UnixNano(), 10)
}

// CLIs is the set of the CLIs' own sessions that opts lists (history.List;
// its Cwd is the set's folder): each imported, as `spbridge import` would,
// when its file changed.
func CLIs(opts history.Options) Set {
	cwd := opts.Cwd
	if cwd != "" {
		if abs, err := filepath.Abs(cwd); err == nil {
			cwd = abs
		}
	}
	return Set{Kind: KindCLI, Cwd: cwd, List: func() ([]Source, error) {
		list, err := history.List(opts)
		if err != nil {
			return nil, err
		}
		out := make([]Source, 0, len(list))
		for _, e := range list {
			out = append(out, CLISource(e, opts.Stores))
		}
		return out, nil
	}}
}

// CLISource is a CLI's own session as a source: its stamp is its file's
// size and modification time, and its title.
func CLISource(e history.Entry, stores []history.Store) Source {
	return Source{
		Key: "cli:" + e.Backend + ":" + e.Path, Kind: KindCLI, Ref: e.Backend + ":" + e.ID,
		Cwd: cleanOrEmpty(e.Cwd), Title: e.Title, Updated: e.UpdatedAt,
		Stamp: strconv.FormatInt(e.Size, 10) + ":" + strconv.FormatInt(e.UpdatedAt.UnixNano(), 10) + " " + strconv.Quote(e.Title),
		Load: func() ([]Segment, int64, error) {
			conv, _, err := history.Import(e, history.ImportOptions{Stores: stores})
			if err != nil {
				return nil, e.Size, err
			}
			return Segments(conv.Items), e.Size, nil
		},
	}
}

func cleanOrEmpty(p string) string {
	if p == "" {
		return ""
	}
	return filepath.Clean(p)
}
