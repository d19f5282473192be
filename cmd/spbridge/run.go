package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rivo/uniseg"
	"golang.org/x/term"

	"spbridge/internal/archive"
	"spbridge/internal/audit"
	"spbridge/internal/backend"
	"spbridge/internal/canonjson"
	"spbridge/internal/clis"
	"spbridge/internal/itemmap"
	"spbridge/internal/regfile"
	"spbridge/internal/session"
	"spbridge/internal/sessionindex"
	"spbridge/internal/trust"
)

// interruptedNotice is the notice the mappers add to an interrupted
// turn; the turn's end line says it already.
const interruptedNotice = "Interrupted."

// exitInterrupted is the exit code of a turn interrupted with Ctrl-C.
const exitInterrupted = 130

// turnError reports a turn that did not complete; its status picks the exit
// code.
type turnError struct{ status string }

func (e *turnError) Error() string {
	if e.status == itemmap.TurnInterrupted {
		return "the turn was interrupted"
	}
	return "the turn failed"
}

func runRun(ctx context.Context, st stdio, args []string) (err error) {
	ran := false // a turn of a plain folder's conversation ran (and is in the sessions index)
	f := newFlagSet("run", "PKG [--backend claude|codex] [--model M] [--image FILE]... [--allow-tool NAME]... [--json] [--color auto|always|never] [--thinking] [--trust-folder] [MESSAGE... | -]",
		"Run one turn from the shell: send MESSAGE (or standard input with -) to the\n"+
			"package's conversation, show the items as they arrive, and save the\n"+
			"conversation at the end, also after a failure or an interrupt. Several\n"+
			"MESSAGEs are sent one turn after another in the same CLI session, stopping\n"+
			"at the first turn that does not complete; images go with the first. A turn\n"+
			"that never started (the CLI missing, --cwd missing, the CLI failing before it\n"+
			"took the message) changes nothing in the package and exits 1. Ctrl-C\n"+
			"interrupts the turn and keeps what arrived. Tools show with their diffs and\n"+
			"output, the plan when it changes, the model's thinking as one dimmed\n"+
			"\"thinking…\" line (whole with --thinking), and each turn ends with a line of\n"+
			"tokens, context use and cost on standard error. Permission requests are asked on the\n"+
			"terminal: y allows once, a allows it again for the rest of the run (a command\n"+
			"by its program and first argument, or exactly, when that is an option or it\n"+
			"uses the shell's operators; another tool whole), n denies. Without a terminal\n"+
			"they are denied unless --allow-tool names the tool.\n"+
			"While a turn runs, a line typed on the terminal steers it: the agent takes it\n"+
			"into the running turn (Claude Code with its next step, Codex at once). A line\n"+
			"starting with > is queued instead, sent as a turn of its own after the others;\n"+
			"a line the turn could not take (it ended first, or codex exec) is queued too.\n"+
			"The folder's own Claude Code configuration (its hooks, settings, commands,\n"+
			"CLAUDE.md and .mcp.json) acts only once you trust the folder: the first run\n"+
			"there asks on the terminal (y trusts it from now on, see spbridge trust);\n"+
			"--trust-folder trusts it for this run without asking; without either, claude\n"+
			"runs with your own settings only and a notice says what was left out.\n"+
			"PKG is a document package: a document's folder (e.g. Poster.silverpoint)\n"+
			"that holds the document (document.json) and its agent/ conversation, or a\n"+
			"folder holding a conversation already (agent/conversation.json). Any other\n"+
			"folder (a repository, say) is a plain folder: the CLI works in it, its\n"+
			"conversation is kept in spbridge's state folder (where serve keeps an\n"+
			"editor's, listed under the folder) and nothing is written into it; the next\n"+
			"run there, or an editor opening it, carries that conversation on.\n"+
			"--plain-folder keeps it in the folder's agent/ instead.\n"+
			"Exit codes: 0 the turn completed, 1 it failed, 2 usage, 130 interrupted.")
	backendName := f.String("backend", clis.Default(), "the agent CLI: "+clis.Choices()+" (without it, a conversation goes on with the one it last ran on)")
	own := addCLIFlags(f, false, false)
	model := f.String("model", "", "the `MODEL` to ask the CLI for")
	images := f.StringArray("image", nil, "attach an image `FILE` (png, jpeg, gif, webp); repeatable")
	allowTools := f.StringArray("allow-tool", nil, "allow permission requests of tool `NAME` without asking; repeatable")
	asJSON := f.Bool("json", false, "print one JSON line per item change, and a turnEnd line after each turn")
	color := f.String("color", "auto", "colour diffs, statuses and the plan `WHEN`: auto (on a terminal, unless NO_COLOR is set), always or never")
	thinking := f.Bool("thinking", false, "show the model's thinking whole, dimmed, instead of one \"thinking…\" line")
	cwd := f.String("cwd", "", "the `DIR` the CLI runs in (default: the folder holding the package; a plain folder itself)")
	keep := f.Bool("keep-conversation", true, "keep the agent conversation in the document")
	idle := f.Duration("idle-timeout", backend.DefaultIdleTimeout, "end the turn when the CLI prints nothing for this long")
	noAudit := f.Bool("no-audit", false, "write no audit record of the turn")
	ckpt := addCheckpointFlags(f)
	plain := f.Bool("plain-folder", false, "keep a plain folder's conversation in the folder (its agent/), not in the state folder")
	trustFolder := f.Bool("trust-folder", false, "let the working folder's own Claude Code configuration act in this run, without asking (see spbridge trust)")
	kindf := addKindFlag(f)
	if done, err := f.parse(args, st.out); done || err != nil {
		return err
	}
	if f.NArg() < 1 {
		return usagef(f.cmd, "run needs a package folder and a message (or - to read it from standard input)")
	}
	pkg := f.Arg(0)
	if err := checkBackend(f, *backendName, own); err != nil {
		return err
	}
	kind, err := kindf.kind()
	if err != nil {
		return err
	}
	switch *color {
	case "auto", "always", "never":
	default:
		return usagef(f.cmd, "unknown --color %q (want auto, always or never)", *color)
	}
	// A plain folder (a repository, any folder) keeps its conversation in
	// the state folder (folder.go), unless --plain-folder keeps it in the
	// folder's agent/.
	isFolder, err := checkRunPackage(f.cmd, pkg, *plain)
	if err != nil {
		return err
	}
	messages, fromStdin, err := readMessages(f, st.in)
	if err != nil {
		return err
	}
	var atts []backend.Image
	for _, path := range *images {
		img, err := readImage(path)
		if err != nil {
			return err
		}
		atts = append(atts, img)
	}
	dir := *cwd
	if dir != "" {
		if err := checkDir(dir); err != nil {
			return fmt.Errorf("--cwd %s: %w", dir, err)
		}
	}
	if dir == "" {
		abs, err := filepath.Abs(pkg)
		if err != nil {
			return err
		}
		// A package's CLI works in the folder holding it; a plain
		// folder's, in the folder.
		dir = abs
		if !isFolder {
			dir = filepath.Dir(abs)
		}
	}
	folder := trust.Open(dir, nil, clis.Trust())
	if *trustFolder {
		if err := folder.Answer(trust.TrustOnce); err != nil {
			return err
		}
	}

	auditDir := ""
	if !*noAudit {
		if auditDir, err = audit.StateDir(); err != nil {
			return err
		}
	}
	state, err := audit.StateDir()
	if err != nil {
		return err
	}
	ckptDir, ckptPolicy, err := ckpt.options(state)
	if err != nil {
		return err
	}
	pkgDir, fresh := pkg, false
	if isFolder {
		// Found by the folder the CLI works in, as the session records it
		// (session.Options.Index) and serve lists an editor's.
		if pkgDir, err = folderConversation(state, dir); err != nil {
			return err
		}
		if pkgDir == "" {
			if pkgDir, err = newFolderConversation(state); err != nil {
				return err
			}
			fresh = true
			defer func() {
				// A conversation that had no turn leaves nothing behind
				// (the folder is removed only when empty).
				if !*keep || !ran {
					os.Remove(pkgDir)
				}
			}()
		}
	}
	named := ""
	if f.Changed("backend") {
		named = *backendName
	}
	paceGC()
	s, err := session.Open(session.Options{Dir: pkgDir, Kind: kind, Keep: *keep, Cwd: dir, AuditDir: auditDir,
		Saving: session.SaveAuto, RecoveryDir: filepath.Join(state, "recovery"), CLIs: clis.All,
		CheckpointDir: ckptDir, CheckpointPolicy: ckptPolicy,
		// Listed and searched as serve's are (conversation search).
		Index:      sessionindex.New(state),
		SaveFailed: func(err error) { fmt.Fprintf(st.err, "spbridge: save %s: %v\n", pkg, err) },
		// Without --backend the conversation goes on with the CLI it last
		// ran on (the reopen rule), else the default.
		Settings: session.Settings{CLI: named, DefaultCLI: *backendName, Model: *model,
			Backend: backend.Options{IdleTimeout: *idle, Folder: folder}, Own: own.all()}})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	// Until here a signal ended run at once (reading standard input, say);
	// from here it interrupts the turn, and the conversation is saved.
	if err := takeInterrupts(ctx); err != nil {
		return err
	}
	if r := s.Recovery(); r != nil {
		fmt.Fprintf(st.err, "spbridge: a recovery copy of this conversation from %s holds %d items the package does not (see spbridge conversation recover %s); this run goes on from the package\n",
			r.Time.Local().Format("2006-01-02 15:04"), r.Items, pkg)
	}
	absDir, _ := filepath.Abs(dir)
	cli, _ := clis.Lookup(*backendName) // checkBackend knows it
	h := &shellHost{out: st.out, errw: st.err, json: *asJSON, allow: *allowTools, thinking: *thinking, dir: absDir, vocab: cli.Tools,
		width:    func() int { return terminalWidth(os.Stderr) },
		outStyle: style(colorOn(*color, os.Getenv("NO_COLOR"), isTerminal(os.Stdout))),
		errStyle: style(colorOn(*color, os.Getenv("NO_COLOR"), isTerminal(os.Stderr)))}
	if !fromStdin && isTerminal(os.Stdin) {
		h.ask = bufio.NewReader(st.in)
	}
	if isFolder && *keep {
		h.turnDone = func() {
			if fresh && !ran {
				// Said once, when the folder's conversation begins.
				fmt.Fprintf(st.err, "spbridge: %s is not a document package: its conversation is kept in spbridge's state folder (%s), nothing is written into it; spbridge run %s continues it (--plain-folder keeps it in %s instead)\n",
					pkg, pkgDir, pkg, filepath.Join(pkg, archive.AgentDir))
			}
			ran = true
		}
	}
	if err := sendAll(ctx, st, s, h, messages, atts); err != nil {
		return err
	}
	if n := s.SkippedLines(); n > 0 {
		fmt.Fprintf(st.err, "spbridge: skipped %d line(s) from %s that were not events\n", n, s.CLI())
	}
	return nil
}

