package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"spbridge/internal/archive"
	"spbridge/internal/sessionindex"
	"spbridge/internal/statedir"
)

// A folder that is not a document package (a repository, any folder) keeps
// its conversation where serve keeps the conversation of an editor session
// that named no package: a package of its own under the state folder's
// sessions/, listed in the sessions index with the folder as its working
// folder. `spbridge run DIR` continues the one most recently used there, and
// an editor opening the folder through serve lists the same ones
// (session/list by cwd): one store, and nothing written into the folder.

// sessionsFolder is where the state folder keeps the packages of
// conversations that have no document (serve's SessionsDir).
func sessionsFolder(state string) string { return filepath.Join(state, "sessions") }

// isPackage reports whether dir is a document package: a folder holding
// document.json, or one holding a conversation already
// (agent/conversation.json: the packages serve keeps for editor threads,
// and those import makes, have no document.json).
func isPackage(dir string) (bool, error) {
	for _, name := range []string{documentFile, filepath.Join(archive.AgentDir, archive.ConversationFile)} {
		fi, err := os.Stat(filepath.Join(dir, name))
		switch {
		case err == nil && !fi.IsDir():
			return true, nil
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return false, err
		}
	}
	return false, nil
}

// folderConversation returns the package in the state folder that keeps
// the conversation of the plain folder dir: of the packages under
// sessions/ whose working folder is dir (absolute, as serve records an
// editor's cwd), the one most recently opened or run; "" when there is
// none.
func folderConversation(state, dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	sessions, err := filepath.Abs(sessionsFolder(state))
	if err != nil {
		return "", err
	}
	page, err := sessionindex.New(state).List(abs, "", 1, func(e sessionindex.Entry) bool {
		return !e.Hidden && filepath.Dir(e.Package) == sessions && sessionindex.Present(e)
	})
	if err != nil || len(page.Entries) == 0 {
		return "", err
	}
	return page.Entries[0].Package, nil
}

// newFolderConversation makes a new package in the state folder for a
// conversation of the plain folder dir (as serve makes one for an editor
// session), not yet in the sessions index: recordFolderTurn puts it there.
func newFolderConversation(state string) (string, error) {
	sessions, err := filepath.Abs(sessionsFolder(state))
	if err != nil {
		return "", err
	}
	pkg := filepath.Join(sessions, archive.NewID())
	if err := os.MkdirAll(pkg, 0o700); err != nil {
		return "", fmt.Errorf("make a package for the folder's conversation: %w", err)
	}
	return pkg, nil
}

// recordFolderTurn records a turn of the conversation pkg of the plain
// folder dir in the sessions index, as serve records an editor session's
// turn: its time, its title from the first message, and the CLI session
// it ran on (so that a listing shows the conversation once).
func recordFolderTurn(state, pkg, dir, message, cli, cliSession string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	ix := sessionindex.New(state)
	if err := ix.Record(pkg, abs, message); err != nil {
		return err
	}
	if cli != "" && cliSession != "" {
		return ix.Ran(pkg, cli, cliSession)
	}
	return nil
}

// conversationPackage is the package that holds the conversation a command
// reading one (conversation show, transcript, export, rewind, audit…) is
// given as pkg: pkg itself when it is a document package, else, for a
// plain folder, the package in the state folder keeping its conversation
// (folderConversation), else pkg (the command then says it holds none).
// Nothing at pkg is "no such package", as for every command taking one.
func conversationPackage(pkg string) (string, error) {
	if err := checkPackage(pkg); err != nil {
		return "", err
	}
	if fi, err := os.Stat(pkg); err != nil || !fi.IsDir() {
		return pkg, nil // said by whatever opens it
	}
	if ok, err := isPackage(pkg); err != nil || ok {
		return pkg, err
	}
	state, err := statedir.Dir()
	if err != nil {
		return "", err
	}
	found, err := folderConversation(state, pkg)
	if err != nil {
		return "", err
	}
	if found == "" {
		return pkg, nil
	}
	return found, nil
}
