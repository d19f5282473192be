package backend

// Sleeper is a backend whose CLI can be ended while it is idle and started
// again later on the same session of its own (Claude Code's --resume,
// codex app-server's thread/resume): the session's idle CLIs are put to
// sleep, and the next turn, or Prepare, wakes them with nothing lost.
type Sleeper interface {
	// Sleep ends the CLI's process when one runs and nothing is going on:
	// no turn runs or is starting, nothing the CLI does in the background
	// runs (a Claude Code subagent or the turn it runs on its own, a
	// command Codex left running), and no request of the CLI's waits for
	// an answer. It reports whether it ended a process; when it did not,
	// the CLI goes on as it was. It never waits for a turn.
	Sleep() bool
	// Awake reports whether the CLI's process runs.
	Awake() bool
	// ResumeRefused reports, once, that the CLI refused to go on with its
	// session when it was started again after a Sleep (the turn that
	// started it ended NotStarted): the backend has forgotten that
	// session, and its next turn starts a new one, which the caller tells
	// the conversation so far.
	ResumeRefused() bool
}
