package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/itemmap"
)

// TestRunJSONLinear: `run --json` writes a streamed reply's growth as
// appends: the whole item on add and on other updates, each delta once, so
// a 1,000-delta reply writes at most twice its text plus a small envelope
// a line, and no line holds the text so far.
func TestRunJSONLinear(t *testing.T) {
	var out bytes.Buffer
	h := &shellHost{out: &out, json: true}
	a := archive.NewItem(archive.TypeAssistant)
	delta := strings.Repeat("y", 79) + "\n"
	var text strings.Builder
	for i := range 1000 {
		text.WriteString(delta)
		a.Set("text", text.String())
		if i == 0 {
			h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: a})
		} else {
			h.Change(itemmap.Change{Op: itemmap.OpUpdate, Item: a, Delta: delta})
		}
	}
	tool := archive.NewItem(archive.TypeTool)
	tool.Set("status", archive.StatusSucceeded)
	h.Change(itemmap.Change{Op: itemmap.OpUpdate, Item: tool})
	reply := text.Len()
	if out.Len() > 2*reply+1000*100 {
		t.Errorf("%d bytes of --json output for a reply of %d in 1,000 deltas", out.Len(), reply)
	}
	sc := bufio.NewScanner(&out)
	var got strings.Builder
	n := 0
	for sc.Scan() {
		var v struct {
			Op, ID, Field, Text string
			Item                map[string]any
		}
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("line %d: %v: %s", n, err, sc.Bytes())
		}
		switch {
		case n == 0:
			if v.Op != "add" || v.Item["id"] != a.ID() {
				t.Fatalf("first line %s", sc.Bytes())
			}
			got.WriteString(v.Item["text"].(string))
		case n < 1000:
			if v.Op != "append" || v.ID != a.ID() || v.Field != "text" || len(sc.Bytes()) > 200 {
				t.Fatalf("line %d: %s", n, sc.Bytes())
			}
			got.WriteString(v.Text)
		default:
			if v.Op != "update" || v.Item["status"] != archive.StatusSucceeded {
				t.Fatalf("last line %s", sc.Bytes())
			}
		}
		n++
	}
	if n != 1001 || got.String() != text.String() {
		t.Errorf("%d lines; the appends rebuild the text: %v", n, got.String() == text.String())
	}
}

// TestRunJSONOutputDelta: what a running command prints goes as an output
// line with only the new bytes, not as the whole unchanged item again.
func TestRunJSONOutputDelta(t *testing.T) {
	var out bytes.Buffer
	h := &shellHost{out: &out, json: true}
	tool := archive.NewItem(archive.TypeTool)
	tool.Set("status", archive.StatusRunning)
	tool.Set("detail", strings.Repeat("input ", 1000))
	h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: tool})
	out.Reset()
	h.Change(itemmap.Change{Op: itemmap.OpUpdate, Item: tool, OutputDelta: "line 1\n"})
	var v struct{ Op, ID, Text string }
	if err := json.Unmarshal(out.Bytes(), &v); err != nil || v.Op != "output" || v.ID != tool.ID() || v.Text != "line 1\n" {
		t.Errorf("output delta line %s (%v)", out.Bytes(), err)
	}
}
