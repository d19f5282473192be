package acp

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"spbridge/internal/archive"
)

// TestStressSessions runs many sessions at once, each a random sequence of
// quick prompts, streaming prompts saved and cancelled while they run,
// messages queued behind a running turn and handed back by its cancel, New
// Conversation, and saves; then closes them. Nothing deadlocks (every
// request is answered), every save reads back with no item twice, and each
// closed package holds exactly the user messages of the turns that ran
// since its last New Conversation, and the queued ones as unsent.
func TestStressSessions(t *testing.T) {
	const sessions, rounds = 8, 20
	c := startServer(t)
	var wg sync.WaitGroup
	for s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stressSession(t, c, s, rounds)
		}()
	}
	wg.Wait()
}

func stressSession(t *testing.T, c *client, s, rounds int) {
	rng := rand.New(rand.NewPCG(uint64(s), 7))
	pkg := newPackage(t)
	answer := func(method string, params map[string]any) map[string]any {
		r, _ := c.response(c.call(method, params))
		if r["error"] != nil {
			t.Errorf("session %d: %s: %v", s, method, r["error"])
		}
		res, _ := r["result"].(map[string]any)
		return res
	}
	params := func(extra map[string]any) map[string]any {
		p := map[string]any{"sessionId": pkg}
		for k, v := range extra {
			p[k] = v
		}
		return p
	}
	ticked := func(id string) {
		c.until(func(m map[string]any) bool {
			p, _ := m["params"].(map[string]any)
			u, _ := p["update"].(map[string]any)
			ct, _ := u["content"].(map[string]any)
			text, _ := ct["text"].(string)
			return m["method"] == "session/update" && p["sessionId"] == pkg && strings.Contains(text, id)
		})
	}
	checkSaved := func(when string) *archive.Package {
		p, err := archive.Open(pkg, archive.KindDocument, true)
		if err != nil || p.Unreadable != "" {
			t.Errorf("session %d %s: %v %q", s, when, err, p.Unreadable)
			return nil
		}
		seen := map[string]bool{}
		for _, it := range p.Conv.Items {
			if seen[it.ID()] {
				t.Errorf("session %d %s: item %s twice", s, when, it.ID())
			}
			seen[it.ID()] = true
		}
		return p
	}

	answer("session/new", newSessionParams(pkg))
	var want, unsent []string // the user messages of the turns that ran; the handed-back ones
	for r := range rounds {
		switch rng.IntN(5) {
		case 0: // a quick turn
			text := fmt.Sprintf("quick %d.%d", s, r)
			if res := answer("session/prompt", params(map[string]any{"prompt": []any{textBlock(text)}})); res["stopReason"] != "end_turn" {
				t.Errorf("session %d: %s: %v", s, text, res)
			}
			want = append(want, text)
		case 1, 2: // a streaming turn, saved while it runs, maybe a message queued, then cancelled
			text := fmt.Sprintf("slow %d.%d", s, r)
			id := c.call("session/prompt", params(map[string]any{"prompt": []any{textBlock(text)}}))
			ticked("tick")
			if res := answer("_spbridge/save", params(nil)); res != nil {
				checkSaved("saved during a turn")
			}
			if rng.IntN(2) == 0 {
				q := fmt.Sprintf("queued %d.%d", s, r)
				if res := answer("_spbridge/queue", params(map[string]any{"prompt": []any{textBlock(q)}})); res["queued"] != true {
					t.Errorf("session %d: queue: %v", s, res)
				}
				unsent = append(unsent, q)
			}
			c.write(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": params(nil)})
			m, _ := c.response(id)
			if res, _ := m["result"].(map[string]any); res["stopReason"] != "cancelled" {
				t.Errorf("session %d: %s: %v", s, text, m)
			}
			want = append(want, text)
		case 3:
			answer("_spbridge/newConversation", params(nil))
			want, unsent = nil, nil
		case 4:
			answer("_spbridge/save", params(nil))
			checkSaved("saved")
		}
	}
	answer("session/close", params(nil))
	p := checkSaved("closed")
	if p == nil {
		return
	}
	var got []string
	for _, it := range p.Conv.Items {
		if it.Type() == archive.TypeUser {
			got = append(got, it.String("text"))
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("session %d: user messages %q, want %q", s, got, want)
	}
	var gotUnsent []string
	for _, u := range p.Conv.Unsent {
		gotUnsent = append(gotUnsent, fmt.Sprint(u))
	}
	if !slices.Equal(gotUnsent, unsent) {
		t.Errorf("session %d: unsent %q, want %q", s, gotUnsent, unsent)
	}
}
