package archive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strconv"

	"spbridge/internal/canonjson"
)

// JournalFile is the journal of a package's conversation, beside
// conversation.json in the agent folder: what changed since the
// conversation.json it names was written, one record a turn's end (see
// Append). A reader applies it when it names the SHA-256 of the
// conversation.json it finds, and ignores it otherwise; a whole save
// (Write) removes it once the new conversation.json is in place.
//
// Its first line names the conversation.json it applies on, each further
// line is a record: the changes since the line before it. Every line is
// the CRC-32C of its JSON text in 8 hex digits, a space, the text (one
// line of compact canonical JSON) and a newline. A line that is cut short
// or does not match its CRC ends the journal: the records before it are
// read, those after it are not.
//
//	header: {"base":"<sha256 hex of conversation.json>","spbridgeJournal":1}
//	record: {"items":N,"set":{"<index>":item,...},
//	         "historyFrom":K,"history":[message,...],"top":{...}}
//
// A record says the conversation's items are N long, those at the indices
// of set replaced or added (every index from the old length on is in
// set), the history kept up to K and the messages of history appended,
// and, when top is present, every top-level field but items and history
// as top holds it (formatVersion included).
const JournalFile = "conversation.journal"

// journalVersion is the header's spbridgeJournal.
const journalVersion = 1

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// journal is what a package knows of the journal it writes.
type journal struct {
	// records is the number of records the package appended to the file
	// since it started it; 0 when it has none of its own (the next
	// append starts the file anew, replacing whatever is there).
	records int
	size    int64
	st      stamp // the file as the last append left it
}

// journalLine appends v as one journal line to buf.
func journalLine(buf []byte, v any) ([]byte, error) {
	start := len(buf)
	buf = append(buf, "00000000 "...)
	buf, err := canonjson.AppendCompact(buf, v)
	if err != nil {
		return nil, err
	}
	crc := crc32.Checksum(buf[start+9:], crcTable)
	const digits = "0123456789abcdef"
	for i := range 8 {
		buf[start+i] = digits[(crc>>(28-4*i))&0xf]
	}
	return append(buf, '\n'), nil
}

// parseJournalLine reads one line (without its newline); false when it
// does not match its CRC or is not a JSON object.
func parseJournalLine(line []byte) (map[string]any, bool) {
	if len(line) < 10 || line[8] != ' ' {
		return nil, false
	}
	var sum [4]byte
	if _, err := hex.Decode(sum[:], line[:8]); err != nil || hex.EncodeToString(sum[:]) != string(line[:8]) {
		return nil, false // lower-case digits only: one changed byte is a changed line
	}
	want := uint32(sum[0])<<24 | uint32(sum[1])<<16 | uint32(sum[2])<<8 | uint32(sum[3])
	body := line[9:]
	if crc32.Checksum(body, crcTable) != want {
		return nil, false
	}
	// A record nests its top-level fields one level deeper than the file.
	v, err := canonjson.DecodeDepth(body, MaxConversationDepth+1)
	if err != nil {
		return nil, false
	}
	m, ok := v.(map[string]any)
	return m, ok
}

// applyJournal applies to top, the value of a conversation.json whose
// bytes hash to base, the records of the journal data when its header
// names base, up to the first line that is cut short, corrupt or does not
// apply. It returns the number of records applied (0 for a journal of
// another conversation.json).
func applyJournal(top map[string]any, base [sha256.Size]byte, data []byte) int {
	applied := 0
	for n := 0; ; n++ {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return applied // the end, or a line cut short
		}
		rec, ok := parseJournalLine(data[:i])
		data = data[i+1:]
		if !ok {
			return applied
		}
		if n == 0 {
			if v, _ := rec["spbridgeJournal"].(json.Number); v != json.Number(strconv.Itoa(journalVersion)) {
				return 0
			}
			if b, _ := rec["base"].(string); b != hex.EncodeToString(base[:]) {
				return 0
			}
			continue
		}
		if !applyRecord(top, rec) {
			return applied
		}
		applied++
	}
}

// count reads a record's count field: a number from 0 to max.
func count(v any, max int) (int, bool) {
	num, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(string(num))
	if err != nil || n < 0 || n > max || strconv.Itoa(n) != string(num) {
		return 0, false
	}
	return n, true
}

