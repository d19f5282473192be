package acp

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"spbridge/internal/archive"
)

// TestItemTrafficLinear: a reply streamed as 1,000 deltas sends each delta
// once in _spbridge/item (an append), never the text so far; the whole item
// goes out on add only. The item traffic's text is at most twice the
// reply's, and no line is longer than one delta's notification needs.
func TestItemTrafficLinear(t *testing.T) {
	for _, size := range []int{30, 80} { // replies of 30,000 and 80,000 characters
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			c := startServer(t)
			pkg := newPackage(t)
			c.request("session/new", newSessionParams(pkg))
			_, seen := c.request("session/prompt", promptParams(pkg, fmt.Sprintf("long 1000 %d", size)))
			reply := 1000 * size
			var text, appends int
			chunks := 0
			for _, m := range seen {
				p, _ := m["params"].(map[string]any)
				switch m["method"] {
				case "_spbridge/item":
					if p["op"] == "append" {
						appends++
						if p["field"] != "text" || p["id"] == nil {
							t.Fatalf("append %v", p)
						}
						text += len(p["text"].(string))
					} else if it := p["item"].(map[string]any); it["type"] == archive.TypeAssistant {
						text += len(it["text"].(string))
					}
				case "session/update":
					if p["update"].(map[string]any)["sessionUpdate"] == "agent_message_chunk" {
						chunks++
					}
				}
			}
			if appends != 999 || chunks != 1000 {
				t.Errorf("%d appends and %d chunks, want 999 and 1000", appends, chunks)
			}
			if text > 2*reply {
				t.Errorf("item traffic carried %d bytes of text for a reply of %d", text, reply)
			}
			c.mu.Lock()
			total, longest := c.itemBytes, c.itemLongest
			c.mu.Unlock()
			// Each line: the JSON-RPC envelope, the session id (the package
			// path), the item id and the delta (escaped).
			envelope := 200 + len(pkg) + 2*size
			if longest > envelope {
				t.Errorf("longest _spbridge/item line %d bytes, want at most %d", longest, envelope)
			}
			if total > 2*reply+1000*(envelope-size) {
				t.Errorf("%d bytes of _spbridge/item for a reply of %d in 1,000 deltas", total, reply)
			}
			t.Logf("reply %d bytes: _spbridge/item %d bytes (%d of text), longest line %d", reply, total, text, longest)
		})
	}
}

// TestPlainClientGetsACPAlone: a client that did not ask for _spbridge/item
// in initialize gets ACP alone, on a prompt and on session/load; one that
// asked gets the items again when it loads.
func TestPlainClientGetsACPAlone(t *testing.T) {
	pkg := newPackage(t)
	for _, caps := range []map[string]any{nil, {}, {"_meta": map[string]any{"spbridge": map[string]any{"items": false}}}} {
		c := startPlain(t, Config{}, nil)
		if caps != nil {
			c.request("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": caps})
		}
		c.request("session/new", newSessionParams(pkg))
		_, seen := c.request("session/prompt", promptParams(pkg, "hi"))
		if n := count(seen, "_spbridge/item"); n != 0 || len(updates(seen, "agent_message_chunk")) != 2 {
			t.Errorf("capabilities %v: %d _spbridge/item, chunks %v", caps, n, updates(seen, "agent_message_chunk"))
		}
		if err := c.wait(); err != nil {
			t.Fatal(err)
		}
	}
	load := map[string]any{"sessionId": pkg, "cwd": filepath.Dir(pkg), "mcpServers": []any{},
		"_meta": map[string]any{"spbridge": map[string]any{"backend": "claude"}}}
	c := startPlain(t, Config{}, nil)
	c.request("initialize", map[string]any{"protocolVersion": 1})
	_, seen := c.request("session/load", load)
	if n := count(seen, "_spbridge/item"); n != 0 || len(updates(seen, "user_message_chunk")) != 3 {
		t.Errorf("plain load: %d _spbridge/item, %d user messages", n, len(updates(seen, "user_message_chunk")))
	}
	c.wait()
	c = startServer(t)
	_, seen = c.request("session/load", load)
	if n := count(seen, "_spbridge/item"); n != 9 { // user, assistant, tool, three times
		b, _ := json.Marshal(seen)
		t.Errorf("load with items: %d _spbridge/item, want 9: %s", n, b)
	}
}
