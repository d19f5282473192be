package codex

import (
	"bytes"
	"slices"

	"github.com/tidwall/gjson"

	"spbridge/internal/itemmap"
	"spbridge/internal/jsonline"
	"spbridge/internal/regfile"
)

// patchTail is how much of the end of codex's session log is read for the
// patch of a file change.
const patchTail = 8 << 20

// execFileChange gives a completed file_change item of codex exec (line,
// before the mapper maps it) the changes it made, for its view: codex exec
// --json reports only each file and its kind, and codex's own log of the
// thread (CODEX_HOME/sessions/…/rollout-…-THREAD.jsonl) has the rest. Its
// FileChange item_completed event carries each file's unified diff (an
// added or deleted file's text); without one, the model's apply_patch call
// has the patch, whose hunks are placed in the file as it is now. The
// change taken is the newest one of the log not given to an item before
// whose files are the item's. Any other line, or a log that is missing,
// unreadable or without such a change, leaves the item as codex exec
// reported it.
func (b *Backend) execFileChange(m *itemmap.Codex, line []byte) {
	if !bytes.Contains(line, []byte(`"file_change"`)) || !bytes.Contains(line, []byte(`"item.completed"`)) ||
		jsonline.TooDeep(line) || !gjson.ValidBytes(line) {
		return
	}
	ev := gjson.ParseBytes(line)
	it := ev.Get("item")
	if ev.Get("type").String() != "item.completed" || it.Get("type").String() != "file_change" ||
		it.Get("status").String() != "completed" {
		return
	}
	var paths []string
	for _, c := range it.Get("changes").Array() {
		paths = append(paths, c.Get("path").String())
	}
	thread := b.Thread()
	if len(paths) == 0 || thread == "" {
		return
	}
	data, ok := rolloutTailOf(b.codexHomeDir(), thread, patchTail)
	if !ok {
		return
	}
	if b.patchThread != thread || b.patchUsed == nil {
		b.patchThread, b.patchUsed = thread, make(map[string]bool)
	}
	call, changes, applied := findPatch(data, paths, b.Opts.Dir, b.patchUsed, regfile.ReadFile)
	if call == "" {
		return
	}
	b.patchUsed[call] = true
	id := it.Get("id").String()
	m.ExecCall(id, call)
	m.ExecFileChanges(id, changes)
	if !applied {
		// codex may write its FileChange event to the log just after it
		// prints the item: look again at the next lines.
		b.patchLate = &latePatch{item: id, call: call, paths: paths}
	}
}

// latePatch is a file_change item whose diffs came from the model's patch
// before codex logged its FileChange event, which says more (a deleted
// file's text, the hunks as codex placed them).
type latePatch struct {
	item, call string
	paths      []string
	tries      int
}

// latePatchTries is how many of the lines that follow the item look for
// its FileChange event.
const latePatchTries = 2

// execLatePatch looks for the FileChange event of the item latePatch names
// in the thread's log, and returns the update of the item's view when
// codex has logged it by now.
func (b *Backend) execLatePatch(m *itemmap.Codex) itemmap.Result {
	lp := b.patchLate
	if lp == nil {
		return itemmap.Result{}
	}
	lp.tries++
	if lp.tries >= latePatchTries {
		b.patchLate = nil
	}
	data, ok := rolloutTailOf(b.codexHomeDir(), b.Thread(), patchTail)
	if !ok {
		return itemmap.Result{}
	}
	for l := range bytes.SplitSeq(data, []byte("\n")) {
		if !bytes.Contains(l, []byte(`"FileChange"`)) || !bytes.Contains(l, []byte(lp.call)) || jsonline.TooDeep(l) || !gjson.ValidBytes(l) {
			continue
		}
		p := gjson.GetBytes(l, "payload")
		if p.Get("type").String() != "item_completed" || p.Get("item.type").String() != "FileChange" || p.Get("item.id").String() != lp.call {
			continue
		}
		b.patchLate = nil
		changes, ok := inOrder(appliedChanges(p.Get("item.changes")), lp.paths)
		if !ok {
			return itemmap.Result{}
		}
		return m.ExecFileChangesLate(lp.item, changes)
	}
	return itemmap.Result{}
}

