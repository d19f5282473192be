package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/spf13/pflag"
	"golang.org/x/term"

	"spbridge/docs"
	"spbridge/internal/archive"
	"spbridge/internal/clis"
)

// commandGroups orders the commands of spbridge's own help under
// headings. A command in none is listed under the last.
var commandGroups = []struct {
	title string
	names []string
}{
	{"Editor commands", []string{"serve"}},
	{"Conversation commands", []string{"run", "conversation", "rewind", "import", "transcript", "export", "save", "fsck", "replay"}},
	{"Audit commands", []string{"audit"}},
	{"State commands", []string{"state", "trust"}},
	{"Auth commands", []string{"login", "auth"}},
	{"Other commands", []string{"version", "help", "completion"}},
}

// examples are the Examples section of each command's help, by the
// command's name after "spbridge" ("" for spbridge itself): a line
// starting with # says what the next does. TestHelpExamples runs every
// "$ spbridge" line's arguments through the command's flags.
var examples = map[string]string{
	"": `
# Let an editor start spbridge as its agent, on standard input and output
$ spbridge serve
# Run one turn of a document's conversation from the shell
$ spbridge run Poster.silverpoint "Make the title larger"
# In a repository: the conversation kept in the state folder, not here
$ spbridge run . "Why does TestParse fail?"
# Read the conversation kept in the document
$ spbridge conversation show --last Poster.silverpoint`,
	"serve": `
# What an editor runs: the Agent Client Protocol on standard input and output
$ spbridge serve
# Sessions that name no backend use codex, driven through codex exec
$ spbridge serve --backend codex --codex-transport exec
# An editor's terminal log-in
$ spbridge serve --login claude
# CLIs idle for a minute are put to sleep; at most four run at once
$ spbridge serve --cli-idle 1m --max-live-clis 4`,
	"run": `
# One turn with claude
$ spbridge run Poster.silverpoint "Make the title larger"
# With codex and a picture, the message read from standard input
$ spbridge run --backend codex --image a.png Poster.silverpoint - < ask.txt
# From a script: JSON lines, edits allowed without asking
$ spbridge run --json --allow-tool Edit Poster.silverpoint "Fix the typo"
# The model's thinking shown whole rather than as one line
$ spbridge run --thinking Poster.silverpoint "Why is the title clipped?"
# In a repository: the conversation kept in the state folder, not here
$ spbridge run . "Why does TestParse fail?"
# A folder that is no document package, its conversation kept in notes/agent/
$ spbridge run --plain-folder notes "Sum up these notes"`,
	"conversation": `
$ spbridge conversation list ~/Documents
$ spbridge conversation show --last Poster.silverpoint
$ spbridge conversation new --yes Poster.silverpoint`,
	"conversation show": `
# The whole conversation as text
$ spbridge conversation show Poster.silverpoint
# Only the last turn
$ spbridge conversation show --last Poster.silverpoint
# As saved: canonical format-1 JSON
$ spbridge conversation show --json Poster.silverpoint`,
	"conversation list": `
# The packages under the current folder
$ spbridge conversation list
# One JSON object a package
$ spbridge conversation list --json ~/Documents
# The sessions Claude Code and Codex keep themselves, of this folder
$ spbridge conversation list --cli --cwd .`,
	"conversation search": `
# The conversations that speak of a flaky test, best first
$ spbridge conversation search flaky test
# A phrase, in this folder's conversations only
$ spbridge conversation search --cwd . '"release notes"'
# The sessions Claude Code and Codex keep themselves, as JSON
$ spbridge conversation search --cli --json 'migrat*'
# Make the index anew
$ spbridge conversation search --rebuild`,
	"import": `
# A session by the id spbridge conversation list --cli shows
$ spbridge import ca0632fd-a8b0-4a1c-9271-caa77e5d4c40 Poster.silverpoint
# A Codex rollout file, over the conversation the package holds
$ spbridge import --replace rollout.jsonl Poster.silverpoint
# Into a package made for it (its folder, docs, must be there)
$ spbridge import ca0632fd-a8b0-4a1c-9271-caa77e5d4c40 docs/New.silverpoint
# As the conversation spbridge run . continues in this repository
$ spbridge import ca0632fd-a8b0-4a1c-9271-caa77e5d4c40 .`,
	"conversation new": `
$ spbridge conversation new --yes Poster.silverpoint`,
	"rewind": `
# What would change: the files and the items from the second user message on
$ spbridge rewind --to 2 --dry-run Poster.silverpoint
# Rewind to before a user item (ids as conversation show --json prints them)
$ spbridge rewind --to 0D7E8C55-0F3A-4E7B-8D61-2B9A0C1D2E30 Poster.silverpoint
# Only the files, a file someone changed since included
$ spbridge rewind --files --force --to 2 Poster.silverpoint
# Put back what the last rewind changed
$ spbridge rewind --undo Poster.silverpoint`,
	"conversation recover": `
# What spbridge kept after an editor that saves the document crashed
$ spbridge conversation recover Poster.silverpoint
# Put it into the document
$ spbridge conversation recover --take Poster.silverpoint`,
	"transcript": `
$ spbridge transcript Poster.silverpoint`,
	"export": `
# A page to share: one HTML file, nothing loaded when opened
$ spbridge export -o poster.html Poster.silverpoint
# The same as Markdown, on standard output
$ spbridge export --format md Poster.silverpoint
# Replace a page exported earlier
$ spbridge export --force -o poster.html Poster.silverpoint`,
	"save": `
# Rewrite agent/ canonically and prune the images nothing references
$ spbridge save Poster.silverpoint
# Take the conversation out of the document
$ spbridge save --keep-conversation=false Poster.silverpoint`,
	"fsck": `
$ spbridge fsck Poster.silverpoint`,
	"replay": `
# A stream recorded with claude -p --output-format stream-json
$ spbridge replay --backend claude turn.jsonl
# codex exec --json's stream, from standard input
$ codex exec --json "List the files" | spbridge replay --backend codex`,
	"audit": `
$ spbridge audit verify Poster.silverpoint
$ spbridge audit show Poster.silverpoint
$ spbridge audit export -o audit.html Poster.silverpoint
$ spbridge audit head >> ~/spbridge-heads.txt`,
	"audit verify": `
# The log of one conversation
$ spbridge audit verify Poster.silverpoint
# Every log, against the heads kept outside the state folder
$ spbridge audit verify --heads ~/spbridge-heads.txt`,
	"audit show": `
$ spbridge audit show Poster.silverpoint
# The records as written, by the conversation's identity
$ spbridge audit show --json --id 0D7E8C55-0F3A-4E7B-8D61-2B9A0C1D2E30`,
	"audit export": `
# The log as a page, its verification at the top
$ spbridge audit export -o audit.html Poster.silverpoint
# As Markdown, by the conversation's identity
$ spbridge audit export --format md --id 0D7E8C55-0F3A-4E7B-8D61-2B9A0C1D2E30`,
	"audit head": `
# Keep the heads outside the state folder, e.g. after each session
$ spbridge audit head >> ~/spbridge-heads.txt
$ spbridge audit head --json`,
	"state": `
$ spbridge state prune --older-than 30d --dry-run`,
	"state prune": `
# See what has not changed for 30 days, then remove it
$ spbridge state prune --older-than 30d --dry-run
$ spbridge state prune --older-than 30d`,
	"trust": `
$ spbridge trust list
$ spbridge trust add ~/src/project`,
	"trust list": `
$ spbridge trust list`,
	"trust add": `
# Let the folder's hooks, settings and .mcp.json act from the next session
$ spbridge trust add ~/src/project
# Never trust a cloned repository, and never ask
$ spbridge trust add --never ~/Downloads/repo`,
	"trust revoke": `
$ spbridge trust revoke ~/src/project`,
	"login": `
$ spbridge login --backend claude
# From a program, without a terminal: the CLI gets 40 rows by 120 columns
$ spbridge login --backend codex --size 40x120`,
	"auth": `
$ spbridge auth status
$ spbridge auth logout --backend codex`,
	"auth status": `
$ spbridge auth status
$ spbridge auth status --backend codex --json`,
	"auth logout": `
$ spbridge auth logout --backend claude`,
	"version": `
$ spbridge version
# Also the CLIs' versions found, and the versions spbridge is tested with
$ spbridge version --clis
# Also what holds the processes a CLI starts
$ spbridge version --supervision`,
	"help": `
$ spbridge help
$ spbridge help conversation show
# The manual's page on setting spbridge up in an editor
$ spbridge help editors`,
	"completion": `
# bash, in this shell
$ source <(spbridge completion bash)
# bash, in every new shell
$ echo 'source <(spbridge completion bash)' >> ~/.bashrc
# zsh: a file named _spbridge in a folder of $fpath, before compinit
$ spbridge completion zsh > ~/.zfunc/_spbridge
# fish
$ spbridge completion fish > ~/.config/fish/completions/spbridge.fish
# PowerShell, in $PROFILE
PS> spbridge completion powershell | Out-String | Invoke-Expression`,
}