// sendAll sends the messages one turn each (the images with the first),
// each saved at its end (session.SaveAuto), shows what the CLI does
// between them (session.Between), and stops at the first turn that does not
// complete (a turnError) or does not start (its error; the turns before it
// are saved).
func sendAll(ctx context.Context, st stdio, s *session.Session, h *shellHost, messages []string, atts []backend.Image) error {
	// What the CLI does between the turns (a background subagent) is shown
	// and kept as it comes, as serve does.
	s.Watch(h)
	q := &runQueue{msgs: messages}
	// A line typed on the terminal while the run works steers the turn,
	// or is queued (run_steer.go).
	stop := h.steerFrom(s, q)
	defer stop()
	for i := 0; ; i++ {
		text, ok := q.next()
		if !ok {
			break
		}
		if i > 0 {
			atts = nil
		}
		if !h.json {
			h.startStatus(isTerminal(os.Stderr))
		}
		// What the CLI does between turns shows after the turn's end.
		release := s.Hold()
		h.mu.Lock()
		h.holding = true
		h.mu.Unlock()
		res, sendErr := s.Send(ctx, text, atts, h)
		h.stopStatus()
		h.mu.Lock()
		if errors.Is(sendErr, session.ErrNotStarted) {
			h.held = nil // the error says them
		}
		h.showHeld()
		h.mu.Unlock()
		if sendErr != nil {
			release()
			// A turn that never started changed nothing; the turns
			// before it are saved (session.SaveAuto).
			return sendErr
		}
		h.turnEnd(res.End)
		if h.turnDone != nil {
			h.turnDone()
		}
		release()
		for _, u := range res.Untaken {
			h.say("not taken, the turn was interrupted first (kept as unsent): " + u)
		}
		if res.AuditErr != nil {
			fmt.Fprintf(st.err, "spbridge: %v\n", res.AuditErr)
		}
		if res.SaveErr != nil { // the session saved the turn's end
			return fmt.Errorf("save %s: %w", s.Dir(), res.SaveErr)
		}
		if res.End.Status != itemmap.TurnCompleted {
			return &turnError{res.End.Status}
		}
		if ctx.Err() != nil {
			return &turnError{itemmap.TurnInterrupted}
		}
	}
	return nil
}

