package backend

import "spbridge/internal/itemmap"

// Between hears what a CLI does on its own between turns (Claude Code's
// background subagents go on after the turn's result, and claude runs a
// turn of its own to pass on a subagent's report). Change and Approve are
// as a turn's Host, called as the CLI prints, on the backend's goroutine:
// Approve's ctx ends when the CLI does (or the request is taken back), and
// a permission request waits for its answer without holding up the CLI's
// other lines. End is called when a turn the CLI ran on its own ended,
// with its history, usage and cost, to be brought into the conversation
// like a turn's.
type Between interface {
	Host
	End(*itemmap.TurnEnd)
}

// Background is a backend whose CLI can print between turns. What it
// prints then is read as it comes, by one reader for the process's life,
// and never dropped.
type Background interface {
	// Watch attaches h to hear what happens between turns; nil detaches
	// it. Without a host the changes are kept for the next turn's host,
	// and a permission request is denied at once (nobody could answer
	// it) with a notice that says so, kept the same way.
	Watch(h Between)
	// Hold keeps the between-turn reader from telling anything until
	// release is called (release may be called more than once); holds
	// nest. Hold returns once nothing is being told: a caller that
	// changes the conversation around a turn holds it for the whole turn
	// so that no between-turn change lands inside it. Turn holds it too.
	Hold() (release func())
}