// flagChoices are the values a flag takes, by flag name, for the usage
// line and completion. Every command's flag of that name takes them.
func flagChoices(name string) []string {
	if values, ok := flagValues(name); ok {
		return values
	}
	switch name {
	case "backend", "login":
		return clis.Names()
	case "color":
		return []string{"auto", "always", "never"}
	case "kind":
		return []string{string(archive.KindDocument), string(archive.KindTemplate), string(archive.KindDesignSystem)}
	}
	return nil
}

// helpCapture is a writer that parse recognizes: instead of printing
// the help, it keeps the command's flag set. It finds a command's flags
// without running the command (help, completion and their tests).
type helpCapture struct {
	f *flagSet
}

func (*helpCapture) Write(p []byte) (int, error) { return len(p), nil }

// flagsOf returns the flag set of the command that runs as run, parsed
// with args and --help; nil with the usage error when args do not parse.
func flagsOf(run func(context.Context, stdio, []string) error, args ...string) (*flagSet, error) {
	c := &helpCapture{}
	err := run(context.Background(), stdio{strings.NewReader(""), c, io.Discard}, append(args, "--help"))
	if err != nil {
		return nil, err
	}
	return c.f, nil
}

// summaryOf is the one-line summary of the command at path ("conversation
// show"), from its parent's list; "" when there is none.
func summaryOf(path string) string {
	names := strings.Fields(path)
	cmds := topCommands()
	summary := ""
	for i, name := range names {
		c, ok := findCommand(cmds, name)
		if !ok {
			return ""
		}
		summary = c.summary
		if i == len(names)-1 {
			break
		}
		f, err := flagsOf(c.run)
		if err != nil || f == nil {
			return ""
		}
		cmds = f.commands
	}
	return summary
}