// documentFile is the file that makes a folder a document package (SPEC
// §1: a package is a folder holding document.json).
const documentFile = "document.json"

// checkRunPackage says what pkg is to run: a document package (a folder
// holding document.json, or one holding a conversation already,
// isPackage), or a plain folder (folder), whose conversation the state
// folder keeps; with plain, a plain folder is taken as a package (its
// conversation in its agent/). A missing pkg is "no such package", as for
// every command taking one; a file is a usage error.
func checkRunPackage(cmd, pkg string, plain bool) (folder bool, err error) {
	fi, err := os.Stat(pkg)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, fmt.Errorf("no such package: %s", pkg)
	case err != nil:
		return false, err
	case !fi.IsDir():
		return false, usagef(cmd, "not a document package: %s (a file, not a folder)", pkg)
	case plain:
		return false, nil
	}
	ok, err := isPackage(pkg)
	return !ok && err == nil, err
}

// checkDir reports why dir cannot be a working folder.
func checkDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errors.New("the folder does not exist")
	case err != nil:
		return err
	case !fi.IsDir():
		return errors.New("not a folder")
	}
	return nil
}

// checkBackend refuses a backend spbridge does not have, or a value of a
// CLI's own setting it does not take.
func checkBackend(f *flagSet, backend string, own cliFlags) error {
	if _, ok := clis.Lookup(backend); !ok {
		return usagef(f.cmd, "unknown backend %q (want %s)", backend, clis.Choices())
	}
	return own.check(f)
}

