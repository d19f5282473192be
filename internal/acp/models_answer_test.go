package acp

import (
	"slices"
	"sync"
	"testing"

	"spbridge/internal/backend"
)

// memModels is a ModelCache in memory.
type memModels struct {
	mu     sync.Mutex
	kept   map[string][]backend.Model
	stores chan string // each Store's key
}

func (m *memModels) Load(name, program string) []backend.Model {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.kept[name+" "+program]
}

func (m *memModels) Store(name, program string, models []backend.Model) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.kept[name+" "+program] = slices.Clone(models)
	select {
	case m.stores <- name + " " + program:
	default:
	}
	return nil
}

// listingBackend is a ctlBackend whose CLI lists its models as it starts.
type listingBackend struct{ *ctlBackend }

func (listingBackend) ListsModels() bool { return true }

// TestModelsInAnswer: with no list kept, the open's answer waits for the
// CLI's own models (its early start lists them) and carries them, and the
// list is kept; with a list kept for the program, the answer carries that
// one before the CLI starts; either way a config_option_update follows
// the answer.
func TestModelsInAnswer(t *testing.T) {
	listed := []backend.Model{{ID: "default", Name: "Default"}, {ID: "opus", Name: "Opus"}, {ID: "haiku", Name: "Haiku"}}
	cache := &memModels{kept: map[string][]backend.Model{}, stores: make(chan string, 10)}
	cfg := Config{Models: cache}
	cfg.CLIs = rowsOf(func(name string, o backend.Options) (backend.Backend, error) {
		return listingBackend{&ctlBackend{fakeBackend: newFake(), opts: o, mode: "default", listed: listed}}, nil
	})
	c := startPlain(t, cfg, nil)
	c.request("initialize", map[string]any{"protocolVersion": 1})
	values := func(res map[string]any) []string {
		var out []string
		for _, v := range option(res["configOptions"].([]any), "model")["options"].([]any) {
			out = append(out, v.(map[string]any)["value"].(string))
		}
		return out
	}
	res, _ := c.request("session/new", newSessionParams(newPackage(t)))
	if got := values(res); !slices.Equal(got, []string{"default", "opus", "haiku"}) {
		t.Errorf("the first answer offers %v, want the CLI's list", got)
	}
	if u := waitUpdate(c, "config_option_update"); u == nil {
		t.Error("no config_option_update after the answer")
	}
	if key := <-cache.stores; key != "claude /bin/fake" {
		t.Errorf("the list was kept as %q", key)
	}

	// A list kept for the program: the answer carries it.
	cache.Store("claude", "/bin/fake", []backend.Model{{ID: "default", Name: "Default"}, {ID: "kept", Name: "Kept"}})
	res, _ = c.request("session/new", newSessionParams(newPackage(t)))
	if got := values(res); !slices.Equal(got, []string{"default", "kept"}) {
		t.Errorf("the answer with a list kept offers %v", got)
	}
}