func findCommand(cmds []command, name string) (command, bool) {
	for _, c := range cmds {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// helpWidth is the width help is wrapped to when written to w: the
// terminal's, else $COLUMNS when set, else 80.
func helpWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			return cols
		}
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return 80
}

// printUsage writes the command's help to w: its summary, usage line,
// what it does, its commands, flags and examples.
func (f *flagSet) printUsage(w io.Writer) {
	width := max(helpWidth(w), 20)
	var b strings.Builder
	if s := summaryOf(f.cmd); s != "" && f.cmd != "" {
		b.WriteString(wrapText(strings.ToUpper(s[:1])+s[1:]+".", 0, width) + "\n\n")
	}
	b.WriteString(wrapWords("Usage: "+commandPath(f.cmd), f.synopsis(), width))
	if f.about != "" {
		fmt.Fprintf(&b, "\n%s\n", fitText(f.about, width))
	}
	if len(f.commands) > 0 {
		f.writeCommands(&b, width)
	}
	fmt.Fprintf(&b, "\nFlags:\n%s", flagUsages(f.FlagSet, width))
	if ex := strings.TrimSpace(examples[f.cmd]); ex != "" {
		b.WriteString("\nExamples:\n")
		for line := range strings.SplitSeq(ex, "\n") {
			b.WriteString("  " + line + "\n")
		}
	}
	if len(f.commands) > 0 {
		b.WriteString("\n" + wrapText(fmt.Sprintf("Run '%s COMMAND --help' for a command's usage.", commandPath(f.cmd)), 0, width) + "\n")
		if f.cmd == "" {
			b.WriteString(wrapText("Run 'spbridge help TOPIC' for a page of the manual ("+strings.Join(docs.Topics(), ", ")+
				"); 'spbridge help editors' sets spbridge up in an editor.", 0, width) + "\n")
		}
	}
	io.WriteString(w, b.String())
}