// readMessages returns the messages: the arguments after PKG, or one from
// standard input for "-".
func readMessages(f *flagSet, in io.Reader) ([]string, bool, error) {
	if f.NArg() < 2 {
		return nil, false, usagef(f.cmd, "run needs a message (or - to read it from standard input)")
	}
	args := f.Args()[1:]
	if !slices.Contains(args, "-") {
		for _, a := range args {
			if strings.TrimSpace(a) == "" {
				return nil, false, usagef(f.cmd, "a message is empty")
			}
		}
		return args, false, nil
	}
	if len(args) > 1 {
		return nil, false, usagef(f.cmd, "- (the message on standard input) must be the only message")
	}
	data, err := io.ReadAll(in)
	if err != nil {
		return nil, true, fmt.Errorf("read message from standard input: %w", err)
	}
	text := strings.TrimRight(string(data), "\n")
	if strings.TrimSpace(text) == "" {
		return nil, true, usagef(f.cmd, "the message on standard input is empty")
	}
	return []string{text}, true, nil
}

// readImage reads an image file and tells its type from its bytes.
func readImage(path string) (backend.Image, error) {
	data, err := regfile.ReadFile(path)
	if err != nil {
		return backend.Image{}, fmt.Errorf("read image: %w", err)
	}
	mime := http.DetectContentType(data)
	switch mime {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
	default:
		return backend.Image{}, fmt.Errorf("image %s: %s is not png, jpeg, gif or webp", path, mime)
	}
	return backend.Image{MimeType: mime, Data: data}, nil
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// terminalWidth is the columns of the terminal f is, 0 when unknown.
func terminalWidth(f *os.File) int {
	w, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return w
}

// shellHost shows a turn in a terminal or as JSON lines, and answers
// permission requests.
type shellHost struct {
	out, errw io.Writer
	json      bool
	allow     []string
	ask       *bufio.Reader // the terminal to ask on, or nil
	thinking  bool          // show thinking whole rather than one line
	width     func() int    // the error stream's terminal columns, 0 when unknown
	// outStyle and errStyle colour what goes to out and errw.
	outStyle, errStyle style

	// turnDone, when set, is told each turn that ran, after its end.
	turnDone func()

	mu        sync.Mutex
	lastText  map[string]int        // assistant and thinking item id → bytes of its text printed
	asked     map[string]bool       // tool item ids and diffs whose diffs a question showed
	tools     map[string]*toolShown // tool item id → what of it was printed
	plan      []itemmap.PlanEntry   // the plan as last shown
	midLine   bool                  // the last output did not end a line
	prompting bool                  // a question waits on the terminal
	status    string                // what the agent does when no call runs
	// holding is set while a turn may still turn out never to have
	// started: its failures wait in held (the error of a turn that never
	// started says them, once), and show with its next change or its end.
	holding   bool
	held      []string
	running   []*toolShown     // the calls running now, in the order they started
	turnStart time.Time        // when the turn began: the status line's count when no call runs
	now       func() time.Time // the clock (time.Now when nil)
	stopCh    chan struct{}
	statusWG  sync.WaitGroup
	statusLen int

	askMu      sync.Mutex    // one question at a time
	vocab      backend.Tools // the CLI's tool vocabulary, for the question's words
	dir        string        // the folder the CLI runs in, absolute: a grant's folder is named relative to it
	answerOnce sync.Once
	answerCh   chan string
	// onLine takes a line typed while no question waits (run_steer.go),
	// nil when such a line waits for the next question.
	onLine func(string)
}

// toolShown is what of a tool call was printed.
type toolShown struct {
	view   *itemmap.ToolView // the latest view
	depth  int               // how many calls it runs under
	parent *toolShown        // the call it runs under, nil at the top
	title  string            // its title as last seen
	header bool              // its line was printed while it ran
	out    int               // bytes of its output printed
	outMid bool              // its output so far ends mid-line
	done   bool              // its final line was printed

	// While it runs: since when (its input known, or its question
	// answered), what the status line calls it, and whether it is a
	// command whose input is known (a command running for
	// runningLineAfter gets its [running] line).
	running bool
	started time.Time
	label   string
	command bool
	ready   bool
}

// runningLineAfter is how long a command runs before its `tool TITLE
// [running]` line is printed, whether or not it was asked about: a
// quicker one shows as one line when it ended.
const runningLineAfter = time.Second

// clock is the time now.
func (h *shellHost) clock() time.Time {
	if h.now != nil {
		return h.now()
	}
	return time.Now()
}

// jsonLine is what `run --json` writes for one item change: a text that
// grew by streaming as what was appended ({"field":"text","id":…,
// "op":"append","text":delta}), any other change as the whole item
// ({"item":{…},"op":"add"|"update"|"remove"}), so the output stays linear
// in the reply.
func jsonLine(c itemmap.Change) map[string]any {
	if c.Op == itemmap.OpUpdate && c.Delta != "" {
		return map[string]any{"op": "append", "id": c.Item.ID(), "field": "text", "text": c.Delta}
	}
	if c.Op == itemmap.OpUpdate && c.OutputDelta != "" {
		// The item did not change: only what the running command printed.
		return map[string]any{"op": "output", "id": c.Item.ID(), "text": c.OutputDelta}
	}
	return map[string]any{"op": c.Op.String(), "item": c.Item.Map()}
}

func (h *shellHost) Change(c itemmap.Change) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.json {
		line, err := canonjson.EncodeCompact(jsonLine(c))
		if err == nil {
			fmt.Fprintf(h.out, "%s\n", line)
		}
		return
	}
	h.clearStatus()
	it := c.Item
	if it.Type() == archive.TypeFailure && h.holding {
		h.held = append(h.held, itemText(it))
		return
	}
	if it.Type() != archive.TypeUser {
		// Past the user's item (added at the turn's start, removed from
		// a turn that never started), the turn started.
		h.showHeld()
	}
	if it.Type() == archive.TypeTool {
		h.showTool(c)
	}
	if c.Plan != nil && !slices.Equal(c.Plan, h.plan) {
		h.endLine()
		fmt.Fprint(h.out, formatPlan(c.Plan, h.outStyle))
		h.plan = slices.Clone(c.Plan)
	}
	switch it.Type() {
	case archive.TypeUser:
		h.status = "waiting for the agent"
	case archive.TypeAssistant:
		if h.lastText == nil {
			h.lastText = map[string]int{}
		}
		if c.Op == itemmap.OpRemove {
			return
		}
		text := it.String("text")
		done, seen := h.lastText[it.ID()]
		if !seen {
			h.endLine()
		}
		if done <= len(text) {
			fmt.Fprint(h.out, text[done:])
			h.lastText[it.ID()] = len(text)
			h.midLine = !strings.HasSuffix(text, "\n")
		}
		h.status = "writing"
	case archive.TypeThinking:
		h.showThinking(c)
		h.status = "thinking"
	case archive.TypeWebSearch:
		if c.Op == itemmap.OpAdd {
			return
		}
		h.endLine()
		fmt.Fprintf(h.out, "web search: %s [%s]\n", it.String("query"), it.String("status"))
	case archive.TypeNotice, archive.TypeFailure, archive.TypeDirections, archive.TypeQuestions:
		// A permission request (toolApproval) is not shown here: its
		// question is its one line.
		if c.Op != itemmap.OpAdd && it.Type() != archive.TypeFailure {
			return
		}
		if it.Type() == archive.TypeNotice && it.String("text") == interruptedNotice {
			return // the turn's end line says it
		}
		h.endLine()
		fmt.Fprintln(h.out, itemText(it))
	}
}

