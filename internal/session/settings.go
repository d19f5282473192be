package session

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/restore"
)

// Settings are what the user chose for a session's CLI. The session makes
// its backend from them at the open and makes it again at New
// Conversation, carrying the model, the reasoning effort and the mode
// over; a front end passes them at the open and changes them through
// SetModel, SetEffort and SetMode.
type Settings struct {
	// CLI is the CLI the user named (backend.Plugin.Name); "" follows the
	// reopen rule: the CLI the conversation last ran on (its provider),
	// else DefaultCLI.
	CLI, DefaultCLI string
	// Model, Effort and Mode are those of the next turns: "" for the
	// CLI's own.
	Model, Effort, Mode string
	// Backend is the rest the backend is made with: the editor's MCP
	// servers and additional folders, the folder's trust, the idle
	// timeout. Its Dir (Options.Cwd), Model, Mode, Events and Resume are
	// the session's.
	Backend backend.Options
	// Own are each CLI's own settings (backend.Plugin.Settings), by the
	// CLI's name: whichever CLI the session runs on takes its own.
	Own map[string]map[string]string
	// Resume is a session of the CLI named ResumeCLI that the first turn
	// continues (backend.Options.Resume), when the session's CLI is that
	// one: it has the whole conversation, so no turn is told it again.
	Resume, ResumeCLI string
}

// What says what of a session's settings changed (Options.Changed).
type What int

const (
	ModeChanged     What = iota // the mode (the CLI switched on its own, or SetMode)
	CommandsChanged             // the CLI's commands (its CLI started and said)
	ModelsChanged               // the CLI's models (its CLI started and said)
)

// ModelCache keeps the models a CLI's program listed (internal/modelcache),
// so that the next open knows them before its CLI starts.
type ModelCache interface {
	Load(name, program string) []backend.Model
	Store(name, program string, models []backend.Model) error
}

// controls are what the session knows of its backend's controls: the
// lists its CLI gave and what the user chose. Guarded by their own lock,
// which the backend's events take; it is never held across a call into
// the backend or the front end.
type controls struct {
	mu        sync.Mutex
	gen, made int // the backend whose events count; the backends made
	has       bool
	modes     []backend.Mode
	commands  []backend.Command
	models    []backend.Model // nil: the row's static list
	// The model, effort and mode chosen ("" for the CLI's own), carried
	// to every backend the session makes.
	model, effort, mode string
	// switches are the on/off settings chosen (SetSwitch), carried to
	// every backend the session makes.
	switches map[string]bool
	// program is the backend's program, whose model list the cache keeps;
	// cached is set when the list came from the cache.
	program    string
	cached     bool
	modelsSeen chan struct{} // closed once the CLI listed its models
	seenOnce   sync.Once
	// The CLI's early start (Prepare), once a session; Close ends it.
	prepCancel context.CancelFunc
	preparing  sync.WaitGroup
	prepClosed bool
}

// choose is the row of the CLI the session runs on, by the reopen rule:
// the one named, else the one the conversation last ran on, else the
// default.
func choose(rows []backend.Plugin, set Settings, saved *archive.Conversation) (backend.Plugin, error) {
	name := set.CLI
	if name == "" && saved != nil && saved.Provider != "" {
		for _, r := range rows {
			if r.Provider == saved.Provider {
				name = r.Name
			}
		}
	}
	if name == "" {
		name = set.DefaultCLI
	}
	i := slices.IndexFunc(rows, func(r backend.Plugin) bool { return r.Name == name })
	if i < 0 {
		return backend.Plugin{}, fmt.Errorf("the %s backend is not available in this spbridge", name)
	}
	return rows[i], nil
}

// makeBackend makes a backend of row with the session's settings,
// resuming resume ("" for a new CLI session). Its events are bound to gen:
// they count once the session uses it (useBackend), and those of the
// backend before it no more.
func (s *Session) makeBackend(row backend.Plugin, resume string) (_ backend.Backend, gen int, _ error) {
	s.ctl.mu.Lock()
	s.ctl.made++
	gen = s.ctl.made
	opts := s.set.Backend
	opts.Dir, opts.Model, opts.Mode, opts.Resume = s.cwd, s.ctl.model, s.ctl.mode, resume
	effort := s.ctl.effort
	switches := maps.Clone(s.ctl.switches)
	s.ctl.mu.Unlock()
	opts.Events = s.events(gen)
	own, err := row.Own(s.set.Own[row.Name])
	if err != nil {
		return nil, 0, err
	}
	be := row.New(opts, own)
	if be == nil {
		return nil, 0, fmt.Errorf("the %s backend is not available in this spbridge", row.Name)
	}
	if c, ok := be.(backend.Controls); ok && effort != "" {
		c.SetEffort(effort)
	}
	if sw, ok := be.(backend.Switcher); ok {
		for id, on := range switches {
			sw.SetSwitch(id, on)
		}
	}
	return be, gen, nil
}