// writeCommands lists the subcommands, under the headings of
// commandGroups for spbridge's own.
func (f *flagSet) writeCommands(b *strings.Builder, width int) {
	col := 0
	for _, c := range f.commands {
		col = max(col, len(c.name)+4)
	}
	list := func(title string, cmds []command) {
		if len(cmds) == 0 {
			return
		}
		fmt.Fprintf(b, "\n%s:\n", title)
		for _, c := range cmds {
			twoColumns(b, "  "+c.name, c.summary, col, width)
		}
	}
	if f.cmd != "" {
		list("Commands", f.commands)
		return
	}
	listed := map[string]bool{}
	for i, g := range commandGroups {
		var cmds []command
		for _, name := range g.names {
			if c, ok := findCommand(f.commands, name); ok {
				cmds = append(cmds, c)
				listed[name] = true
			}
		}
		if i == len(commandGroups)-1 {
			for _, c := range f.commands {
				if !listed[c.name] {
					cmds = append(cmds, c)
				}
			}
		}
		list(g.title, cmds)
	}
}

// synopsis is what follows the command's name on its usage line: the
// arguments as the command states them, and every flag they do not
// mention, after the last flag they do (before the trailing operands).
func (f *flagSet) synopsis() string {
	var missing []string
	f.VisitAll(func(fl *pflag.Flag) {
		if fl.Hidden || fl.Name == "help" || mentionsFlag(f.args, fl.Name) {
			return
		}
		missing = append(missing, flagSynopsis(fl))
	})
	tokens := splitSynopsis(f.args)
	if len(missing) == 0 {
		return strings.Join(tokens, " ")
	}
	// After the last flag the arguments name (and its value), else at the
	// end.
	at := len(tokens)
	for i, t := range tokens {
		if !isFlagToken(t) {
			continue
		}
		at = i + 1
		if strings.HasPrefix(t, "-") && !strings.Contains(t, "=") && i+1 < len(tokens) && isValueName(tokens[i+1]) {
			at = i + 2
		}
	}
	if !anyFlagToken(tokens) {
		at = len(tokens)
	}
	out := append(append(append([]string{}, tokens[:at]...), missing...), tokens[at:]...)
	return strings.Join(out, " ")
}

// isFlagToken reports whether a usage token is a flag: --json, [--json],
// [--kind KIND].
func isFlagToken(t string) bool {
	return strings.HasPrefix(strings.TrimLeft(t, "["), "-") && t != "-" && t != "[-]"
}

// isValueName reports whether a usage token names a flag's value: ID,
// FILE, claude|codex.
func isValueName(t string) bool {
	return t != "" && !strings.ContainsAny(t, "[]") && t != "|" && !isFlagToken(t)
}

func anyFlagToken(tokens []string) bool {
	for _, t := range tokens {
		if isFlagToken(t) {
			return true
		}
	}
	return false
}

// mentionsFlag reports whether the usage arguments args name --name.
func mentionsFlag(args, name string) bool {
	return regexp.MustCompile(`--` + regexp.QuoteMeta(name) + `($|[^A-Za-z0-9-])`).MatchString(args)
}

