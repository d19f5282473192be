package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"spbridge/internal/backend"
	"spbridge/internal/jsonrpc"
)

// fuzzSeeds are whole conversations with the server; "PKG" stands for a
// package folder of the run's own.
var fuzzSeeds = []string{
	`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`,
	`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[],"_meta":{"spbridge":{"package":"PKG","backend":"claude"}}}}
{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"PKG","prompt":[{"type":"text","text":"hi"}]}}
{"jsonrpc":"2.0","id":3,"method":"_spbridge/save","params":{"sessionId":"PKG"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[],"_meta":{"spbridge":{"package":"PKG","backend":"claude"}}}}
{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"PKG","prompt":[{"type":"text","text":"slow"}]}}
{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"PKG"}}
{"jsonrpc":"2.0","id":"q","method":"_spbridge/queue","params":{"sessionId":"PKG","prompt":[{"type":"text","text":"later"}]}}
{"jsonrpc":"2.0","id":4,"method":"_spbridge/rate","params":{"sessionId":"PKG","itemId":"X","rating":"good","reasons":[]}}`,
	`{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"PKG","cwd":"/","mcpServers":[],"_meta":{"spbridge":{"backend":"claude"}}}}
{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"PKG","prompt":[{"type":"text","text":"ask"}]}}
{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"selected","optionId":"allow_always"}}}
{"jsonrpc":"2.0","id":3,"method":"session/set_config_option","params":{"sessionId":"PKG","configId":"model","value":"opus"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[],"_meta":{"spbridge":{"package":"PKG","backend":"claude"}}}}
{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"PKG","prompt":[{"type":"text","text":"notstarted"}]}}
{"jsonrpc":"2.0","id":3,"method":"_spbridge/newConversation","params":{"sessionId":"PKG"}}
{"jsonrpc":"2.0","id":4,"method":"_spbridge/setKeepConversation","params":{"sessionId":"PKG","keep":false}}
{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"PKG","prompt":[{"type":"text","text":"panic"}]}}`,
	`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`,
	`[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}]
[]
{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"x"}}
{"jsonrpc":"2.0","id":9,"result":null}
{"jsonrpc":"1.0","id":2,"method":"initialize"}
{"id":{},"method":"x"}
{not json
"just a string"
{"jsonrpc":"2.0","id":3,"method":"no/such"}`,
	// Nested deeper than the reader takes: answered by the top-level id.
	`{"jsonrpc":"2.0","id":"deep","method":"initialize","params":` + strings.Repeat("[", jsonrpc.MaxDepth) + strings.Repeat("]", jsonrpc.MaxDepth) + `}
{"id":7,"result":` + strings.Repeat(`{"a":`, jsonrpc.MaxDepth) + "1" + strings.Repeat("}", jsonrpc.MaxDepth) + `}`,
}

// FuzzServe feeds arbitrary lines to a server whose sessions run on fake
// backends: it must not panic or hang, and must answer every request that
// has an id exactly once and nothing else.
func FuzzServe(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		pkg := filepath.Join(dir, "Doc.silverpoint")
		if err := os.Mkdir(pkg, 0o700); err != nil {
			t.Fatal(err)
		}
		// Keep the package path valid inside a JSON string.
		input := bytes.ReplaceAll(data, []byte("PKG"), []byte(strings.ReplaceAll(pkg, `\`, `/`)))
		var out lockedBuffer
		srv := NewServer(&out, Config{
			CLIs: rowsOf(func(name string, _ backend.Options) (backend.Backend, error) {
				return newFake(), nil
			}),
			AuditDir: filepath.Join(dir, "audit"), SessionsDir: filepath.Join(dir, "sessions"),
			DefaultBackend: "claude", Version: "fuzz",
		})
		srv.allowPackage = func(p string) bool { return strings.HasPrefix(p, dir+string(filepath.Separator)) }
		done := make(chan struct{})
		go func() {
			srv.Serve(context.Background(), bytes.NewReader(input))
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(2 * time.Minute): // a hang, not a timing: each input takes milliseconds
			t.Fatalf("Serve did not end on %q", input)
		}
		want := wantAnswers(input)
		got := map[string]int{}
		for _, line := range strings.Split(out.String(), "\n") {
			if line == "" {
				continue
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method *string         `json:"method"`
			}
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("the server wrote %q: %v", line, err)
			}
			if m.Method != nil || string(m.ID) == "null" {
				continue // a request of ours, or an answer to what had no id
			}
			got[compactID(m.ID)]++
		}
		for id, n := range want {
			if got[id] != n {
				t.Errorf("id %s: %d answers, want %d", id, got[id], n)
			}
		}
		for id, n := range got {
			if want[id] == 0 {
				t.Errorf("id %s answered %d times, but no request had it", id, n)
			}
		}
	})
}

// wantAnswers counts, by id, the lines that must be answered: a JSON
// object with a string or number id that is not a response (a response has
// no method, and a result or an error).
func wantAnswers(input []byte) map[string]int {
	want := map[string]int{}
	for _, line := range bytes.Split(input, []byte("\n")) {
		line = bytes.Trim(line, " \t\r")
		if len(line) > 0 && !json.Valid(line) && jsonrpc.TooDeep(line, jsonrpc.MaxDepth) {
			// Too deep to be read whole: answered by its top-level id,
			// unless it is a response.
			id := gjson.GetBytes(line, "id")
			r := gjson.GetManyBytes(line, "method", "result", "error")
			response := !r[0].Exists() && (r[1].Exists() || r[2].Exists())
			if id.Exists() && json.Valid([]byte(id.Raw)) && jsonrpc.ValidID(json.RawMessage(id.Raw)) && string(id.Raw) != "null" && !response {
				want[compactID(json.RawMessage(id.Raw))]++
			}
			continue
		}
		if !json.Valid(line) || len(line) == 0 || line[0] != '{' {
			continue
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method json.RawMessage `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(line, &m) != nil {
			// A member of the wrong type: still answered when the id reads.
			var idOnly struct {
				ID json.RawMessage `json:"id"`
			}
			json.Unmarshal(line, &idOnly)
			m.ID, m.Method = idOnly.ID, json.RawMessage(`"?"`)
		}
		if len(m.ID) == 0 || !(m.ID[0] == '"' || m.ID[0] == '-' || (m.ID[0] >= '0' && m.ID[0] <= '9')) {
			continue
		}
		noMethod := len(m.Method) == 0 || string(m.Method) == "null" || string(m.Method) == `""`
		if noMethod && (len(m.Result) > 0 || len(m.Error) > 0) {
			continue
		}
		want[compactID(m.ID)]++
	}
	return want
}

func compactID(id json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}
