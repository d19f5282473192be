package claude

import (
	"reflect"
	"slices"
	"testing"

	"spbridge/internal/backend"
)

// initAnswer is the shape of Claude Code 2.1's answer to initialize, cut to
// its models.
const initAnswer = `{"type":"control_response","response":{"subtype":"success","request_id":"spbridge-init","response":{"commands":[],"models":[` +
	`{"value":"default","resolvedModel":"claude-opus-5-5","displayName":"Default (recommended)","description":"Use the default model","supportsEffort":true,"supportedEffortLevels":["low","medium","high","xhigh","max"]},` +
	`{"value":"haiku","displayName":"Haiku","description":"Fastest","supportsEffort":false},` +
	`{"displayName":"no value"}]}}}`

// TestModels: before the CLI answered, the aliases; its initialize answer
// gives the models and their effort levels, told once to ModelsChanged.
func TestModels(t *testing.T) {
	var heard [][]backend.Model
	b := New(Options{Events: backend.Events{ModelsChanged: func(m []backend.Model) { heard = append(heard, m) }}})
	var ids []string
	for _, m := range b.Models() {
		ids = append(ids, m.ID)
	}
	if !slices.Equal(ids, []string{"default", "sonnet", "opus", "haiku"}) {
		t.Errorf("Models() before the CLI = %q", ids)
	}
	b.observe([]byte(initAnswer), nil)
	b.observe([]byte(initAnswer), nil)
	want := []backend.Model{
		{ID: "default", Name: "Default (recommended)", Description: "Use the default model", Efforts: []string{"low", "medium", "high", "xhigh", "max"}},
		{ID: "haiku", Name: "Haiku", Description: "Fastest"},
	}
	if got := b.Models(); !reflect.DeepEqual(got, want) {
		t.Errorf("Models() = %+v, want %+v", got, want)
	}
	if len(heard) != 1 || !reflect.DeepEqual(heard[0], want) {
		t.Errorf("ModelsChanged heard %+v", heard)
	}
}

// TestEffortFlag: an effort chosen before the CLI starts is --effort.
func TestEffortFlag(t *testing.T) {
	b := New(Options{})
	if slices.Contains(b.args(), "--effort") {
		t.Errorf("args() = %q without an effort", b.args())
	}
	b.SetEffort("high")
	if a := b.args(); !slices.Contains(a, "--effort") || a[slices.Index(a, "--effort")+1] != "high" || b.Effort() != "high" {
		t.Errorf("args() = %q, Effort() = %q", a, b.Effort())
	}
}
