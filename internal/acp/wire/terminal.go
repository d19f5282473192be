package wire

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"spbridge/internal/archive"
	"spbridge/internal/itemmap"
)

// maxTerminalOutput caps the output of one command sent to a client's
// terminal.
const maxTerminalOutput = 1 << 20

// ClearTerminal erases a terminal's screen and scrollback and puts the
// cursor home: the output shown is written again from its start.
const ClearTerminal = "\x1b[2J\x1b[3J\x1b[H"

// Output is a command's output as a turn showed it.
type Output struct {
	shown  string // what the client's terminal has, the output's first bytes
	capped bool   // the output shown reached its cap: the rest is not sent
	opened bool   // the client was told of the terminal (_meta.terminal_info)
}

// next returns what to write to the client's terminal so that it shows
// full (capped), the command's output now; delta is what full grew by
// since the last call ("" when not known). A full that does not begin
// with what was shown (a CLI that streamed only part of its output)
// clears the terminal and is written whole.
func (st *Output) next(full, delta string) string {
	if st.capped {
		return ""
	}
	from := len(full) - len(delta)
	prefix := ""
	if delta == "" || len(st.shown) != from {
		if strings.HasPrefix(full, st.shown) {
			from = len(st.shown)
		} else {
			from, prefix = 0, ClearTerminal
		}
	}
	data := full[from:]
	if room := maxTerminalOutput - from; len(data) > room {
		cut := room
		for cut > 0 && !utf8.RuneStart(data[cut]) {
			cut--
		}
		st.capped, st.shown = true, full[:from+cut]
		return prefix + data[:cut] + "\r\n… " + strconv.Itoa(len(data)-cut) + " bytes more\r\n"
	}
	st.shown = full
	return prefix + data
}

// Grown is what shows a running command's output grown by delta: to a
// client with terminals (terminal), the new bytes alone to write to its
// terminal; to others, the call's tool_call_update with the output so far
// as its text content, until it passes the cap (the call's end shows it
// whole, capped): so traffic stays bounded. Either is empty (nil) when
// nothing goes out.
func (st *Output) Grown(it archive.Item, v *itemmap.ToolView, delta, cwd string, terminal bool) (string, *Tool) {
	if v.Terminal && terminal {
		return st.next(v.Output, delta), nil
	}
	if st.capped {
		return "", nil
	}
	st.capped = len(v.Output) > maxOutput
	u := ToolOf("tool_call_update", it, v, cwd)
	return "", &u
}

// Terminal is how a command's call shows to a client with terminals, in
// the order they go out: the update that opens the terminal (terminal
// content and, the first time, _meta.terminal_info: on the tool_call, or
// on the update that first says the call runs a command), nil when none;
// once the call ended, what of its output the terminal lacks, to write to
// it; and the update that closes it (_meta.terminal_exit), nil while the
// call runs.
func (st *Output) Terminal(update string, it archive.Item, v *itemmap.ToolView, cwd string) (open *Tool, data string, end *Tool) {
	u := ToolOf(update, it, v, cwd)
	u.terminal = true
	u.hasContent = false
	status := it.String("status")
	if status == archive.StatusRunning || !st.opened {
		u.termInfo, u.termCwd = !st.opened, cwd
		st.opened = true
		first := u
		open = &first
		if status == archive.StatusRunning {
			return open, "", nil
		}
		u = ToolOf("tool_call_update", it, v, cwd)
		u.terminal, u.hasContent = true, false
	}
	data = st.next(v.Output, "")
	if d := it.String("detail"); v.Output == "" && d != "" {
		// Why it ended without output (denied, failed to start).
		u.detail(d)
	}
	u.termExit, u.exitCode = true, v.ExitCode
	if u.exitCode == nil {
		switch status {
		case archive.StatusSucceeded:
			u.exitCode = new(int)
		case archive.StatusFailed:
			one := 1
			u.exitCode = &one
		}
	}
	return open, data, &u
}