// splitSynopsis splits usage arguments at spaces outside brackets.
func splitSynopsis(s string) []string {
	var out []string
	depth, start := 0, -1
	for i, r := range s {
		switch {
		case r == '[':
			depth++
		case r == ']':
			depth--
		case r == ' ' && depth <= 0:
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		out = append(out, s[start:])
	}
	return out
}

// flagSynopsis is a flag as the usage line shows it: [--json],
// [--keep-conversation=false], [--kind KIND], [--image FILE]...
func flagSynopsis(fl *pflag.Flag) string {
	if fl.Value.Type() == "bool" {
		if fl.DefValue == "true" {
			return "[--" + fl.Name + "=false]"
		}
		return "[--" + fl.Name + "]"
	}
	s := "[--" + fl.Name + " " + valueName(fl) + "]"
	if repeatable(fl) {
		s += "..."
	}
	return s
}

// valueName names a flag's value: the `NAME` its usage quotes, its
// choices, else its type in capitals.
func valueName(fl *pflag.Flag) string {
	name, _ := pflag.UnquoteUsage(fl)
	if strings.Contains(fl.Usage, "`") {
		return name
	}
	if c := flagChoices(fl.Name); c != nil {
		return strings.Join(c, "|")
	}
	switch fl.Value.Type() {
	case "stringArray", "stringSlice":
		return "VALUE"
	}
	return strings.ToUpper(name)
}

func repeatable(fl *pflag.Flag) bool {
	t := fl.Value.Type()
	return strings.HasSuffix(t, "Array") || strings.HasSuffix(t, "Slice")
}

// flagUsages lists the flags, one a line (wrapped to width): the flag and
// its value's name in a column, then what it does and its default. A
// boolean shows as --json alone.
func flagUsages(fs *pflag.FlagSet, width int) string {
	type line struct{ left, text string }
	var lines []line
	col := 0
	const maxCol = 30 // wider flags put their text on the next line
	fs.VisitAll(func(fl *pflag.Flag) {
		if fl.Hidden {
			return
		}
		left := "      --" + fl.Name
		if fl.Shorthand != "" {
			left = "  -" + fl.Shorthand + ", --" + fl.Name
		}
		if fl.Value.Type() != "bool" {
			left += " " + valueName(fl)
		}
		_, text := pflag.UnquoteUsage(fl)
		if d := defaultText(fl); d != "" {
			text += " (default " + d + ")"
		}
		lines = append(lines, line{left, text})
		if n := utf8.RuneCountInString(left); n <= maxCol {
			col = max(col, n)
		}
	})
	var b strings.Builder
	for _, l := range lines {
		twoColumns(&b, l.left, l.text, col+3, width)
	}
	return b.String()
}

// twoColumns writes a line of left and text, text starting at column col
// and wrapped to width. A left too wide for col puts text on the next
// line; a col too wide for width puts every text under its left,
// indented by 8.
func twoColumns(b *strings.Builder, left, text string, col, width int) {
	if width-col < 24 {
		col = min(col, 8)
	}
	b.WriteString(left)
	pad := col - utf8.RuneCountInString(left)
	if pad < 2 {
		b.WriteString("\n")
		pad = col
	}
	b.WriteString(strings.Repeat(" ", pad))
	b.WriteString(wrapText(text, col, width))
	b.WriteString("\n")
}

// defaultText is a flag's default as help shows it, "" for none.
func defaultText(fl *pflag.Flag) string {
	switch fl.DefValue {
	case "", "false", "0", "0s", "[]":
		return ""
	}
	if fl.Value.Type() == "string" {
		return strconv.Quote(fl.DefValue)
	}
	return fl.DefValue
}

// fitText is text as written when its lines fit in width, else each of
// its paragraphs (separated by a blank line) wrapped to width.
func fitText(text string, width int) string {
	fits := true
	for line := range strings.SplitSeq(text, "\n") {
		fits = fits && utf8.RuneCountInString(line) <= width
	}
	if fits {
		return text
	}
	paras := strings.Split(text, "\n\n")
	for i, p := range paras {
		paras[i] = wrapText(strings.ReplaceAll(p, "\n", " "), 0, width)
	}
	return strings.Join(paras, "\n\n")
}

// wrapText wraps text to width, every line but the first indented by
// indent (the first is where the caller left it, at column indent). Its
// own line breaks are kept.
func wrapText(text string, indent, width int) string {
	avail := max(width-indent, 10)
	pad := strings.Repeat(" ", indent)
	var out []string
	for para := range strings.SplitSeq(text, "\n") {
		line := ""
		for _, word := range strings.Fields(para) {
			switch {
			case line == "":
				line = word
			case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) <= avail:
				line += " " + word
			default:
				out = append(out, line)
				line = word
			}
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n"+pad)
}

// wrapWords writes head and then the words of rest (split as a usage
// line is, brackets kept whole) wrapped to width, lines after the first
// indented under rest's start, or by 4 when that leaves too little room.
func wrapWords(head, rest string, width int) string {
	indent := utf8.RuneCountInString(head) + 1
	if width-indent < 30 {
		indent = 4
	}
	pad := strings.Repeat(" ", indent)
	var b strings.Builder
	b.WriteString(head)
	n := utf8.RuneCountInString(head)
	for _, w := range splitSynopsis(rest) {
		wl := utf8.RuneCountInString(w)
		if n+1+wl > width && n > indent {
			b.WriteString("\n" + pad)
			n = indent
		} else {
			b.WriteString(" ")
			n++
		}
		b.WriteString(w)
		n += wl
	}
	b.WriteString("\n")
	return b.String()
}
