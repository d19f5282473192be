package acp

import (
	"testing"

	"spbridge/internal/backend"
	"spbridge/internal/jsonrpc"
)

// TestSetModel: session/set_model (dropped from ACP, still sent by the
// clients of claude-agent-acp) sets the model option: the backend gets
// the model, a config_option_update with it as the current value comes
// before the answer, {}; a missing or mistyped modelId is -32602 and
// changes nothing, an unknown session -32002.
func TestSetModel(t *testing.T) {
	listed := []backend.Model{{ID: "default", Name: "Default"}, {ID: "opus", Name: "Opus"}}
	c, be := startListing(t, Config{}, nil, listed)
	res, _ := c.request("session/new", newSessionParams(newPackage(t)))
	sid := res["sessionId"].(string)
	waitUpdate(c, "config_option_update") // the CLI's own list

	r, seen := c.response(c.call("session/set_model", map[string]any{"sessionId": sid, "modelId": "opus"}))
	if res, ok := r["result"].(map[string]any); !ok || len(res) != 0 {
		t.Fatalf("set_model answered %v", r)
	}
	u := updates(seen, "config_option_update")
	if len(u) != 1 || option(u[0]["configOptions"].([]any), "model")["currentValue"] != "opus" {
		t.Errorf("before the answer: %v", u)
	}
	if got := be(0).model(); got != "opus" {
		t.Errorf("the backend's model %q", got)
	}
	for _, bad := range []map[string]any{{"sessionId": sid}, {"sessionId": sid, "modelId": ""}, {"sessionId": sid, "modelId": 3}} {
		if m, _ := c.response(c.call("session/set_model", bad)); errCode(m) != jsonrpc.CodeInvalidParams {
			t.Errorf("set_model %v: %v", bad, m)
		}
	}
	if got := be(0).model(); got != "opus" {
		t.Errorf("a refused set_model changed the model to %q", got)
	}
	if m, _ := c.response(c.call("session/set_model", map[string]any{"sessionId": "nope", "modelId": "opus"})); errCode(m) != CodeNotFound {
		t.Errorf("set_model of an unknown session: %v", m)
	}
}