// applyRecord applies one record to top when it is well formed and
// applies (its items and messages read as conversation.json's would);
// false, with top unchanged, when not.
func applyRecord(top, rec map[string]any) bool {
	items, ok := top["items"].([]any)
	if !ok && top["items"] != nil {
		return false
	}
	history, ok := top["history"].([]any)
	if !ok && top["history"] != nil {
		return false
	}
	for k := range rec {
		switch k {
		case "items", "set", "historyFrom", "history", "top":
		default:
			return false
		}
	}
	set, _ := rec["set"].(map[string]any)
	if rec["set"] != nil && set == nil {
		return false
	}
	n, ok := count(rec["items"], len(items)+len(set))
	if !ok {
		return false
	}
	next := make([]any, n)
	copy(next, items)
	fresh := 0
	for key, v := range set {
		i, ok := count(json.Number(key), n-1)
		m, isMap := v.(map[string]any)
		if !ok || !isMap || checkItem(m) != nil {
			return false
		}
		if i >= len(items) {
			fresh++
		}
		next[i] = m
	}
	if fresh != max(n-len(items), 0) {
		return false // a new index without its item
	}
	from, ok := count(rec["historyFrom"], len(history))
	if !ok {
		return false
	}
	added, _ := rec["history"].([]any)
	if rec["history"] != nil && added == nil {
		return false
	}
	for _, v := range added {
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		if _, err := decodeMessage(m, nil); err != nil {
			return false
		}
	}
	shell, _ := rec["top"].(map[string]any)
	if rec["top"] != nil {
		if shell == nil || shell["items"] != nil || shell["history"] != nil {
			return false
		}
		if _, err := fromValue(shell); err != nil {
			return false
		}
	}
	if shell != nil {
		for k := range top {
			if k != "items" && k != "history" {
				delete(top, k)
			}
		}
		for k, v := range shell {
			top[k] = v
		}
	}
	top["items"] = next
	top["history"] = append(history[:from:from], added...)
	return true
}

// Journaled is the number of records of the journal the package applies
// on its conversation.json: those it read at the open, or those it
// appended since (Append); 0 when none. Like Write, it must not run at the
// same time as a Write.
func (p *Package) Journaled() int { return p.jr.records + p.jrRead }

// JournalSize is the size of the journal the package appended to, 0 when
// none; SavedSize the size of its conversation.json. A writer compares
// them to decide when to write the whole conversation again.
func (p *Package) JournalSize() int64 { return p.jr.size }

// SavedSize is the size of conversation.json as the package last read or
// wrote it (0 when none).
func (p *Package) SavedSize() int64 {
	if !p.jsonKnown {
		return 0
	}
	return p.jsonSize
}

// Append makes a snapshot durable as Write does, at the cost of what
// changed rather than of the whole conversation: it appends to the
// journal (and syncs) one record of what changed since the conversation
// the package last made durable (by a Write, an Append, or the open that
// read it), after storing the images it references that are not stored
// yet. conversation.json is left as it is: readers apply the journal on
// it (Open), and the next Write folds it in and removes it.
//
// When there is nothing to append on (no conversation.json the package
// wrote or read and that is still there as it left it, a conversation
// read with a journal, a journal that failed to append, the keep switch
// off, an empty or preserved conversation), Append is Write. Like Write,
// it changes only what the package remembers of its files and must not
// run at the same time as another Write or Append.
func (p *Package) Append(s *Snapshot) (*SaveReport, error) {
	if p.Kind != KindDocument || !s.keep || s.preserved || s.conv.IsEmpty() || p.durable == nil || !p.jsonKnown {
		return p.Write(s)
	}
	conv := s.conv
	omit, keepImages := capImages(conv.History)
	if p.durable == p.jsonPrint {
		// conversation.json's own fingerprint stays as it is.
		p.durable = p.durable.clone()
	}
	// From here on the fingerprint is the snapshot's: on any way out but
	// the record appended, the package no longer knows what is durable,
	// and its next save is whole.
	rec, err := p.durable.advance(conv, omit)
	if err != nil {
		p.durable = nil
		return &SaveReport{}, fmt.Errorf("encode conversation: %w", err)
	}
	if rec == nil {
		return &SaveReport{}, nil // nothing changed since
	}
	r, err := p.appendRecord(rec, keepImages)
	if errors.Is(err, errWriteWhole) {
		p.durable = nil
		return p.Write(s)
	}
	if err != nil {
		p.durable, p.jr = nil, journal{}
	}
	return r, err
}

// errWriteWhole is appendRecord's error when the record cannot be
// appended but the conversation may be written whole.
var errWriteWhole = errors.New("write the conversation whole")

