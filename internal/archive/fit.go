package archive

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"spbridge/internal/canonjson"
)

// FitCut is how much of a long tool output Fit keeps (64 KiB).
const FitCut = 64 << 10

// fitSlack is room Fit leaves under the limit: for the notice that says
// what was left out, and the image blocks a save writes as omitted.
const fitSlack = 64 << 10

// ErrTooLargeTurn is matched by Fit's error when even the conversation's
// last turn, its tools' outputs cut, does not fit.
var ErrTooLargeTurn = errors.New("its last turn alone is larger than spbridge keeps")

// Fit makes the conversation fit in what a save writes and spbridge reads
// back (MaxConversationSize; limit, when not 0, instead), with an eighth
// of it to spare for the turns that follow, leaving out what does not
// fit, the oldest first: first the tools' outputs longer
// than FitCut (the tool items' fields, the history's tool results) are
// cut to their first FitCut bytes, the oldest first, until it fits; then
// the earliest turns go (the items before a user message, and the history
// before that message) until it does. It returns what it left out, in
// words for a notice ("" when everything fits: nothing changed), and an
// error matching ErrTooLargeTurn when even the last turn does not fit.
// The size counted is the encoding on one line, the form a save falls back
// to.
func (c *Conversation) Fit(limit int64) (string, error) {
	if limit <= 0 {
		limit = sizeLimit
	}
	// An eighth is left for the turns that follow (an import is carried
	// on), and room for the notice.
	target := limit - max(limit/8, fitSlack)
	shell, err := canonjson.EncodeCompact(c.shell())
	if err != nil {
		return "", err
	}
	// Each item's and message's size on one line, with its comma.
	itemSize := make([]int64, len(c.Items))
	msgSize := make([]int64, len(c.History))
	total := int64(len(shell)) + 32
	var buf []byte
	size := func(v any) int64 {
		buf, err = canonjson.AppendCompact(buf[:0], v)
		return int64(len(buf)) + 1
	}
	for i, it := range c.Items {
		itemSize[i] = size(it.s.f)
		total += itemSize[i]
	}
	for k, m := range c.History {
		msgSize[k] = size(m.valueOmit(nil))
		total += msgSize[k]
	}
	if err != nil {
		return "", err
	}
	if total <= target {
		return "", nil
	}

	// The tools' long outputs, oldest first: items and history messages
	// taken in step (by their place in their list).
	cut := 0
	i, k := 0, 0
	for total > target && (i < len(c.Items) || k < len(c.History)) {
		if k >= len(c.History) || (i < len(c.Items) && i*len(c.History) <= k*len(c.Items)) {
			it := c.Items[i]
			if it.Type() == TypeTool {
				n := 0
				for key, v := range it.s.f {
					if key == "id" || key == "type" {
						continue
					}
					if nv, cuts := cutStrings(v); cuts > 0 {
						it.Set(key, nv)
						n += cuts
					}
				}
				if n > 0 {
					cut += n
					s := size(it.s.f)
					total += s - itemSize[i]
					itemSize[i] = s
				}
			}
			i++
			continue
		}
		m := &c.History[k]
		changed := false
		for j, b := range m.Content {
			if b.Type() != BlockToolResult {
				continue
			}
			if nv, cuts := cutStrings(b.f["content"]); cuts > 0 {
				if !changed {
					m.Content = append([]Block(nil), m.Content...)
					changed = true
				}
				f := make(map[string]any, len(b.f))
				for key, v := range b.f {
					f[key] = v
				}
				f["content"] = nv
				m.Content[j] = BlockFromMap(f)
				cut += cuts
			}
		}
		if changed {
			s := size(m.valueOmit(nil))
			total += s - msgSize[k]
			msgSize[k] = s
		}
		k++
	}
	if err != nil {
		return "", err
	}

	// The earliest turns: each begins with a user item, and its history
	// with the user's message (as Fork counts them).
	turns := 0
	if total > target {
		var users, userMsgs []int
		for i, it := range c.Items {
			if it.Type() == TypeUser {
				users = append(users, i)
			}
		}
		for k, m := range c.History {
			if m.Role == "user" && isUserMessage(m) {
				userMsgs = append(userMsgs, k)
			}
		}
		dropItems, dropMsgs := 0, 0
		var gone int64
		for t := 1; t < len(users) && total-gone > target; t++ {
			for ; dropItems < users[t]; dropItems++ {
				gone += itemSize[dropItems]
			}
			to := len(c.History)
			if t < len(userMsgs) {
				to = userMsgs[t]
			}
			for ; dropMsgs < to; dropMsgs++ {
				gone += msgSize[dropMsgs]
			}
			turns = t
		}
		if total-gone > target {
			return "", fmt.Errorf("the conversation does not fit in the %d bytes spbridge keeps: %w", limit, ErrTooLargeTurn)
		}
		c.Items = append([]Item(nil), c.Items[dropItems:]...)
		c.History = append([]Message(nil), c.History[dropMsgs:]...)
	}

	var said []string
	if cut > 0 {
		said = append(said, fmt.Sprintf("%s cut to their first %d KiB", plural(cut, "tool output was", "tool outputs were"), FitCut>>10))
	}
	if turns > 0 {
		said = append(said, fmt.Sprintf("the %s left out", plural(turns, "earliest turn was", "earliest turns were")))
	}
	return fmt.Sprintf("This conversation was larger than spbridge keeps (%s): %s.", sizeWords(limit), strings.Join(said, ", and ")), nil
}

// sizeWords is n bytes in MiB when a whole number of them, else in bytes.
func sizeWords(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// cutStrings is v with each string longer than FitCut cut to its first
// FitCut bytes (at a whole character) and a mark of what was left out,
// and how many it cut; v itself is not changed.
func cutStrings(v any) (any, int) {
	switch v := v.(type) {
	case string:
		if len(v) <= FitCut {
			return v, 0
		}
		end := FitCut
		for end > 0 && !utf8.RuneStart(v[end]) {
			end--
		}
		return v[:end] + fmt.Sprintf("\n[… %d bytes left out: the conversation was larger than spbridge keeps]", len(v)-end), 1
	case map[string]any:
		var out map[string]any
		n := 0
		for key, x := range v {
			if nx, c := cutStrings(x); c > 0 {
				if out == nil {
					out = make(map[string]any, len(v))
					for k2, y := range v {
						out[k2] = y
					}
				}
				out[key] = nx
				n += c
			}
		}
		if out == nil {
			return v, 0
		}
		return out, n
	case []any:
		var out []any
		n := 0
		for j, x := range v {
			if nx, c := cutStrings(x); c > 0 {
				if out == nil {
					out = append([]any(nil), v...)
				}
				out[j] = nx
				n += c
			}
		}
		if out == nil {
			return v, 0
		}
		return out, n
	}
	return v, 0
}