// showHeld prints the failures held while the turn might not have
// started: it did.
func (h *shellHost) showHeld() {
	h.holding = false
	if len(h.held) == 0 {
		return
	}
	h.endLine()
	for _, s := range h.held {
		fmt.Fprintln(h.out, s)
	}
	h.held = nil
}

// showTool prints a tool call: its output as it arrives, under a line
// naming the call; once it ended, a line with its title and status, the
// diffs of a successful edit and the rest of its output. A subagent's
// calls are indented under the call they run under.
func (h *shellHost) showTool(c itemmap.Change) {
	it := c.Item
	if h.tools == nil {
		h.tools = map[string]*toolShown{}
	}
	t := h.tools[it.ID()]
	if t == nil {
		t = &toolShown{}
		if c.Tool != nil && c.Tool.ParentID != "" {
			if p := h.tools[c.Tool.ParentID]; p != nil {
				t.depth, t.parent = p.depth+1, p
			}
		}
		h.tools[it.ID()] = t
	}
	if c.Tool != nil {
		t.view = c.Tool
	}
	if c.Op == itemmap.OpRemove || t.done {
		h.ended(t)
		return
	}
	indent := strings.Repeat("  ", t.depth)
	title := toolTitle(it, t.view)
	t.title = title
	status := it.String("status")
	out := ""
	if t.view != nil {
		out = t.view.Output
	}
	if status == archive.StatusRunning {
		h.started(t, it, title)
		if len(out) > t.out && t.out < maxShownOutput {
			h.toolHeader(t)
			h.toolOutput(t, out, indent)
		}
		return
	}
	t.done = true
	h.ended(t)
	line := indent + "tool " + title
	if s := it.String("statusText"); s != "" && s != status {
		line += " (" + s + ")"
	}
	line += " " + h.outStyle.paint(statusStyle(status), "["+status+"]")
	h.toolHeader(t.parent)
	if !t.header {
		// The title first, then the diffs and what the call printed.
		h.endLine()
		fmt.Fprintln(h.out, line)
		h.toolDiffs(it, t, indent)
		h.toolOutput(t, out, indent)
		h.endLine()
	} else {
		// Its output streamed under its title: the rest of it, then
		// how it ended.
		h.toolOutput(t, out, indent)
		h.endLine()
		fmt.Fprintln(h.out, line)
		h.toolDiffs(it, t, indent)
	}
	if more := len(out) - t.out; more > 0 {
		fmt.Fprintf(h.out, "%s    %s\n", indent, h.outStyle.paint(sgrDim, fmt.Sprintf("… %d bytes more", more)))
	}
	h.status = "waiting for the agent"
}