// appendRecord stores the images keep names that are not stored yet, then
// appends rec to the journal (after a header when the package starts
// it); errWriteWhole when the files are not the ones the package knows.
func (p *Package) appendRecord(rec map[string]any, keep map[string]Block) (*SaveReport, error) {
	line := p.jrBuf[:0]
	var err error
	if p.jr.records == 0 {
		line, err = journalLine(line, map[string]any{"base": p.SavedHash(), "spbridgeJournal": json.Number(strconv.Itoa(journalVersion))})
		if err != nil {
			return &SaveReport{}, fmt.Errorf("encode conversation: %w", err)
		}
	}
	if line, err = journalLine(line, rec); err != nil {
		return &SaveReport{}, fmt.Errorf("encode conversation: %w", err)
	}
	if cap(line) <= maxJournalBuf {
		p.jrBuf = line[:0]
	}
	if p.jr.size+int64(len(line)) > sizeLimit {
		return &SaveReport{}, errWriteWhole
	}
	t, err := p.openTree()
	if err != nil {
		return &SaveReport{}, fmt.Errorf("save conversation: %w", err)
	}
	defer t.close()
	if t.agent == nil {
		return &SaveReport{}, errWriteWhole
	}
	if st, ok := t.agent.lstamp(ConversationFile); !ok || st != p.jsonStamp {
		return &SaveReport{}, errWriteWhole // not the file the package knows
	}
	fi, err := t.agent.lstat(JournalFile)
	switch {
	case err == nil && isLink(fi):
		return &SaveReport{}, &LinkError{Path: t.agent.rel(JournalFile)}
	case p.jr.records > 0 && (err != nil || stampOf(fi) != p.jr.st):
		return &SaveReport{}, errWriteWhole // changed by another
	}
	r := &SaveReport{}
	var made madeBySave
	if err := p.saveImages(context.Background(), t, keep, r, &made); err != nil {
		return r, err
	}
	if err := p.appendJournal(t.agent, line); err != nil {
		return r, fmt.Errorf("save conversation: %w", err)
	}
	r.Written = append(r.Written, AgentDir+"/"+JournalFile)
	return r, nil
}

// maxJournalBuf is the largest buffer a package keeps for its next
// record.
const maxJournalBuf = 4 << 20