// useBackend makes the events of the backend made as gen count.
func (s *Session) useBackend(gen int) {
	s.ctl.mu.Lock()
	s.ctl.gen = gen
	s.ctl.mu.Unlock()
}

// takeControls starts using the backend made as gen, and reads what its
// controls offer, and the models its program listed last (the cache), for
// the session's lists.
func (s *Session) takeControls(row backend.Plugin, be backend.Backend, gen int) {
	c, ok := be.(backend.Controls)
	if !ok {
		s.useBackend(gen)
		return
	}
	modes, mode, cmds, models, effort := c.Modes(), c.Mode(), c.Commands(), c.Models(), c.Effort()
	program, err := be.Program()
	cached := false
	if s.modelCache != nil && err == nil {
		if list := s.modelCache.Load(row.Name, program); len(list) > 0 {
			// In place of the backend's list from before its CLI said.
			models, cached = list, true
		}
	}
	s.ctl.mu.Lock()
	defer s.ctl.mu.Unlock()
	s.ctl.gen, s.ctl.has = gen, true
	s.ctl.modes, s.ctl.mode, s.ctl.commands, s.ctl.models, s.ctl.effort = modes, mode, cmds, models, effort
	s.ctl.cached = cached
	if err == nil {
		s.ctl.program = program
	}
}

// events are what the backend made in generation gen tells the session
// besides items, on the backend's goroutines: the session keeps them and
// tells the front end (Options.Changed) with no lock held.
func (s *Session) events(gen int) backend.Events {
	return backend.Events{
		ModeChanged: func(id string) {
			s.ctl.mu.Lock()
			changed := gen == s.ctl.gen && s.ctl.mode != id
			if changed {
				s.ctl.mode = id
			}
			s.ctl.mu.Unlock()
			if changed {
				s.tell(ModeChanged)
			}
		},
		CommandsChanged: func(cmds []backend.Command) {
			s.ctl.mu.Lock()
			current := gen == s.ctl.gen
			if current {
				s.ctl.commands = slices.Clone(cmds)
			}
			s.ctl.mu.Unlock()
			if current {
				s.tell(CommandsChanged)
			}
		},
		ModelsChanged: func(list []backend.Model) {
			s.ctl.mu.Lock()
			current := gen == s.ctl.gen
			// The same list as the one offered (the cache's, most
			// often) changes nothing the client sees: no update, which
			// could otherwise arrive after a cancelled prompt's answer.
			same := current && s.ctl.models != nil && backend.EqualModels(list, s.ctl.models)
			if current {
				s.ctl.models = slices.Clone(list)
			}
			program := s.ctl.program
			s.ctl.mu.Unlock()
			if !current {
				return
			}
			seen := s.seen()
			s.ctl.seenOnce.Do(func() { close(seen) })
			if !same {
				s.tell(ModelsChanged)
			}
			if s.modelCache != nil && program != "" {
				// Kept for the next session's answer (a small file,
				// written once a CLI start).
				if err := s.modelCache.Store(s.CLI(), program, list); err != nil {
					s.logf("keep the model list: %v", err)
				}
			}
		},
	}
}

// tell tells the front end that what changed changed.
func (s *Session) tell(what What) {
	if s.changed != nil {
		s.changed(what)
	}
}

// logf logs a diagnostic of the session's own.
func (s *Session) logf(format string, args ...any) {
	if s.log != nil {
		s.log(fmt.Sprintf(format, args...))
	}
}

// CLI is the name of the CLI the session runs on (backend.Plugin.Name).
func (s *Session) CLI() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.row.Name
}

// CLIs are the rows of the CLIs the session can run on (SwitchCLI), in
// the list's order.
func (s *Session) CLIs() []backend.Plugin {
	return slices.Clone(s.rows)
}

// ErrUnknownCLI is the error of SwitchCLI for a CLI the session does not
// have.
var ErrUnknownCLI = errors.New("no such CLI")

