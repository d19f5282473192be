// Package checkpoint knows what a session's folders looked like before
// each turn, and puts them back.
//
// A Tracker follows the session's folders (its working folder and its
// additional folders): Begin before a turn, End after it (completed,
// failed or interrupted) gives the turn's ChangeSet, every file created,
// modified or deleted whatever changed it (an edit tool, a shell command,
// apply_patch, an MCP tool, a subprocess, or the user meanwhile: a change
// made during the turn is the turn's). Both walk the folders' metadata
// only (path, size, modification time in ns, mode, and inode, device and
// change time where the system has them), as git's index does: a file
// whose metadata matches the baseline is not read. The baseline is a
// cache per folder in the state folder (<cacheDir>/<hash of the folder's
// path>/: an index and the contents, compressed, by SHA-256); the first
// turn in a folder reads every file once to fill it. The cache is an
// optimisation only: missing or damaged, it is rebuilt.
//
// Not walked: .git, what the folder's .gitignore files (every level) and
// .git/info/exclude ignore (git's global excludes and a .gitignore above
// the folder are not read), the paths Options.Exclude names (spbridge's
// own), devices, pipes and sockets. Files over Options.MaxFileSize (10
// MiB) are followed by their metadata only: a turn that changes one, or
// one that cannot be read, names it in ChangeSet.Skipped. Links are kept
// as links (their target text), never followed; every file is opened
// through an os.Root of its folder, so nothing is read or written through
// a link out of it.
//
// A Store is a package's checkpoints, in agent/checkpoints/ (beside
// agent/images/): index.json (canonical JSON, {"spbridgeCheckpoints":1,
// ...}: one Entry per turn that changed something, keyed by the id of the
// notice item that ends the turn, naming its user item; docs/format.md
// says the layout) and blobs/<sha256>, the earlier contents of the files
// turns modified or deleted, each stored once. A folder inside the one
// holding the package is kept relative to it as well (rootRel), so the
// checkpoints follow a package moved with its folder. Record keeps a turn's
// change set; the Policy keeps the last 100 entries and at most 512 MiB
// of contents, the oldest dropped first.
//
// Plan plans a rewind: undoing the entries named and every later one,
// newest first, so each file goes back to how it was before the earliest
// of them (restored, or deleted when a turn created it); the folders
// they created go once empty, the empty ones they deleted come back (the
// walks note the folders too, beside the files). A file that
// differs from what the newest of them left was changed since by someone
// else: a conflict, left alone unless forced. A plan changes nothing (a
// dry run shows it); Apply carries it out inside the folders only, and
// is itself checkpointed: its entry (kind "rewind") keeps what it
// replaced, and PlanUndo of its id puts that back. Contents missing or
// damaged stop Apply before it changes anything. A package without
// checkpoints answers ErrNoCheckpoints. A rewind entry carries the
// caller's conversation part (Plan.Conversation) as it is.
package checkpoint