// patchCall is one apply_patch call of a session log: its call id, the
// patch and the folder its relative paths are in, and codex's report of
// the change once it was applied (a FileChange item's changes).
type patchCall struct {
	id, patch, dir string
	applied        gjson.Result
}

// findPatch finds, in data (lines of a session log), the newest apply_patch
// call not in used whose files are paths (in any order), and returns its
// call id and its changes in the order of paths ("" when there is none),
// and whether they are codex's report of the applied change rather than
// the patch's. Relative paths of a patch are against the folder of the
// turn it came in, else dir; read reads a file as it is now.
func findPatch(data []byte, paths []string, dir string, used map[string]bool, read func(string) ([]byte, error)) (string, []itemmap.CodexFileChange, bool) {
	var calls []*patchCall
	byID := map[string]*patchCall{}
	call := func(id string) *patchCall {
		c := byID[id]
		if c == nil {
			c = &patchCall{id: id}
			byID[id] = c
			calls = append(calls, c)
		}
		return c
	}
	cwd := dir
	for l := range bytes.SplitSeq(data, []byte("\n")) {
		turnContext := bytes.Contains(l, []byte(`"turn_context"`))
		if !turnContext && !bytes.Contains(l, []byte(`"apply_patch"`)) && !bytes.Contains(l, []byte(`"FileChange"`)) {
			continue
		}
		if jsonline.TooDeep(l) || !gjson.ValidBytes(l) {
			continue
		}
		v := gjson.ParseBytes(l)
		p := v.Get("payload")
		switch typ := v.Get("type").String(); {
		case typ == "turn_context":
			if d := p.Get("cwd").String(); d != "" {
				cwd = d
			}
		case typ == "response_item" && p.Get("name").String() == "apply_patch":
			input := p.Get("input")
			if p.Get("type").String() == "function_call" {
				input = gjson.Get(p.Get("arguments").String(), "input")
			}
			if id := p.Get("call_id").String(); id != "" && input.Type == gjson.String {
				c := call(id)
				c.patch, c.dir = input.String(), cwd
			}
		case typ == "event_msg" && p.Get("type").String() == "item_completed" && p.Get("item.type").String() == "FileChange":
			if id := p.Get("item.id").String(); id != "" && p.Get("item.changes").IsObject() {
				call(id).applied = p.Get("item.changes")
			}
		}
	}
	for _, c := range slices.Backward(calls) {
		if used[c.id] {
			continue
		}
		var changes []itemmap.CodexFileChange
		switch {
		case c.applied.Exists():
			changes = appliedChanges(c.applied)
		case c.patch != "":
			if files, ok := parsePatch(c.patch); ok {
				changes = patchChanges(files, c.dir, read)
			}
		}
		if ordered, ok := inOrder(changes, paths); ok {
			return c.id, ordered, c.applied.Exists()
		}
	}
	return "", nil, false
}

// appliedChanges reads the changes of a FileChange item of the session
// log: an object of absolute paths, each {type, unified_diff, move_path}
// (an update) or {type, content} (an add or a delete).
func appliedChanges(changes gjson.Result) []itemmap.CodexFileChange {
	var out []itemmap.CodexFileChange
	changes.ForEach(func(k, v gjson.Result) bool {
		c := itemmap.CodexFileChange{Path: k.String(), Kind: v.Get("type").String(), MovePath: v.Get("move_path").String()}
		switch c.Kind {
		case patchAdd, patchDelete:
			c.Diff = v.Get("content").String()
		default:
			c.Diff = v.Get("unified_diff").String()
		}
		out = append(out, c)
		return true
	})
	return out
}

// inOrder returns changes in the order of paths when they are the changes
// of exactly those files.
func inOrder(changes []itemmap.CodexFileChange, paths []string) ([]itemmap.CodexFileChange, bool) {
	if len(changes) != len(paths) {
		return nil, false
	}
	out := make([]itemmap.CodexFileChange, 0, len(paths))
	for _, p := range paths {
		i := slices.IndexFunc(changes, func(c itemmap.CodexFileChange) bool { return c.Path == p })
		if i < 0 {
			return nil, false
		}
		out = append(out, changes[i])
	}
	return out, true
}
