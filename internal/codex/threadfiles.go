package codex

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"spbridge/internal/history"
)

// The files of one Codex thread. A thread begins in
// rollout-<time>-<thread>.jsonl; each thread/revert (a "paginated"
// thread's) leaves the file as it is and goes on in a new one,
// rollout-<time>-<thread>_<rollout>.jsonl, whose first line (session_meta)
// names the file it continues (history_base: that file's rollout id — the
// thread id for the first — and the byte where the part it keeps ends).
// The thread as it is now is the newest file's base, read to that byte,
// recursively, then the newest file. Rollout ids are time-ordered, so the
// newest file of a thread is told by its name. Codex may compress a
// rollout untouched for a while into rollout-….jsonl.zst, which reads the
// same.

// rolloutName is what a rollout's file name says: the thread's id and the
// file's rollout id (the thread id for the thread's first file); ok false
// when the name is not a rollout's.
func rolloutName(path string) (thread, rollout string, ok bool) {
	name := filepath.Base(path)
	if !strings.HasPrefix(name, "rollout-") {
		return "", "", false
	}
	name, ok = strings.CutSuffix(history.TrimCompressed(name), ".jsonl")
	if !ok {
		return "", "", false
	}
	last := func(s string) (string, bool) {
		if len(s) < 36 {
			return "", false
		}
		id := s[len(s)-36:]
		return id, strings.Count(id, "-") == 4
	}
	id, ok := last(name)
	if !ok {
		return "", "", false
	}
	if rest := name[:len(name)-36]; strings.HasSuffix(rest, "_") {
		if th, ok := last(rest[:len(rest)-1]); ok {
			return th, id, true
		}
	}
	return id, id, true
}

// isRollout reports whether a file's name is a rollout's, plain or
// compressed.
func isRollout(name string) bool {
	n := history.TrimCompressed(name)
	return strings.HasPrefix(n, "rollout-") && strings.HasSuffix(n, ".jsonl")
}

// currentFiles keeps, of each thread's files, the one the thread goes on
// in: the newest rollout (the greatest rollout id; the first file's is
// the least), a plain file before a compressed one of the same name
// (codex removes the plain one once the other is written).
func currentFiles(files []history.File) []history.File {
	type pick struct {
		i       int
		rollout string
		plain   bool
	}
	best := map[string]pick{}
	var order []string
	for i, f := range files {
		thread, rollout, ok := rolloutName(f.Path)
		if !ok {
			continue
		}
		if thread == rollout {
			rollout = "" // the first file
		}
		p := pick{i: i, rollout: rollout, plain: !history.Compressed(f.Path)}
		old, seen := best[thread]
		switch {
		case !seen:
			order = append(order, thread)
		case rollout < old.rollout, rollout == old.rollout && (old.plain || !p.plain):
			continue
		}
		best[thread] = p
	}
	out := make([]history.File, 0, len(order))
	for _, th := range order {
		out = append(out, files[best[th].i])
	}
	return out
}

// historyBase is what a rollout's first line says of the file it
// continues: that file's rollout id and where the part kept of it ends;
// ok false when it continues none.
type historyBase struct {
	rollout string
	end     int64
}

// baseOf reads the first line of the rollout at path: the base it
// continues, if any.
func baseOf(path string) (historyBase, bool, error) {
	sf, err := history.OpenSession(path, 0)
	if err != nil {
		return historyBase{}, false, err
	}
	defer sf.Close()
	var hb historyBase
	found := false
	sf.Head(func(line []byte) bool {
		if !bytes.Contains(line, []byte(`"history_base"`)) {
			return false
		}
		v, ok := history.Object(line)
		if !ok || v.Get("type").String() != "session_meta" {
			return false
		}
		b := v.Get("payload.history_base")
		if b.IsObject() {
			hb = historyBase{rollout: b.Get("thread_id").String(), end: b.Get("end_byte_offset").Int()}
			found = hb.rollout != ""
		}
		return false
	})
	return hb, found, nil
}

// findRollout is the file of the rollout id under sessions (the folder of
// the YYYY/MM/DD folders), looking first in dir; "" when there is none.
func findRollout(sessions, dir, rollout string) string {
	if strings.ContainsAny(rollout, `/\*?[`) {
		return ""
	}
	match := func(paths []string) string {
		var got []string
		for _, p := range paths {
			if _, r, ok := rolloutName(p); ok && r == rollout {
				got = append(got, p)
			}
		}
		// A plain file before a compressed one of the same name.
		slices.SortFunc(got, func(a, b string) int { return cmp.Compare(len(a), len(b)) })
		if len(got) == 0 {
			return ""
		}
		return got[0]
	}
	p, _ := filepath.Glob(filepath.Join(dir, "rollout-*"+rollout+".jsonl*"))
	if m := match(p); m != "" || sessions == "" {
		return m
	}
	p, _ = filepath.Glob(filepath.Join(sessions, "*", "*", "*", "rollout-*"+rollout+".jsonl*"))
	return match(p)
}

