package codex

import (
	"bytes"
	"fmt"

	"github.com/tidwall/gjson"

	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
	"spbridge/internal/jsonline"
)

// execHistoryMax is the most of codex's session log read for one turn's
// items: a turn whose part of the log is longer keeps the neutral history.
const execHistoryMax = 64 << 20

// rolloutMark is where codex's session log of a thread ended before a
// turn of codex exec: the turn's lines follow it.
type rolloutMark struct {
	path string
	size int64
}

// markRollout notes where the thread's session log ends now, before a
// turn starts (nothing for a new thread, whose log is new).
func (b *Backend) markRollout() {
	b.rolloutFrom, b.logRead = rolloutMark{}, logTail{}
	if p, info := rolloutPath(b.codexHomeDir(), b.Thread()); p != "" {
		b.rolloutFrom = rolloutMark{path: p, size: info.Size()}
	}
}

// execHistory gives an exec turn's end the history as it was sent: the
// model's own tool calls and the outputs codex sent back for them, from
// codex's own log of the thread (the response_item lines after the turn's
// task_started event, written after the mark markRollout took). A tool
// item the log does not have a call for stays in the neutral form, and a
// notice in the turn says so.
func (b *Backend) execHistory(m *itemmap.Codex, end *itemmap.TurnEnd, h backend.Host) {
	if end == nil || end.NotStarted {
		return
	}
	history, missing, ok := m.ExecHistory(end, turnItems(b.turnLog()))
	if !ok {
		return
	}
	end.History = history
	if missing > 0 {
		what := "one tool call of this turn"
		if missing > 1 {
			what = fmt.Sprintf("%d tool calls of this turn", missing)
		}
		backend.Notice(b.Opts.NewID, h, "codex's log of the thread does not have "+what+
			": the conversation's history holds it as codex exec reported it, not as the model made it.")
	}
}

// turnLog returns the lines of the thread's session log that the turn
// wrote (nil when they cannot be read).
func (b *Backend) turnLog() []byte {
	p, info := rolloutPath(b.codexHomeDir(), b.Thread())
	if p == "" {
		return nil
	}
	from := int64(0)
	if p == b.rolloutFrom.path && info.Size() >= b.rolloutFrom.size {
		from = b.rolloutFrom.size
	}
	if info.Size()-from > execHistoryMax {
		return nil
	}
	data, _ := readRollout(p, from, info.Size())
	return data
}

// turnItems returns the payloads of the response_item lines that follow
// the last task_started event of data (lines of a session log), in order;
// nil when data has no task_started.
func turnItems(data []byte) [][]byte {
	var items [][]byte
	started := false
	for l := range bytes.SplitSeq(data, []byte("\n")) {
		isItem := bytes.Contains(l, []byte(`"response_item"`))
		isStart := bytes.Contains(l, []byte(`"task_started"`))
		if !isItem && !isStart || jsonline.TooDeep(l) || !gjson.ValidBytes(l) {
			continue
		}
		v := gjson.ParseBytes(l)
		switch typ := v.Get("type").String(); {
		case typ == "event_msg" && v.Get("payload.type").String() == "task_started":
			started, items = true, nil
		case typ == "response_item" && started:
			if p := v.Get("payload"); p.IsObject() {
				items = append(items, []byte(p.Raw))
			}
		}
	}
	if !started {
		return nil
	}
	return items
}
