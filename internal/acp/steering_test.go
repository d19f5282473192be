package acp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
	"spbridge/internal/jsonrpc"
)

// TestSteeringBadInput: _session/steering with no prompt, an empty one or
// one over 256 KiB answers -32602, of a session not open -32002, and a
// client that asked for promptRequired with no turn running gets it back
// with reason noRunningTurn; none of them leaves anything in the
// conversation or starts a turn.
func TestSteeringBadInput(t *testing.T) {
	pkg := newPackage(t)
	c := startServer(t)
	res, _ := c.request("session/new", newSessionParams(pkg))
	sid := res["sessionId"].(string)
	steer := func(params map[string]any) map[string]any {
		m, _ := c.response(c.call("_session/steering", params))
		return m
	}
	for _, tc := range []struct {
		name   string
		params map[string]any
		code   float64
	}{
		{"no prompt", map[string]any{"sessionId": sid}, jsonrpc.CodeInvalidParams},
		{"empty", map[string]any{"sessionId": sid, "prompt": []any{textBlock(" \n")}}, jsonrpc.CodeInvalidParams},
		{"huge", map[string]any{"sessionId": sid, "prompt": []any{textBlock(strings.Repeat("x", 256<<10+1))}}, jsonrpc.CodeInvalidParams},
		{"unknown session", map[string]any{"sessionId": "nope", "prompt": []any{textBlock("hi")}}, CodeNotFound},
	} {
		if m := steer(tc.params); errCode(m) != tc.code {
			t.Errorf("%s: %v, want the error %v", tc.name, m["error"], tc.code)
		}
	}
	m := steer(map[string]any{"sessionId": sid, "prompt": []any{textBlock("later")},
		"_meta": map[string]any{"steering": map[string]any{"idleBehavior": "promptRequired"}}})
	if r, _ := m["result"].(map[string]any); r["outcome"] != "promptRequired" || r["reason"] != "noRunningTurn" {
		t.Errorf("no turn, promptRequired asked: %v", m)
	}
	// The next prompt is the conversation's first message and the CLI's
	// first.
	c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("hi")}})
	if err := c.wait(); err != nil {
		t.Fatal(err)
	}
	p, err := archive.Open(pkg, archive.KindDocument, true)
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, it := range p.Conv.Items {
		if it.Type() == archive.TypeUser {
			users = append(users, it.String("text"))
		}
	}
	if !slices.Equal(users, []string{"hi"}) || len(p.Conv.Unsent) != 0 {
		t.Errorf("user messages %q, unsent %q: the refused steers were kept", users, p.Conv.Unsent)
	}
	if sent := c.backends[0].texts(); !slices.Equal(sent, []string{"hi"}) {
		t.Errorf("the CLI was sent %q", sent)
	}
}

// refusingSteerer is a script backend whose CLI refuses every steered
// message.
type refusingSteerer struct{ *scriptBackend }

func (r refusingSteerer) Steer(backend.Message) error { return errors.New("the CLI refused it") }
func (r refusingSteerer) Untaken() []backend.Message  { return nil }

// TestSteeringFailed: a message the running turn's CLI refuses is
// answered {outcome: "failed", reason} and kept nowhere; the turn goes on
// and answers as usual.
func TestSteeringFailed(t *testing.T) {
	began, release := make(chan struct{}), make(chan struct{})
	turn := func(context.Context, backend.Host) *itemmap.TurnEnd {
		close(began)
		<-release
		return &itemmap.TurnEnd{Status: itemmap.TurnCompleted}
	}
	pkg := newPackage(t)
	c := startPlain(t, Config{CLIs: rowsOf(func(name string, o backend.Options) (backend.Backend, error) {
		return refusingSteerer{&scriptBackend{fakeBackend: newFake(), script: turn}}, nil
	})}, nil)
	var once sync.Once
	end := func() { once.Do(func() { close(release) }) }
	t.Cleanup(end) // before the server's: a failed test does not hold the turn
	c.request("initialize", map[string]any{"protocolVersion": 1})
	res, _ := c.request("session/new", newSessionParams(pkg))
	sid := res["sessionId"].(string)
	prompt := c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("paint it")}})
	<-began
	m, _ := c.response(c.call("_session/steering", map[string]any{"sessionId": sid, "prompt": []any{textBlock("use blue")}}))
	if r, _ := m["result"].(map[string]any); r["outcome"] != "failed" || !strings.Contains(fmt.Sprint(r["reason"]), "the CLI refused it") {
		t.Errorf("a refused steer answered %v", m)
	}
	end()
	if m, _ := c.response(prompt); fmt.Sprint(m["result"].(map[string]any)["stopReason"]) != "end_turn" {
		t.Errorf("the turn answered %v", m)
	}
	if err := c.wait(); err != nil {
		t.Fatal(err)
	}
	p, err := archive.Open(pkg, archive.KindDocument, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range p.Conv.Items {
		if strings.Contains(it.String("text"), "use blue") {
			t.Errorf("the refused message was kept: %s %q", it.Type(), it.String("text"))
		}
	}
	if len(p.Conv.Unsent) != 0 {
		t.Errorf("unsent %q", p.Conv.Unsent)
	}
}