// started notes that t runs: from its first running change on, the
// status line names it with the time it has run, and the line of the
// reply or thinking it came after is ended, so that the status line shows
// (it is not drawn over an open line). Its time counts from when its input
// is known (Claude's streams in after the call is named).
func (h *shellHost) started(t *toolShown, it archive.Item, title string) {
	ready := it.String("summary") != ""
	if !t.running {
		t.running, t.started = true, h.clock()
		h.running = append(h.running, t)
		h.endLine()
	} else if ready && !t.ready {
		t.started = h.clock()
	}
	t.ready = ready
	t.label = toolLabel(it, title)
	t.command = t.view != nil && (t.view.Terminal || t.view.Kind == itemmap.KindExecute)
}

// ended notes that t no longer runs.
func (h *shellHost) ended(t *toolShown) {
	if !t.running {
		return
	}
	t.running = false
	h.running = slices.DeleteFunc(h.running, func(r *toolShown) bool { return r == t })
}

// toolHeader prints the line that heads a running call, after those of
// the calls it runs under, unless it was printed or the call ended: a
// call's title comes before what it printed and before its subagent's
// calls.
func (h *shellHost) toolHeader(t *toolShown) {
	if t == nil || t.header || t.done {
		return
	}
	h.toolHeader(t.parent)
	h.endLine()
	fmt.Fprintf(h.out, "%stool %s %s\n", strings.Repeat("  ", t.depth), t.title, h.outStyle.paint(sgrCyan, "[running]"))
	t.header = true
}

// toolDiffs prints the diffs of a successful edit, but not those its
// permission question showed already.
func (h *shellHost) toolDiffs(it archive.Item, t *toolShown, indent string) {
	if t.view == nil || it.String("status") != archive.StatusSucceeded || h.asked[it.ID()] {
		return
	}
	for _, d := range t.view.Diffs {
		if !h.asked[diffKey(d)] {
			fmt.Fprint(h.out, formatDiff(d, indent+"    ", h.outStyle))
		}
	}
}

// diffKey names a diff by its file and texts.
func diffKey(d itemmap.Diff) string {
	old := "\x00"
	if d.OldText != nil {
		old = *d.OldText
	}
	return "diff\x00" + d.Path + "\x00" + old + "\x00" + d.NewText
}

// showThinking prints the model's thinking dimmed: one "thinking…" line
// for each thinking item, or with --thinking its text as it streams.
func (h *shellHost) showThinking(c itemmap.Change) {
	it := c.Item
	if c.Op == itemmap.OpRemove {
		return
	}
	if h.lastText == nil {
		h.lastText = map[string]int{}
	}
	text := it.String("text")
	done, seen := h.lastText[it.ID()]
	if !h.thinking {
		if !seen && strings.TrimSpace(text) != "" {
			h.endLine()
			fmt.Fprintln(h.out, h.outStyle.paint(sgrDim, "thinking…"))
			h.lastText[it.ID()] = len(text)
		}
		return
	}
	if !seen {
		if strings.TrimSpace(text) == "" {
			return
		}
		h.endLine()
	}
	if done < len(text) {
		fmt.Fprint(h.out, h.outStyle.paint(sgrDim, text[done:]))
		h.lastText[it.ID()] = len(text)
		h.midLine = !strings.HasSuffix(text, "\n")
	}
}

// toolOutput prints what of out (up to maxShownOutput bytes) t has not
// printed yet, indented under its call.
func (h *shellHost) toolOutput(t *toolShown, out, indent string) {
	shown := cutBytes(out, maxShownOutput)
	if len(shown) <= t.out {
		return
	}
	chunk := shown[t.out:]
	atStart := !t.outMid || !h.midLine // another line came in between
	fmt.Fprint(h.out, indentLines(chunk, indent+"    ", atStart))
	t.out = len(shown)
	t.outMid = !strings.HasSuffix(chunk, "\n")
	h.midLine = t.outMid
}

