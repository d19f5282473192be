package codex

// Sleeping (backend.Sleeper), on the app-server transport: an idle `codex
// app-server` is ended, keeping its thread, and the next turn starts
// another that resumes it (thread/resume), as after a server that ended
// between turns. A command codex left running in the background (a
// detached process the server started that still runs) keeps it awake.
// codex exec runs no process between turns: it has nothing to put to
// sleep.

// Sleep ends the app-server when it is idle.
func (b *Backend) Sleep() bool {
	if b.transport != TransportAppServer || !b.run.TryLock() {
		return false // exec, or a turn runs, or Prepare starts the server
	}
	defer b.run.Unlock()
	p := b.app.proc
	if p == nil || p.Detached() {
		return false
	}
	b.mu.Lock()
	b.slept = b.app.threaded
	b.mu.Unlock()
	b.app.proc, b.app.threaded, b.app.turnID = nil, false, ""
	p.Discard() // idle: what it prints as it ends is no turn's
	p.CloseStdin()
	p.Close(min(appCloseGrace, b.Opts.Grace)) // Reap below keeps how it ended
	b.Reap(p)
	return true
}

// Awake reports whether the app-server runs.
func (b *Backend) Awake() bool { return b.Proc() != nil }

// ResumeRefused reports, once, that the app-server refused to resume the
// thread after a Sleep.
func (b *Backend) ResumeRefused() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.refused
	b.refused = false
	return r
}
