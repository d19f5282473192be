package acp

import (
	"sync"
	"testing"

	"spbridge/internal/backend"
	"spbridge/internal/jsonrpc"
)

// switchBackend is a ctlBackend whose models take on/off settings.
type switchBackend struct {
	*ctlBackend
	smu sync.Mutex
	set map[string]bool // every SetSwitch, the last of each
}

func (b *switchBackend) SetSwitch(id string, on bool) {
	b.smu.Lock()
	defer b.smu.Unlock()
	if b.set == nil {
		b.set = make(map[string]bool)
	}
	b.set[id] = on
}

// configOption is the config option id of opts, nil when none.
func configOption(opts any, id string) map[string]any {
	list, _ := opts.([]any)
	for _, o := range list {
		if m, _ := o.(map[string]any); m["id"] == id {
			return m
		}
	}
	return nil
}

// TestBooleanConfigOptions: a model's on/off setting (Codex's fast tier)
// is a boolean config option for a client that advertised
// clientCapabilities.session.configOptions.boolean, which sets it with a
// boolean value; a client that did not sees the options it saw before and
// cannot set it.
func TestBooleanConfigOptions(t *testing.T) {
	models := []backend.Model{{ID: "default", Name: "Default", Switches: []backend.Switch{{ID: "fast", Name: "Fast", Description: "1.5x speed"}}},
		{ID: "slow", Name: "Slow"}}
	start := func(caps map[string]any) (*client, string, func() *switchBackend) {
		var mu sync.Mutex
		var made *switchBackend
		c := startPlain(t, Config{CLIs: rowsOf(func(name string, o backend.Options) (backend.Backend, error) {
			b := &switchBackend{ctlBackend: &ctlBackend{fakeBackend: newFake(), opts: o, mode: "default", models: models, listed: models}}
			mu.Lock()
			made = b
			mu.Unlock()
			return b, nil
		})}, nil)
		c.request("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": caps})
		res, _ := c.request("session/new", newSessionParams(newPackage(t)))
		return c, res["sessionId"].(string), func() *switchBackend { mu.Lock(); defer mu.Unlock(); return made }
	}

	c, sid, be := start(map[string]any{"session": map[string]any{"configOptions": map[string]any{"boolean": map[string]any{}}}})
	res, _ := c.request("session/set_config_option", map[string]any{"sessionId": sid, "configId": "fast", "type": "boolean", "value": true})
	fast := configOption(res["configOptions"], "fast")
	if fast == nil || fast["type"] != "boolean" || fast["currentValue"] != true || fast["category"] != "model_config" || fast["description"] != "1.5x speed" {
		t.Errorf("the fast option after setting it: %v", fast)
	}
	if b := be(); b == nil || !b.set["fast"] {
		t.Errorf("the backend was not told: %v", b.set)
	}
	if m, _ := c.response(c.call("session/set_config_option", map[string]any{"sessionId": sid, "configId": "fast", "value": "on"})); errCode(m) != jsonrpc.CodeInvalidParams {
		t.Errorf("a string value: %v", m)
	}
	// A model without the setting does not offer it.
	res, _ = c.request("session/set_config_option", map[string]any{"sessionId": sid, "configId": "model", "value": "slow"})
	if o := configOption(res["configOptions"], "fast"); o != nil {
		t.Errorf("the fast option on a model without it: %v", o)
	}
	if m, _ := c.response(c.call("session/set_config_option", map[string]any{"sessionId": sid, "configId": "fast", "type": "boolean", "value": true})); errCode(m) != jsonrpc.CodeInvalidParams {
		t.Errorf("setting it on a model without it: %v", m)
	}

	c, sid, _ = start(nil)
	res, _ = c.request("session/set_config_option", map[string]any{"sessionId": sid, "configId": "model", "value": "default"})
	if o := configOption(res["configOptions"], "fast"); o != nil {
		t.Errorf("a client without boolean options was offered %v", o)
	}
	if m, _ := c.response(c.call("session/set_config_option", map[string]any{"sessionId": sid, "configId": "fast", "type": "boolean", "value": true})); errCode(m) != jsonrpc.CodeInvalidParams {
		t.Errorf("a client without boolean options set it: %v", m)
	}
}