// endLine ends a line of streamed text before other output.
func (h *shellHost) endLine() {
	if h.midLine {
		fmt.Fprintln(h.out)
		h.midLine = false
	}
}

// turnEnd shows how a turn ended: a turnEnd record with --json, else one
// line on the error stream (standard output keeps the conversation).
func (h *shellHost) turnEnd(end *itemmap.TurnEnd) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.json {
		if line, err := canonjson.EncodeCompact(turnEndJSON(end)); err == nil {
			fmt.Fprintf(h.out, "%s\n", line)
		}
		return
	}
	h.clearStatus()
	h.showHeld()
	h.endLine()
	fmt.Fprint(h.errw, formatTurnEnd(end, h.errStyle, h.columns()))
}

// columns is the error stream's terminal width, 0 when unknown.
func (h *shellHost) columns() int {
	if h.width == nil {
		return 0
	}
	return h.width()
}

// ItemChanged shows a change the CLI made between turns.
func (h *shellHost) ItemChanged(c itemmap.Change) { h.Change(c) }

// OwnTurnEnded shows how a turn the CLI ran on its own between turns
// ended, as a turn's end (its --json record says "origin": "cli").
func (h *shellHost) OwnTurnEnded(end *itemmap.TurnEnd, auditErr error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if auditErr != nil {
		h.clearStatus()
		h.endLine()
		fmt.Fprintf(h.errw, "spbridge: %v\n", auditErr)
	}
	if h.json {
		rec := turnEndJSON(end)
		rec["origin"] = session.OriginCLI
		if line, err := canonjson.EncodeCompact(rec); err == nil {
			fmt.Fprintf(h.out, "%s\n", line)
		}
		return
	}
	h.clearStatus()
	h.endLine()
	fmt.Fprint(h.errw, formatTurnEnd(end, h.errStyle, h.columns()))
}

// BetweenFailed says that what the CLI did between turns could not be
// handled; the session hears no more of it.
func (h *shellHost) BetweenFailed(why string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.clearStatus()
	h.endLine()
	fmt.Fprintf(h.errw, "spbridge: what the agent did between turns could not be shown: %s\n", why)
}

// Ask answers a permission request no "always" answer of the session
// covers (the session decides by its grants first: session.Grants.Decide):
// allowed by --allow-tool; else asked on the terminal, one question at a
// time (a request an answer given meanwhile covers is not asked); with no
// terminal, denied with a word on the error stream naming the flag that
// would allow it. "a" answers always, where the question offers it.
func (h *shellHost) Ask(ctx context.Context, q session.Question) session.Answer {
	a := q.Approval
	if slices.Contains(h.allow, a.ToolName) {
		return session.Answer{Allow: true}
	}
	h.askMu.Lock()
	defer h.askMu.Unlock()
	switch allowed, rejected := q.Decided(); {
	case rejected:
		return session.Answer{Message: session.RejectedForSession}
	case allowed:
		return session.Answer{Allow: true}
	}
	if h.ask == nil {
		what := ""
		if cmd := backend.ApprovalCommand(a); cmd != "" {
			what = " (`" + cutBytes(cmd, maxPromptInput) + "`)"
		}
		h.mu.Lock()
		h.clearStatus()
		h.endLine()
		fmt.Fprintf(h.errw, "spbridge: denied %s%s: no terminal to ask on; allow it with --allow-tool %s\n", a.ToolName, what, a.ToolName)
		h.mu.Unlock()
		return session.Answer{Message: fmt.Sprintf("spbridge run has no terminal to ask on; allow %s with --allow-tool %s.", a.ToolName, a.ToolName)}
	}
	answers := h.freshAnswers()
	h.mu.Lock()
	h.clearStatus()
	h.endLine()
	always := ""
	if q.CanAlways {
		always = q.Always.Describe(h.dir) // a command with its folder
	}
	fmt.Fprint(h.errw, formatApproval(a, h.vocab, always, h.errStyle))
	if backend.ApprovalCommand(a) == "" && a.Tool != nil && len(a.Tool.Diffs) > 0 {
		// The diff is shown once: here, not again when the edit is done.
		if h.asked == nil {
			h.asked = map[string]bool{}
		}
		if a.ToolItemID != "" {
			h.asked[a.ToolItemID] = true
		}
		for _, d := range a.Tool.Diffs {
			h.asked[diffKey(d)] = true
		}
	}
	h.prompting = true
	h.mu.Unlock()
	s, ok := h.answer(ctx, answers)
	if !ok {
		return session.Answer{Message: "The turn was interrupted."}
	}
	// The call asked about runs from now on, not from when it was named.
	h.mu.Lock()
	if t := h.tools[a.ToolItemID]; t != nil && t.running {
		t.started = h.clock()
	}
	h.mu.Unlock()
	switch s {
	case "y", "yes":
		return session.Answer{Allow: true}
	case "a", "always":
		if !q.CanAlways {
			break // no "always" was offered
		}
		return session.Answer{Allow: true, Always: true}
	}
	return session.Answer{Message: "The user denied this from the terminal."}
}

