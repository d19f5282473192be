package audit

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// A conversation's audit log is the log of its document: a copied package
// gets a log of its own at its first turn after the copy, a moved one keeps
// its log. spbridge tells them apart by the package that wrote the log's
// last record (FieldPackage; the index keeps it for each log):
//
//   - the same folder (the same path, or os.SameFile): the log goes on;
//   - another folder that no longer exists: the package was moved (or
//     the other one removed), and the log goes on here;
//   - another folder that still holds a conversation: this package is a
//     copy of it, and gets a new log whose first record names the log and
//     the head it was copied from (FieldCopiedFrom).
//
// Its limits: a copy whose original is gone (moved, removed) before the
// copy's first turn continues the log, as a move would, and the original
// moved back after the copy ran a turn reads as a copy (it gets the new
// log, with the copy's as its parent). A log written by an earlier
// version names no package until its next record: the first package to
// run a turn on it keeps it, the other copies get their own at their next
// turn. Two copies running their first turns at once may both get new
// logs.

// FieldPackage is the record's member naming the package (its absolute
// path) the turn ran in.
const FieldPackage = "package"

// FieldCopiedFrom is the member of a copy's first record naming the log and
// the head it was copied from: {"log": ID, "records": N, "last": TAG,
// "package": PATH}.
const FieldCopiedFrom = "copiedFrom"

// Parent is the log a copied package's log was copied from, and its head
// then.
type Parent struct {
	Head
	Package string // the package that held it
}

// Value is p as a record's FieldCopiedFrom member.
func (p Parent) Value() map[string]any {
	return map[string]any{"log": p.ID, "records": json.Number(strconv.FormatInt(p.Records, 10)), "last": p.Last, "package": p.Package}
}

// ParentOf reads a record's FieldCopiedFrom member; ok is false when it has
// none or it is malformed.
func ParentOf(rec map[string]any) (p Parent, ok bool) {
	m, _ := rec[FieldCopiedFrom].(map[string]any)
	if m == nil {
		return Parent{}, false
	}
	p.ID, _ = m["log"].(string)
	p.Last, _ = m["last"].(string)
	p.Package, _ = m["package"].(string)
	p.Records = number(m["records"])
	return p, p.ID != "" && identityRE.MatchString(p.ID) && p.Records > 0
}

// LogFor is the log the next record of a package at pkg (absolute), whose
// conversation goes on with log id, is appended to, under stateDir: id,
// or, when the package is a copy of the one that wrote id's last record, a
// new log (its id) and the parent it was copied from (nil when not a
// copy). A state folder with no key or index, or an index that cannot be
// read, knows of no other package: id.
func LogFor(stateDir, id, pkg string) (string, *Parent, error) {
	holder, head, err := holderOf(stateDir, id)
	if err != nil || holder == "" || holder == pkg {
		return id, nil, nil
	}
	if sameFolder(holder, pkg) || !holdsConversation(holder) {
		return id, nil, nil // the same, or moved here
	}
	newID, err := newLogID()
	if err != nil {
		return "", nil, err
	}
	return newID, &Parent{Head: head, Package: holder}, nil
}

// holderOf is the package the index names for log id, and the log's head.
func holderOf(stateDir, id string) (string, Head, error) {
	appendMu.Lock()
	defer appendMu.Unlock()
	key, err := loadKey(stateDir, false)
	if errors.Is(err, ErrNoKey) {
		return "", Head{}, nil
	}
	if err != nil {
		return "", Head{}, err
	}
	ix, err := readIndex(stateDir, key)
	if err != nil {
		return "", Head{}, err
	}
	e := ix.logs[id]
	if e == nil {
		return "", Head{}, nil
	}
	return e.pkg, Head{ID: id, Records: e.records, Last: e.last}, nil
}

// sameFolder reports whether a and b are one folder.
func sameFolder(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// holdsConversation reports whether dir is a folder holding a conversation
// (agent/conversation.json).
func holdsConversation(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, "agent", "conversation.json"))
	return err == nil && fi.Mode().IsRegular()
}

// newLogID is a new random log id, in the form of a conversation's
// identity (an upper-case UUID).
func newLogID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("audit log id: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%X-%X-%X-%X-%X", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), nil
}

// Segment is one log of a lineage: its id, and its records (those up to
// the head a copy was made at, for a log that is a parent); Err says why
// its records could not be read (a log removed or pruned).
type Segment struct {
	ID      string
	Records []map[string]any
	Err     error
}

// maxAncestry bounds how many parents ReadAncestry follows.
const maxAncestry = 64

// ReadAncestry reads the log at path and the logs it was copied from
// (FieldCopiedFrom of each one's first record), the oldest first, each
// parent's records cut at the head the copy was made at. A parent that
// cannot be read ends the lineage with its Err set.
func ReadAncestry(path string) ([]Segment, error) {
	stateDir, id := stateOf(path)
	recs, err := Read(path)
	if err != nil {
		return nil, err
	}
	line := []Segment{{ID: id, Records: recs}}
	seen := map[string]bool{id: true}
	for len(line) < maxAncestry {
		first := line[0].Records
		if len(first) == 0 {
			break
		}
		p, ok := ParentOf(first[0])
		if !ok || seen[p.ID] {
			break
		}
		seen[p.ID] = true
		ppath, err := Path(stateDir, p.ID)
		if err != nil {
			break
		}
		precs, err := Read(ppath)
		if err != nil {
			line = append([]Segment{{ID: p.ID, Err: err}}, line...)
			break
		}
		if int64(len(precs)) > p.Records {
			precs = precs[:p.Records]
		}
		line = append([]Segment{{ID: p.ID, Records: precs}}, line...)
	}
	return line, nil
}

// OwnRecords is recs without those another package wrote: records whose
// FieldPackage names another folder that still holds a conversation (a
// copy that shared the log before spbridge kept a log per copy). A record
// naming no package, pkg itself, or a folder gone (pkg before a move) is
// kept. It returns how many it left out.
func OwnRecords(recs []map[string]any, pkg string) ([]map[string]any, int) {
	other := map[string]bool{}
	var own []map[string]any
	for _, rec := range recs {
		p, _ := rec[FieldPackage].(string)
		if p != "" && p != pkg {
			o, seen := other[p]
			if !seen {
				o = !sameFolder(p, pkg) && holdsConversation(p)
				other[p] = o
			}
			if o {
				continue
			}
		}
		own = append(own, rec)
	}
	return own, len(recs) - len(own)
}