// SwitchCLI makes the session run on the CLI named name from the next
// turn on: a backend of its row, with the CLI's own model, effort and mode
// (another CLI's would mean nothing to it). The conversation stays; the
// next turn tells the new CLI the conversation so far, as after a reopen.
// The front end is told the models, modes and commands changed. It fails
// with ErrBusy while a turn runs; the CLI the session runs on already is
// no change.
func (s *Session) SwitchCLI(name string) error {
	i := slices.IndexFunc(s.rows, func(r backend.Plugin) bool { return r.Name == name })
	if i < 0 {
		return fmt.Errorf("%w: %q", ErrUnknownCLI, name)
	}
	row := s.rows[i]
	if s.CLI() == name {
		return nil
	}
	if s.Running() {
		return ErrBusy
	}
	s.ctl.mu.Lock()
	model, effort, mode := s.ctl.model, s.ctl.effort, s.ctl.mode
	s.ctl.model, s.ctl.effort, s.ctl.mode = "", "", ""
	s.ctl.mu.Unlock()
	be, gen, err := s.makeBackend(row, "")
	if err != nil {
		s.ctl.mu.Lock()
		s.ctl.model, s.ctl.effort, s.ctl.mode = model, effort, mode
		s.ctl.mu.Unlock()
		return err
	}
	s.mu.Lock()
	if s.turn != nil || s.running || s.closed {
		busy := s.closed
		s.mu.Unlock()
		be.Close()
		s.ctl.mu.Lock()
		s.ctl.model, s.ctl.effort, s.ctl.mode = model, effort, mode
		s.ctl.mu.Unlock()
		if busy {
			return ErrClosed
		}
		return ErrBusy
	}
	old := s.be
	s.be, s.row, s.provider = be, row, row.Provider
	if s.restore == nil && len(s.pkg.Conv.Items) > 0 {
		s.restore = restore.Restored(slices.Clone(s.pkg.Conv.Items))
	}
	s.mu.Unlock()
	s.takeControls(row, be, gen)
	s.watchBackend(be)
	if err := old.Close(); err != nil {
		s.logf("stop the CLI switched from: %v", err)
	}
	s.tell(ModelsChanged)
	s.tell(ModeChanged)
	s.tell(CommandsChanged)
	return nil
}

// HasControls reports whether the session's backend has modes, commands,
// models and efforts to offer (backend.Controls); a test's may not.
func (s *Session) HasControls() bool {
	s.ctl.mu.Lock()
	defer s.ctl.mu.Unlock()
	return s.ctl.has
}

// DefaultModel is the id Models gives the CLI's own choice of model.
const DefaultModel = "default"

// Models are the models offered — the CLI's own as it last listed them,
// else its row's — and the current one (DefaultModel for the CLI's own),
// which is among them.
func (s *Session) Models() (list []backend.Model, current string) {
	s.mu.Lock()
	static := s.row.Models
	s.mu.Unlock()
	s.ctl.mu.Lock()
	list, current = slices.Clone(s.ctl.models), s.ctl.model
	s.ctl.mu.Unlock()
	if current == "" {
		current = DefaultModel
	}
	if list == nil {
		for _, v := range static {
			list = append(list, backend.Model{ID: v, Name: v})
		}
	}
	if !slices.ContainsFunc(list, func(m backend.Model) bool { return m.ID == current }) {
		list = append(list, backend.Model{ID: current, Name: current})
	}
	return list, current
}

// Efforts are the reasoning efforts the current model takes (none when it
// takes none or is not listed), and the one chosen ("" for the CLI's own,
// also when the model does not take the one chosen).
func (s *Session) Efforts() (levels []string, current string) {
	list, model := s.Models()
	levels = efforts(list, model)
	s.ctl.mu.Lock()
	current = s.ctl.effort
	s.ctl.mu.Unlock()
	if !slices.Contains(levels, current) {
		current = ""
	}
	return levels, current
}

// efforts are the reasoning efforts model takes in list.
func efforts(list []backend.Model, model string) []string {
	if i := slices.IndexFunc(list, func(m backend.Model) bool { return m.ID == model }); i >= 0 {
		return list[i].Efforts
	}
	return nil
}

// Modes are the backend's modes (none without controls) and the current
// one.
func (s *Session) Modes() ([]backend.Mode, string) {
	s.ctl.mu.Lock()
	defer s.ctl.mu.Unlock()
	return slices.Clone(s.ctl.modes), s.ctl.mode
}

// Commands are the CLI's slash commands as it last told them.
func (s *Session) Commands() []backend.Command {
	s.ctl.mu.Lock()
	defer s.ctl.mu.Unlock()
	return slices.Clone(s.ctl.commands)
}

// modelSetter is a backend whose model can change between turns.
type modelSetter interface{ SetModel(string) }

// SetModel chooses the model of the next turns (DefaultModel or "" for
// the CLI's own). An effort the new model does not take goes back to the
// CLI's own.
func (s *Session) SetModel(model string) {
	if model == DefaultModel {
		model = ""
	}
	be := s.currentBackend()
	s.ctl.mu.Lock()
	s.ctl.model = model
	has := s.ctl.has
	s.ctl.mu.Unlock()
	if ms, ok := be.(modelSetter); ok {
		ms.SetModel(model)
	}
	if !has {
		return
	}
	levels, _ := s.Efforts()
	s.ctl.mu.Lock()
	reset := s.ctl.effort != "" && !slices.Contains(levels, s.ctl.effort)
	if reset {
		s.ctl.effort = ""
	}
	s.ctl.mu.Unlock()
	if c, ok := be.(backend.Controls); ok && reset {
		c.SetEffort("")
	}
	s.wake()
}

