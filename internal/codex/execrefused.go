package codex

import (
	"bytes"
	"os"

	"spbridge/internal/itemmap"
)

// logTail is how far an exec turn has read codex's log of its thread for
// the calls codex refused.
type logTail struct {
	path string
	off  int64
}

// execRefused gives the mapper the lines codex added to its log of the
// thread (CODEX_HOME/sessions/…/rollout-…-THREAD.jsonl) since the turn's
// last look, whole lines only, and returns what they show: the commands and
// patches codex refused without running them, which codex exec --json
// reports nothing of (see itemmap.Codex.ExecLog). The turn's lines follow
// the mark markRollout took; a log that is missing or unreadable gives
// nothing, and a part of it longer than execHistoryMax is skipped.
func (b *Backend) execRefused(m *itemmap.Codex) itemmap.Result {
	var r itemmap.Result
	thread := b.Thread()
	if thread == "" {
		return r
	}
	var info os.FileInfo
	if b.logRead.path != "" {
		fi, err := os.Lstat(b.logRead.path)
		if err != nil || !fi.Mode().IsRegular() {
			b.logRead = logTail{}
		} else {
			info = fi
		}
	}
	if b.logRead.path == "" {
		p, fi := rolloutPath(b.codexHomeDir(), thread)
		if p == "" {
			return r
		}
		b.logRead, info = logTail{path: p}, fi
		if p == b.rolloutFrom.path && fi.Size() >= b.rolloutFrom.size {
			b.logRead.off = b.rolloutFrom.size
		}
	}
	size := info.Size()
	switch {
	case size <= b.logRead.off:
		return r
	case size-b.logRead.off > execHistoryMax:
		b.logRead.off = size
		return r
	}
	data, ok := readRollout(b.logRead.path, b.logRead.off, size)
	if !ok {
		return r
	}
	end := bytes.LastIndexByte(data, '\n')
	if end < 0 {
		return r // a line codex is still writing
	}
	b.logRead.off += int64(end + 1)
	for l := range bytes.SplitSeq(data[:end], []byte("\n")) {
		lr := m.ExecLog(l)
		r.Changes = append(r.Changes, lr.Changes...)
	}
	return r
}
