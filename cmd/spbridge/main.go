// Command spbridge bridges an editor and the coding-agent command-line
// programs, and inspects and maintains the conversations saved in document
// packages.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"spbridge/docs"
	"spbridge/internal/itemmap"
)

// Exit codes.
const (
	exitOK      = 0 // success
	exitFailure = 1 // the command failed, or found problems
	exitUsage   = 2 // the command line was wrong
)

func main() {
	ctx, stop := catchInterrupts(os.Args[1:], os.Stderr)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// stdio is where a command reads and writes.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// command is one command or subcommand.
type command struct {
	name    string // as typed after its parent, e.g. "show"
	summary string // one line for the parent's command list
	run     func(ctx context.Context, st stdio, args []string) error
}

// topCommands returns the commands of spbridge itself. (A function, since
// "help" runs them in turn.)
func topCommands() []command {
	return []command{
		{"serve", "be an Agent Client Protocol agent on standard input and output", runServe},
		{"run", "run one turn of a package's conversation from the shell", runRun},
		{"conversation", "show, list, start over or recover a package's conversation", runConversation},
		{"rewind", "rewind a conversation to before a user message, or undo that", runRewind},
		{"import", "import a Claude Code or Codex session into a package", runImport},
		{"transcript", "print a package's conversation as a plain-text transcript", runTranscript},
		{"export", "export a conversation as a self-contained HTML page or Markdown", runExport},
		{"save", "save a package's conversation in canonical format 1", runSave},
		{"fsck", "check a package's saved conversation", runFsck},
		{"replay", "map a recorded CLI event stream onto items", runReplay},
		{"audit", "verify or show a conversation's audit log", runAudit},
		{"state", "prune old audit logs and editor sessions from the state folder", runState},
		{"trust", "list, add or revoke folders whose own agent settings may act", runTrust},
		{"login", "log in to claude or codex through a pseudo-terminal", runLogin},
		{"auth", "check whether claude and codex are logged in, or log out", runAuth},
		{"version", "print the version", runVersion},
		{"help", "show the help of a command, or a page of the manual", runHelp},
		{"completion", "print a shell's completion script: bash, zsh, fish or powershell", runCompletion},
	}
}

// run runs spbridge with the command-line arguments args (without the
// program name) and returns the exit code. Errors are reported on stderr.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	err := interruptError(ctx, runTop(ctx, stdio{stdin, stdout, stderr}, args))
	if err == nil {
		return exitOK
	}
	var uerr *usageError
	var terr *turnError
	switch {
	case errors.As(err, &terr) && !errors.As(err, &uerr):
		// The turn's end line said how it ended (an interrupt once);
		// the exit code says it again.
	case !errors.As(err, &uerr):
		fmt.Fprintf(stderr, "spbridge: %v\n", err)
	case uerr.err != nil:
		fmt.Fprintf(stderr, "spbridge: %v\n", err)
		if len(uerr.suggest) > 0 {
			fmt.Fprintf(stderr, "Did you mean %s?\n", orList(uerr.suggest))
		}
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", commandPath(uerr.cmd))
	}
	return exitCode(err)
}

// exitCode maps a command's error to the process's exit code.
func exitCode(err error) int {
	var uerr *usageError
	var terr *turnError
	var serr *exitStatusError
	var sigErr *signalError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &uerr):
		return exitUsage
	case errors.As(err, &terr) && terr.status == itemmap.TurnInterrupted:
		return exitInterrupted
	case errors.As(err, &serr):
		return serr.code
	case errors.As(err, &sigErr):
		return sigErr.code()
	default:
		return exitFailure
	}
}

// usageError is a mistake in the command line: an unknown command or flag,
// a wrong number of arguments, a bad flag value.
type usageError struct {
	cmd     string   // the command whose usage applies, "" for spbridge itself
	err     error    // what is wrong; nil when the full usage was printed already
	suggest []string // what was perhaps meant: "spbridge conversation show"
}

func (e *usageError) Error() string {
	if e.err == nil {
		return "usage of " + commandPath(e.cmd)
	}
	return e.err.Error()
}

func (e *usageError) Unwrap() error { return e.err }

// usagef returns a usage error of command cmd.
func usagef(cmd, format string, args ...any) error {
	return &usageError{cmd: cmd, err: fmt.Errorf(format, args...)}
}

// commandPath is the full name of a command as typed, e.g.
// "spbridge conversation show".
func commandPath(cmd string) string {
	if cmd == "" {
		return "spbridge"
	}
	return "spbridge " + cmd
}

// flagSet is a command's flags, with a --help flag and the command's usage
// text.
type flagSet struct {
	*pflag.FlagSet
	cmd      string    // the command's name after "spbridge"
	args     string    // what follows the name in the usage line
	about    string    // what the command does, for --help
	commands []command // the subcommands of a command group
	help     bool
}