// Errors of SetEffort.
var (
	ErrNoEffort      = errors.New("the model has no reasoning effort")
	ErrUnknownEffort = errors.New("the model does not take this reasoning effort")
)

// SetEffort chooses the reasoning effort of the next turns: one the
// current model takes (ErrUnknownEffort otherwise; ErrNoEffort when it
// takes none), or "" for the CLI's own.
func (s *Session) SetEffort(effort string) error {
	levels, _ := s.Efforts()
	c, _ := s.currentBackend().(backend.Controls)
	switch {
	case c == nil || len(levels) == 0:
		return ErrNoEffort
	case effort != "" && !slices.Contains(levels, effort):
		return ErrUnknownEffort
	}
	s.ctl.mu.Lock()
	s.ctl.effort = effort
	s.ctl.mu.Unlock()
	c.SetEffort(effort)
	s.wake()
	return nil
}

// ErrNoModes is the error of SetMode on a backend without modes.
var ErrNoModes = errors.New("this session has no modes")

// SetMode switches the mode (backend.Controls.SetMode: an id not among
// Modes is backend.ErrUnknownMode); the front end is told when it changed.
func (s *Session) SetMode(ctx context.Context, id string) error {
	c, ok := s.currentBackend().(backend.Controls)
	if !ok {
		return ErrNoModes
	}
	if err := c.SetMode(ctx, id); err != nil {
		return err
	}
	// A backend that tells no ModeChanged (the mode was id already)
	// leaves the mode as it is.
	s.ctl.mu.Lock()
	changed := s.ctl.mode != id
	s.ctl.mode = id
	s.ctl.mu.Unlock()
	if changed {
		s.tell(ModeChanged)
	}
	s.wake()
	return nil
}

// Prepare starts the CLI ahead of the first turn (backend.Controls'
// Prepare), once a session, in the background; Close ends it. The channel
// it returns is closed when the start failed (nil when it was started
// before, or the backend has no controls).
func (s *Session) Prepare() <-chan struct{} {
	c, ok := s.currentBackend().(backend.Controls)
	if !ok {
		return nil
	}
	s.ctl.mu.Lock()
	if s.ctl.prepClosed || s.ctl.prepCancel != nil {
		s.ctl.mu.Unlock()
		return nil
	}
	failed := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	s.ctl.prepCancel = cancel
	s.ctl.preparing.Add(1)
	s.ctl.mu.Unlock()
	go func() {
		defer s.ctl.preparing.Done()
		defer cancel()
		defer func() {
			if r := recover(); r != nil && s.panicked != nil {
				s.panicked("the CLI's start", r, debug.Stack())
			}
		}()
		s.using()
		if err := c.Prepare(ctx); err != nil {
			close(failed)
			if ctx.Err() == nil {
				s.logf("start the CLI: %v", err)
			}
			return
		}
		s.used() // the idle time counts from the CLI's start
	}()
	return failed
}

// endPrepare ends the CLI's early start and waits for it; none starts
// after it.
func (s *Session) endPrepare() {
	s.ctl.mu.Lock()
	s.ctl.prepClosed = true
	cancel := s.ctl.prepCancel
	s.ctl.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	s.ctl.preparing.Wait()
}

// WaitModels waits, up to wait, for the CLI's own models, for a front end
// that answers its open with them: when the session has no list its
// program gave before (the cache) and its backend's CLI lists them as it
// starts (claude; codex app-server), the CLI is started (Prepare) and the
// wait ends when it listed them, could not start, or wait passed.
func (s *Session) WaitModels(wait time.Duration) {
	s.ctl.mu.Lock()
	skip := !s.ctl.has || s.ctl.cached || s.ctl.program == ""
	s.ctl.mu.Unlock()
	seen := s.seen()
	if l, ok := s.currentBackend().(interface{ ListsModels() bool }); skip || !ok || !l.ListsModels() {
		return
	}
	failed := s.Prepare()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-seen:
	case <-failed: // the CLI could not start (missing, say): no list comes
	case <-t.C:
	}
}

// seen is the channel closed once the CLI listed its models.
func (s *Session) seen() chan struct{} {
	s.ctl.mu.Lock()
	defer s.ctl.mu.Unlock()
	if s.ctl.modelsSeen == nil {
		s.ctl.modelsSeen = make(chan struct{})
	}
	return s.ctl.modelsSeen
}

// ModelsSeen reports whether the CLI listed its models since the open.
func (s *Session) ModelsSeen() bool {
	select {
	case <-s.seen():
		return true
	default:
		return false
	}
}