// appendJournal writes line at the journal's end and syncs it; the first
// line of a journal the package starts (its header with it) replaces the
// file whole, through a temporary file.
func (p *Package) appendJournal(agent *dir, line []byte) error {
	if p.jr.records == 0 {
		if err := agent.writeFileAtomic(JournalFile, line); err != nil {
			return err
		}
		if err := agent.sync(); err != nil {
			return err
		}
		st, ok := agent.lstamp(JournalFile)
		if !ok {
			return errors.New("the journal went while written")
		}
		p.jr = journal{records: 1, size: int64(len(line)), st: st}
		return nil
	}
	f, err := agent.root.OpenFile(JournalFile, os.O_WRONLY|os.O_APPEND|openReadFlags, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if stampOf(fi) != p.jr.st {
		return errors.New("the journal changed while opened")
	}
	if _, err := f.Write(line); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if fi, err = f.Stat(); err != nil {
		return err
	}
	p.jr.records++
	p.jr.size = fi.Size()
	p.jr.st = stampOf(fi)
	return nil
}

// readJournal reads the journal of the agent folder (nil when there is
// none or it cannot be read: it is then ignored).
func readJournal(agent *dir) []byte {
	data, _, err := agent.readFile(JournalFile, sizeLimit)
	if err != nil {
		return nil
	}
	return data
}

// decodeJournaled reads conversation.json's bytes data and applies the
// agent folder's journal on them when it names them; it returns the
// conversation and the number of records applied.
func decodeJournaled(agent *dir, data []byte) (*Conversation, [sha256.Size]byte, int, error) {
	sum := sha256.Sum256(data)
	v, err := canonjson.DecodeDepth(data, MaxConversationDepth)
	if err != nil {
		return nil, sum, 0, err
	}
	top, ok := v.(map[string]any)
	if !ok {
		return nil, sum, 0, &FormatError{Msg: "not a JSON object"}
	}
	j := readJournal(agent)
	if j == nil {
		conv, err := fromValue(top)
		return conv, sum, 0, err
	}
	n := applyJournal(top, sum, j)
	conv, err := fromValue(top)
	if err != nil && n > 0 {
		// Unreadable with the journal: read as it stands (Decode says
		// why it cannot be read, when it cannot).
		conv, err = Decode(data)
		n = 0
	}
	return conv, sum, n, err
}

// clone is a copy of f that advance may change.
func (f *fingerprint) clone() *fingerprint {
	return &fingerprint{shell: f.shell, items: slices.Clone(f.items), history: slices.Clone(f.history), omit: f.omit}
}

// advance makes f, the fingerprint of the conversation last made durable,
// conv's (with the images omit names omitted), and returns the record of
// what changed between them, or nil when nothing did. It compares every
// item and block by identity, allocating only for what changed.
func (f *fingerprint) advance(conv *Conversation, omit map[string]bool) (map[string]any, error) {
	shell, err := canonjson.EncodeCompact(conv.shell())
	if err != nil {
		return nil, err
	}
	sameTop := bytes.Equal(f.shell, shell)
	f.shell = shell
	set := make(map[string]any)
	had := len(f.items)
	for i, it := range conv.Items {
		m := itemMark{it.s, it.s.ver}
		switch {
		case i >= len(f.items):
			f.items = append(f.items, m)
		case m.s != nil && f.items[i] == m:
			continue
		default:
			f.items[i] = m
		}
		set[strconv.Itoa(i)] = it.s.f
	}
	f.items = f.items[:len(conv.Items)]
	k, kept := 0, len(f.history)
	sameOmit := len(f.omit) == len(omit) && maps.Equal(f.omit, omit)
	f.omit = omit
	for k < len(f.history) && k < len(conv.History) {
		same, err := f.history[k].matches(conv.History[k], omit, sameOmit)
		if err != nil {
			return nil, err
		}
		if !same {
			break
		}
		k++
	}
	f.history = f.history[:k]
	for _, m := range conv.History[k:] {
		mark, err := markMessage(m, omit)
		if err != nil {
			return nil, err
		}
		f.history = append(f.history, mark)
	}
	if len(set) == 0 && had == len(conv.Items) && k == kept && k == len(conv.History) && sameTop {
		return nil, nil
	}
	rec := map[string]any{
		"items":       json.Number(strconv.Itoa(len(conv.Items))),
		"historyFrom": json.Number(strconv.Itoa(k)),
	}
	if len(set) > 0 {
		rec["set"] = set
	}
	if k < len(conv.History) {
		added := make([]any, 0, len(conv.History)-k)
		for _, m := range conv.History[k:] {
			added = append(added, m.valueOmit(omit))
		}
		rec["history"] = added
	}
	if !sameTop {
		rec["top"] = conv.shell()
	}
	return rec, nil
}

// markMessage is a message's mark, with the images omit names omitted.
func markMessage(m Message, omit map[string]bool) (msgMark, error) {
	mark := msgMark{role: m.Role, blocks: make([]blockMark, len(m.Content)), content: firstBlock(m.Content)}
	if m.Extra != nil {
		e, err := canonjson.EncodeCompact(m.Extra)
		if err != nil {
			return msgMark{}, err
		}
		mark.extra = "x" + string(e)
	}
	for j, b := range m.Content {
		mark.blocks[j] = blockMark{b.id, len(omit) > 0 && b.isImage() && omit[b.String("sha256")]}
	}
	return mark, nil
}

// matches reports whether mark is m's mark, with the images omit names
// omitted, without making m's; sameOmit says that omit names the images
// the mark was made with.
func (mark msgMark) matches(m Message, omit map[string]bool, sameOmit bool) (bool, error) {
	if mark.role != m.Role || len(mark.blocks) != len(m.Content) || (mark.extra != "") != (m.Extra != nil) {
		return false, nil
	}
	if !sameOmit || mark.content != firstBlock(m.Content) {
		if !mark.sameBlocks(m, omit) {
			return false, nil
		}
	}
	if m.Extra != nil {
		e, err := canonjson.EncodeCompact(m.Extra)
		if err != nil {
			return false, err
		}
		return mark.extra == "x"+string(e), nil
	}
	return true, nil
}

// firstBlock is where content holds its first block, nil for none.
func firstBlock(content []Block) *Block {
	if len(content) == 0 {
		return nil
	}
	return &content[0]
}

// sameBlocks reports whether the mark's blocks are m's, block by block.
func (mark msgMark) sameBlocks(m Message, omit map[string]bool) bool {
	for j, b := range m.Content {
		if b.id == nil || mark.blocks[j] != (blockMark{b.id, len(omit) > 0 && b.isImage() && omit[b.String("sha256")]}) {
			return false
		}
	}
	return true
}

// isJournal reports whether an agent folder's entry is the journal.
func isJournal(e fs.DirEntry) bool { return e.Name() == JournalFile && e.Type().IsRegular() }
