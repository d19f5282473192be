package session

import (
	"errors"
	"slices"

	"spbridge/internal/backend"
)

// ErrUnknownSwitch is the error of SetSwitch for a setting the current
// model does not take.
var ErrUnknownSwitch = errors.New("the current model has no such on/off setting")

// SwitchState is an on/off setting of the current model and whether it
// is on.
type SwitchState struct {
	backend.Switch
	On bool
}

// Switches are the on/off settings the current model takes
// (backend.Model.Switches), each on as chosen, else as the model's
// default.
func (s *Session) Switches() []SwitchState {
	list, model := s.Models()
	i := slices.IndexFunc(list, func(m backend.Model) bool { return m.ID == model })
	if i < 0 {
		return nil
	}
	s.ctl.mu.Lock()
	defer s.ctl.mu.Unlock()
	var out []SwitchState
	for _, sw := range list[i].Switches {
		on, chosen := s.ctl.switches[sw.ID]
		if !chosen {
			on = sw.Default
		}
		out = append(out, SwitchState{Switch: sw, On: on})
	}
	return out
}

// SetSwitch turns the current model's setting id on or off for the next
// turns (backend.Switcher); the choice is carried to every backend the
// session makes.
func (s *Session) SetSwitch(id string, on bool) error {
	if !slices.ContainsFunc(s.Switches(), func(w SwitchState) bool { return w.ID == id }) {
		return ErrUnknownSwitch
	}
	sw, ok := s.currentBackend().(backend.Switcher)
	if !ok {
		return ErrUnknownSwitch
	}
	s.ctl.mu.Lock()
	if s.ctl.switches == nil {
		s.ctl.switches = make(map[string]bool)
	}
	s.ctl.switches[id] = on
	s.ctl.mu.Unlock()
	sw.SetSwitch(id, on)
	s.wake()
	return nil
}