func newFlagSet(cmd, args, about string) *flagSet {
	fs := pflag.NewFlagSet(commandPath(cmd), pflag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned and reported by run
	fs.Usage = func() {}
	fs.SortFlags = false
	f := &flagSet{FlagSet: fs, cmd: cmd, args: args, about: about}
	fs.BoolVarP(&f.help, "help", "h", false, "show this help")
	return f
}

// parse parses args. It reports done when --help was given: the usage has
// then been printed to stdout and the command has nothing more to do.
// (When stdout is a *helpCapture, the flag set is kept there instead.)
func (f *flagSet) parse(args []string, stdout io.Writer) (done bool, err error) {
	if err := f.Parse(args); err != nil {
		uerr := &usageError{cmd: f.cmd, err: err}
		if name, ok := strings.CutPrefix(err.Error(), "unknown flag: --"); ok {
			uerr.suggest = suggestFlags(name, f)
		}
		return false, uerr
	}
	if f.help {
		if c, ok := stdout.(*helpCapture); ok {
			c.f = f
			return true, nil
		}
		f.printUsage(stdout)
		return true, nil
	}
	return false, nil
}

// onePackage returns the single positional argument, the package folder.
func (f *flagSet) onePackage() (string, error) {
	switch n := f.NArg(); {
	case n == 0:
		return "", usagef(f.cmd, "%s needs a package folder (PKG)", f.cmd)
	case n > 1:
		return "", usagef(f.cmd, "%s takes one package folder, got %d arguments: %s", f.cmd, n, strings.Join(f.Args(), " "))
	}
	return f.Arg(0), nil
}

// errNoConversation says that a package holds no saved conversation.
var errNoConversation = errors.New("holds no conversation")

// checkPackage says "no such package: PATH" when nothing is at pkg (a
// dangling link included), so that every command taking a package answers
// a mistyped path the same way. What else is wrong with the path (not a
// folder, not readable) is said by whatever opens it.
func checkPackage(pkg string) error {
	if _, err := os.Stat(pkg); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no such package: %s", pkg)
	}
	return nil
}

// noArgs reports a usage error when positional arguments were given.
func (f *flagSet) noArgs() error {
	if f.NArg() > 0 {
		return usagef(f.cmd, "%s takes no arguments, got %q", f.cmd, strings.Join(f.Args(), " "))
	}
	return nil
}

// dispatch runs the subcommand named by the first argument left after the
// group's own flags; the caller has checked there is one.
func dispatch(ctx context.Context, st stdio, f *flagSet) error {
	rest := f.Args()
	if c, ok := findCommand(f.commands, rest[0]); ok {
		return c.run(ctx, st, rest[1:])
	}
	err := usagef(f.cmd, "unknown command %q for %s", rest[0], commandPath(f.cmd)).(*usageError)
	for _, name := range suggestCommands(rest[0], f.commands) {
		err.suggest = append(err.suggest, commandPath(strings.TrimSpace(f.cmd+" "+name)))
	}
	return err
}

// runTop runs spbridge's own flags and dispatches to a command.
func runTop(ctx context.Context, st stdio, args []string) error {
	f := newFlagSet("", "--version | COMMAND [ARGS] [FLAGS]",
		"spbridge bridges an editor and the coding-agent programs (claude, codex)\n"+
			"and keeps the agent conversation inside the document package. A package\n"+
			"is a document's folder (e.g. Poster.silverpoint) that holds the document\n"+
			"and its agent/ conversation. In a repository or any other folder, the\n"+
			"conversation is kept in spbridge's state folder, and nothing is written\n"+
			"into the folder.")
	f.commands = topCommands()
	showVersion := f.Bool("version", false, "print the version and exit")
	f.SetInterspersed(false)
	if done, err := f.parse(args, st.out); done || err != nil {
		return err
	}
	if *showVersion {
		if err := f.noArgs(); err != nil {
			return err
		}
		return printVersion(st.out)
	}
	if f.NArg() == 0 {
		f.printUsage(st.out)
		return nil
	}
	if f.Arg(0) == completeCommand {
		return runComplete(st, f.Args()[1:])
	}
	return dispatch(ctx, st, f)
}

// runHelp prints the help of the command named by its arguments, or of
// spbridge itself, or a page of the manual (docs/).
func runHelp(ctx context.Context, st stdio, args []string) error {
	f := newFlagSet("help", "[COMMAND [SUBCOMMAND] | TOPIC]",
		"Show the help of a command, the list of commands, or a page of spbridge's manual "+
			"(Markdown, as the docs/ folder of its source holds it). TOPIC is one of "+
			strings.Join(docs.Topics(), ", ")+"; a page named like a command is TOPIC.md "+
			"(spbridge help state.md).")
	if done, err := f.parse(args, st.out); done || err != nil {
		return err
	}
	if f.NArg() == 1 {
		_, isCommand := findCommand(topCommands(), f.Arg(0))
		if page, ok := docs.Page(f.Arg(0)); ok && (!isCommand || strings.HasSuffix(f.Arg(0), ".md")) {
			_, err := st.out.Write(page)
			return err
		}
		if !isCommand {
			err := usagef("help", "no command or page of the manual named %q (the pages: %s)", f.Arg(0), strings.Join(docs.Topics(), ", ")).(*usageError)
			for _, name := range suggestCommands(f.Arg(0), topCommands()) {
				err.suggest = append(err.suggest, commandPath(name))
			}
			for _, name := range suggestNames(f.Arg(0), docs.Topics()) {
				err.suggest = append(err.suggest, commandPath("help "+name))
			}
			return err
		}
	}
	return runTop(ctx, st, append(f.Args(), "--help"))
}

// runGroup runs a command that only holds subcommands (audit, auth,
// conversation, state): it parses the group's own flags and hands the rest
// to the subcommand named first. Alone, it prints its help as spbridge
// alone does.
func runGroup(ctx context.Context, st stdio, args []string, name, about string, cmds []command) error {
	f := newFlagSet(name, "COMMAND [ARGS] [FLAGS]", about)
	f.commands = cmds
	f.SetInterspersed(false)
	if done, err := f.parse(args, st.out); done || err != nil {
		return err
	}
	if f.NArg() == 0 {
		f.printUsage(st.out)
		return nil
	}
	return dispatch(ctx, st, f)
}

// stateDirHelp says where the state folder is, for help texts.
const stateDirHelp = "The state folder is $SPBRIDGE_STATE_DIR when set, else\n" +
	"$XDG_STATE_HOME/spbridge or ~/.local/state/spbridge (Linux and other Unix),\n" +
	"~/Library/Application Support/spbridge (macOS), %LocalAppData%\\spbridge (Windows)."