// sessionsDir is the sessions folder a rollout at path is in
// (sessions/YYYY/MM/DD/rollout-…), "" when it is not in one.
func sessionsDir(path string) string {
	d := filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(path))))
	if filepath.Base(d) != "sessions" {
		return ""
	}
	return d
}

// maxPages bounds how many files of one thread are read.
const maxPages = 1000

// segment is a part of a thread to read: a file, to end bytes (-1: to its
// end).
type segment struct {
	path string
	end  int64
}

// threadSegments are the parts of the thread whose newest file is path,
// its first first; notices say what of it cannot be found.
func threadSegments(path string) ([]segment, []string) {
	segs := []segment{{path: path, end: -1}}
	var notices []string
	seen := map[string]bool{filepath.Clean(path): true}
	sessions := sessionsDir(path)
	cur := path
	for len(segs) < maxPages {
		hb, ok, err := baseOf(cur)
		if err != nil || !ok {
			break
		}
		base := findRollout(sessions, filepath.Dir(cur), hb.rollout)
		if base == "" {
			notices = append(notices, fmt.Sprintf("The start of this Codex thread (rollout %s, which %s continues) was not found: the conversation begins where %s does.",
				hb.rollout, filepath.Base(cur), filepath.Base(cur)))
			break
		}
		if seen[filepath.Clean(base)] {
			notices = append(notices, fmt.Sprintf("The files of this Codex thread continue each other in a circle (at %s): it is read from there.", filepath.Base(cur)))
			break
		}
		seen[filepath.Clean(base)] = true
		segs = append(segs, segment{path: base, end: hb.end})
		cur = base
	}
	slices.Reverse(segs)
	return segs, notices
}

// threadSource reads a thread's parts one after the other, each ended by
// a newline. A part before the newest that cannot be read, or not as far
// as the newest says, is read as far as it reads, and a notice says so;
// an error of the newest is the read's.
type threadSource struct {
	segs    []segment
	notices []string
	cur     *history.SessionFile
	r       io.Reader
	n       int64 // bytes of the current part read
	last    byte  // the last byte given
}

// Open reads the thread whose newest file is path, its first file first
// (history.Opener).
func (historyStore) Open(path string) (history.Source, error) {
	segs, notices := threadSegments(path)
	ts := &threadSource{segs: segs, notices: notices}
	if len(segs) == 1 {
		if err := ts.next(); err != nil {
			return nil, err
		}
	}
	return ts, nil
}

// next opens the first part left.
func (ts *threadSource) next() error {
	s := ts.segs[0]
	sf, err := history.OpenSession(s.path, 0)
	if err != nil {
		return err
	}
	ts.cur, ts.r, ts.n = sf, io.Reader(sf), 0
	if s.end >= 0 {
		ts.r = io.LimitReader(sf, s.end)
	}
	return nil
}

func (ts *threadSource) Read(p []byte) (int, error) {
	for {
		if len(ts.segs) == 0 {
			return 0, io.EOF
		}
		newest := len(ts.segs) == 1
		if ts.cur == nil {
			if err := ts.next(); err != nil {
				if newest {
					return 0, err
				}
				ts.notices = append(ts.notices, fmt.Sprintf("A part of this Codex thread could not be read (%v): the conversation holds what the other parts hold.", err))
				ts.segs = ts.segs[1:]
				continue
			}
		}
		n, err := ts.r.Read(p)
		ts.n += int64(n)
		if n > 0 {
			ts.last = p[n-1]
		}
		if err == nil || n > 0 && errors.Is(err, io.EOF) {
			if n > 0 {
				return n, nil
			}
			continue
		}
		if newest && !errors.Is(err, io.EOF) {
			return 0, err
		}
		s := ts.segs[0]
		switch {
		case !errors.Is(err, io.EOF):
			ts.notices = append(ts.notices, fmt.Sprintf("A part of this Codex thread could not be read to its end (%v): the conversation holds what was read of it.", err))
		case s.end >= 0 && ts.n < s.end:
			ts.notices = append(ts.notices, fmt.Sprintf("A revert of this Codex thread points at byte %d of %s, which is %d bytes long: the part was read to its end.",
				s.end, filepath.Base(s.path), ts.n))
		}
		ts.cur.Close()
		ts.cur, ts.segs = nil, ts.segs[1:]
		if ts.last != '\n' && ts.n > 0 && len(p) > 0 {
			// Each part ends its last line.
			p[0], ts.last = '\n', '\n'
			return 1, nil
		}
	}
}

func (ts *threadSource) Close() error {
	if ts.cur != nil {
		return ts.cur.Close()
	}
	return nil
}

func (ts *threadSource) Notices() []string { return ts.notices }