// Granted: a request an earlier "a" covers is allowed without a word.
func (h *shellHost) Granted(itemmap.Approval, bool) {}

// answer waits for the line that answers the question just asked (set
// prompting first), trimmed and lower case, and ends the prompting; false
// when ctx ended first (an end of the input is the answer "").
func (h *shellHost) answer(ctx context.Context, answers <-chan string) (string, bool) {
	defer func() {
		h.mu.Lock()
		h.prompting = false
		h.mu.Unlock()
	}()
	select {
	case s := <-answers:
		return strings.TrimSpace(strings.ToLower(s)), true
	case <-ctx.Done():
		h.mu.Lock()
		fmt.Fprintln(h.errw)
		h.mu.Unlock()
		return "", false
	}
}

// answers delivers the lines typed on the terminal, from one reader for
// the whole run; it is closed at the end of the input.
func (h *shellHost) answers() <-chan string {
	h.answerOnce.Do(func() {
		h.answerCh = make(chan string)
		go func() {
			defer close(h.answerCh)
			for {
				line, err := h.ask.ReadString('\n')
				h.mu.Lock()
				typed := h.onLine
				if h.prompting {
					typed = nil
				}
				h.mu.Unlock()
				if typed != nil && line != "" {
					typed(line) // steers the turn, or is queued
				} else if err == nil || line != "" {
					h.answerCh <- line
				}
				if err != nil {
					return
				}
			}
		}()
	})
	return h.answerCh
}

// freshAnswers is answers with the lines typed before now dropped: a line
// typed before a question is no answer to it.
func (h *shellHost) freshAnswers() <-chan string {
	answers := h.answers()
	for {
		select {
		case _, ok := <-answers:
			if !ok {
				return answers
			}
		default:
			return answers
		}
	}
}

// startStatus starts the turn's ticker: on a terminal (draw) it keeps a
// status line on stderr saying what the agent does and for how long;
// with or without one, a command that runs for runningLineAfter gets its
// [running] line.
func (h *shellHost) startStatus(draw bool) {
	h.stopCh = make(chan struct{})
	h.mu.Lock()
	h.status = "starting"
	h.turnStart = h.clock()
	h.running = nil
	h.mu.Unlock()
	h.statusWG.Add(1)
	go func() {
		defer h.statusWG.Done()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-h.stopCh:
				h.mu.Lock()
				h.clearStatus()
				h.mu.Unlock()
				return
			case <-tick.C:
				h.mu.Lock()
				now := h.clock()
				h.showRunning(now)
				if draw {
					h.drawStatus(now)
				}
				h.mu.Unlock()
			}
		}
	}()
}

// showRunning prints the [running] line of each command that has run for
// runningLineAfter with its input known, unless a question waits.
func (h *shellHost) showRunning(now time.Time) {
	if h.prompting {
		return
	}
	for _, t := range h.running {
		if t.command && t.ready && !t.header && now.Sub(t.started) >= runningLineAfter {
			h.clearStatus()
			h.toolHeader(t)
		}
	}
}

// drawStatus redraws the status line, cut to the terminal's width so that
// it stays on one row, unless a line of output or a question is open: the
// call that started last while any runs (its name and title, how long it
// has run, how many others run), else what the agent does and how long the
// turn has run.
func (h *shellHost) drawStatus(now time.Time) {
	if h.midLine || h.prompting {
		return
	}
	h.clearStatus()
	status, since := h.status, h.turnStart
	if n := len(h.running); n > 0 {
		t := h.running[n-1]
		status, since = "running "+t.label, t.started
		if n > 1 {
			status += fmt.Sprintf(" and %d more", n-1)
		}
	}
	secs := 0
	if !since.IsZero() {
		secs = max(int(now.Sub(since).Seconds()), 0)
	}
	s := statusLine(status, secs, h.columns())
	fmt.Fprint(h.errw, s)
	h.statusLen = uniseg.StringWidth(s)
}

func (h *shellHost) clearStatus() {
	if h.statusLen > 0 {
		fmt.Fprintf(h.errw, "\r%s\r", strings.Repeat(" ", h.statusLen))
		h.statusLen = 0
	}
}

func (h *shellHost) stopStatus() {
	if h.stopCh != nil {
		close(h.stopCh)
		h.statusWG.Wait()
		h.stopCh = nil
	}
	h.mu.Lock()
	h.endLine()
	h.mu.Unlock()
}
