package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/pflag"

	"spbridge/docs"
)

// walkCommands calls fn with every command's name after "spbridge" and
// its flag set, spbridge itself ("") first, each group before its
// subcommands.
func walkCommands(t *testing.T, fn func(path string, f *flagSet)) {
	t.Helper()
	var walk func(path string, run func(context.Context, stdio, []string) error)
	walk = func(path string, run func(context.Context, stdio, []string) error) {
		f, err := flagsOf(run)
		if err != nil || f == nil {
			t.Fatalf("%q --help: flag set %v, error %v", path, f, err)
		}
		if f.cmd != path {
			t.Errorf("the command at %q names itself %q", path, f.cmd)
		}
		fn(path, f)
		for _, c := range f.commands {
			walk(strings.TrimSpace(path+" "+c.name), c.run)
		}
	}
	walk("", runTop)
}

// helpOf is the help of the command at path, printed with $COLUMNS at
// columns.
func helpOf(t *testing.T, path string, columns string) string {
	t.Helper()
	t.Setenv("COLUMNS", columns)
	var out, errOut bytes.Buffer
	args := append(strings.Fields(path), "--help")
	if code := run(context.Background(), args, strings.NewReader(""), &out, &errOut); code != exitOK {
		t.Fatalf("%q: exit %d, %s", args, code, errOut.String())
	}
	return out.String()
}

// TestHelpEveryCommand checks every command's help: a summary, a usage
// line that names every flag, no flag shown as --x[=true|false], lines
// within the width (but for the examples and a word longer than a line),
// and an Examples section.
func TestHelpEveryCommand(t *testing.T) {
	n := 0
	walkCommands(t, func(path string, f *flagSet) {
		n++
		for _, width := range []int{80, 40} {
			help := helpOf(t, path, strconv.Itoa(width))
			if path != "" && summaryOf(path) == "" {
				t.Errorf("%q has no summary", path)
			}
			usage := regexp.MustCompile(`(?s)Usage: (.*?)\n\n`).FindStringSubmatch(help)
			if usage == nil {
				t.Fatalf("%q: no usage line in\n%s", path, help)
			}
			f.VisitAll(func(fl *pflag.Flag) {
				if fl.Name != "help" && !mentionsFlag(usage[1], fl.Name) {
					t.Errorf("%q at %d columns: the usage does not name --%s:\n%s", path, width, fl.Name, usage[1])
				}
			})
			if strings.Contains(help, "[=true|false]") {
				t.Errorf("%q: a boolean flag shown with [=true|false]:\n%s", path, help)
			}
			before, ex, found := strings.Cut(help, "\nExamples:\n")
			if !found || !strings.Contains(ex, "$ spbridge ") && !strings.Contains(ex, "PS> spbridge ") {
				t.Errorf("%q: no Examples section:\n%s", path, help)
			}
			for line := range strings.SplitSeq(before, "\n") {
				if utf8.RuneCountInString(line) > width && strings.Contains(strings.TrimSpace(line), " ") {
					t.Errorf("%q at %d columns: line longer than the width: %q", path, width, line)
				}
			}
			for line := range strings.SplitSeq(ex, "\n") {
				if utf8.RuneCountInString(line) > 80 {
					t.Errorf("%q: example line longer than 80 columns: %q", path, line)
				}
			}
		}
	})
	if n < 20 {
		t.Errorf("walked %d commands, want every one (at least 20)", n)
	}
}

// TestHelpExamples runs the spbridge command line of every example
// through the flags of the command it names: each must parse, and a
// command's own examples must run that command.
func TestHelpExamples(t *testing.T) {
	seen := map[string]bool{}
	walkCommands(t, func(path string, _ *flagSet) {
		seen[path] = true
		for line := range strings.SplitSeq(strings.TrimSpace(examples[path]), "\n") {
			if strings.HasPrefix(line, "#") || line == "" {
				continue
			}
			if !strings.HasPrefix(line, "$ ") && !strings.HasPrefix(line, "PS> ") {
				t.Errorf("%q: example line %q is neither a comment nor a command", path, line)
				continue
			}
			i := strings.Index(line, "spbridge ")
			if i < 0 {
				t.Errorf("%q: example %q does not run spbridge", path, line)
				continue
			}
			words := shellWords(line[i:])
			f, err := flagsOf(runTop, words[1:]...)
			if err != nil || f == nil {
				t.Errorf("%q: example %q does not parse: %v", path, line, err)
				continue
			}
			if f.commands == nil && path != "" && f.cmd != path && !(strings.HasPrefix(f.cmd, path+" ") && f.cmd != "help") {
				t.Errorf("%q: example %q runs %q", path, line, f.cmd)
			}
		}
	})
	for path := range examples {
		if !seen[path] {
			t.Errorf("examples of %q, which is no command", path)
		}
	}
}

// shellWords splits an example's command line as a shell would, as far
// as the examples need: quotes, and an end at a pipe, a redirection or a
// closing parenthesis.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	in, quote := false, rune(0)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, in = r, true
		case r == ' ':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		case r == '|' || r == '>' || r == ')':
			if in {
				words = append(words, cur.String())
			}
			return words
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

// TestCommandGroups checks that spbridge's help lists every command once,
// under a heading.
func TestCommandGroups(t *testing.T) {
	var grouped []string
	for _, g := range commandGroups {
		grouped = append(grouped, g.names...)
	}
	for _, c := range topCommands() {
		if n := strings.Count(" "+strings.Join(grouped, " ")+" ", " "+c.name+" "); n != 1 {
			t.Errorf("command %q is in %d groups, want 1", c.name, n)
		}
	}
	for _, name := range grouped {
		if _, ok := findCommand(topCommands(), name); !ok {
			t.Errorf("group lists %q, which is no command", name)
		}
	}
	help := helpOf(t, "", "80")
	for _, g := range commandGroups {
		if !strings.Contains(help, "\n"+g.title+":\n") {
			t.Errorf("help has no heading %q", g.title)
		}
	}
}

func TestSuggestCommands(t *testing.T) {
	tests := []struct {
		typed string
		want  []string
	}{
		{"conversaton", []string{"conversation"}},
		{"conv", []string{"conversation"}},
		{"serv", []string{"serve"}},
		{"sevre", []string{"serve"}},
		{"trasncript", []string{"transcript"}},
		{"VERSION", []string{"version"}},
		{"au", []string{"auth", "audit"}},
		{"frobnicate", nil},
		{"x", nil},
		{"", nil},
	}
	for _, tt := range tests {
		if got := suggestCommands(tt.typed, topCommands()); !slices.Equal(got, tt.want) {
			t.Errorf("suggestCommands(%q) = %q, want %q", tt.typed, got, tt.want)
		}
	}
}

func TestSuggestFlags(t *testing.T) {
	f, err := flagsOf(runConversationShow)
	if err != nil {
		t.Fatal(err)
	}
	for typed, want := range map[string][]string{
		"jsn":  {"--json"},
		"lst":  {"--last"},
		"kin":  {"--kind"},
		"he":   {"--help"},
		"colr": nil,
	} {
		if got := suggestFlags(typed, f); !slices.Equal(got, want) {
			t.Errorf("suggestFlags(%q) = %q, want %q", typed, got, want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"abc", "", 3},
		{"kitten", "sitting", 3},
		{"audit", "audti", 1},
		{"show", "shwo", 1},
		{"save", "serve", 2},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := editDistance(tt.b, tt.a); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.b, tt.a, got, tt.want)
		}
	}
}

func TestComplete(t *testing.T) {
	var top []string
	for _, c := range topCommands() {
		top = append(top, c.name)
	}
	var topics []string
	for _, topic := range docs.Topics() {
		if _, isCommand := findCommand(topCommands(), topic); isCommand {
			topic += ".md"
		}
		topics = append(topics, topic)
	}
	tests := []struct {
		words     []string
		wantKind  string
		wantWords []string
	}{
		{[]string{""}, completeWords, top},
		{[]string{"co"}, completeWords, []string{"conversation", "completion"}},
		{[]string{"--"}, completeWords, []string{"--help", "--version"}},
		{[]string{"conversation", ""}, completeWords, []string{"show", "list", "search", "new", "recover"}},
		{[]string{"conversation", "show", ""}, completeDirs, nil},
		{[]string{"conversation", "show", "--"}, completeWords, []string{"--help", "--json", "--last", "--kind"}},
		{[]string{"conversation", "show", "--kind", ""}, completeWords, []string{"document", "template", "designSystem"}},
		{[]string{"conversation", "show", "--kind=template", "P", ""}, completeWords, nil},
		{[]string{"conversation", "list", ""}, completeDirs, nil},
		{[]string{"run", "--backend", "co"}, completeWords, []string{"codex"}},
		{[]string{"run", "--image", ""}, completeFiles, nil},
		{[]string{"run", "--cwd", ""}, completeDirs, nil},
		{[]string{"run", "--json", ""}, completeDirs, nil},
		{[]string{"run", "Poster", ""}, completeWords, nil},
		{[]string{"run", "Poster", "--", "-"}, completeWords, nil},
		{[]string{"replay", "--backend", "claude", ""}, completeFiles, nil},
		{[]string{"audit", "verify", "--heads", ""}, completeFiles, nil},
		{[]string{"audit", "verify", "--id", ""}, completeWords, nil},
		{[]string{"help", ""}, completeWords, append(slices.Clone(top), topics...)},
		{[]string{"help", "ed"}, completeWords, []string{"editors"}},
		{[]string{"help", "st"}, completeWords, []string{"state", "state.md"}},
		{[]string{"help", "auth", ""}, completeWords, []string{"status", "logout"}},
		{[]string{"completion", "f"}, completeWords, []string{"fish"}},
		{[]string{"nope", ""}, completeWords, nil},
	}
	for _, tt := range tests {
		kind, cands := complete(tt.words[:len(tt.words)-1], tt.words[len(tt.words)-1])
		var got []string
		for _, c := range cands {
			word, _, _ := strings.Cut(c, "\t")
			got = append(got, word)
		}
		if kind != tt.wantKind || !slices.Equal(got, tt.wantWords) {
			t.Errorf("complete(%q) = %s %q, want %s %q", tt.words, kind, got, tt.wantKind, tt.wantWords)
		}
	}
}

// TestFlagUsagesWrap checks the flag list at several widths: every line
// within the width but for a word longer than the room, and the text of
// each flag whole once the lines are joined.
func TestFlagUsagesWrap(t *testing.T) {
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	fs.BoolP("help", "h", false, "show this help")
	fs.Bool("json", false, "print one JSON line per item change, and a turnEnd line after each turn")
	fs.String("codex-transport", "app-server", "how codex is driven: app-server or exec")
	fs.Bool("keep", true, "keep it")
	fs.StringArray("image", nil, "attach an image `FILE`; repeatable")
	for _, width := range []int{120, 80, 60, 40, 20} {
		out := flagUsages(fs, width)
		for line := range strings.SplitSeq(strings.TrimSuffix(out, "\n"), "\n") {
			if utf8.RuneCountInString(line) > width && strings.Contains(strings.TrimSpace(line), " ") && !strings.HasPrefix(line, "      --") {
				t.Errorf("width %d: line %q is longer", width, line)
			}
		}
		joined := strings.Join(strings.Fields(out), " ")
		for _, want := range []string{
			"-h, --help show this help",
			"--json print one JSON line per item change, and a turnEnd line after each turn",
			`--codex-transport app-server|exec how codex is driven: app-server or exec (default "app-server")`,
			"--keep keep it (default true)",
			"--image FILE attach an image FILE; repeatable",
		} {
			if !strings.Contains(joined, want) {
				t.Errorf("width %d: no %q in\n%s", width, want, out)
			}
		}
		if strings.Contains(out, "[=") || strings.Contains(out, "stringArray") {
			t.Errorf("width %d: pflag's notation in\n%s", width, out)
		}
	}
}

// TestHelpTopic: spbridge help TOPIC prints the manual's page as docs/
// holds it (by its name, or its file's name when a command has that name:
// help state is the command's help); the serve hint and spbridge's own help
// name a topic it prints.
func TestHelpTopic(t *testing.T) {
	helpRun := func(args ...string) (string, int) {
		var out, errOut bytes.Buffer
		code := run(context.Background(), append([]string{"help"}, args...), strings.NewReader(""), &out, &errOut)
		return out.String() + errOut.String(), code
	}
	editors, err := os.ReadFile(filepath.Join("..", "..", "docs", "editors.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"editors", "editors.md"} {
		if got, code := helpRun(topic); code != exitOK || got != string(editors) {
			t.Errorf("spbridge help %s: exit %d, %d bytes; want docs/editors.md's %d", topic, code, len(got), len(editors))
		}
	}
	state, err := os.ReadFile(filepath.Join("..", "..", "docs", "state.md"))
	if err != nil {
		t.Fatal(err)
	}
	if got, code := helpRun("state.md"); code != exitOK || got != string(state) {
		t.Errorf("spbridge help state.md: exit %d, %d bytes; want docs/state.md's", code, len(got))
	}
	if got, code := helpRun("state"); code != exitOK || got != helpOf(t, "state", "80") {
		t.Errorf("spbridge help state: exit %d, not the state command's help:\n%s", code, got)
	}
	if _, code := helpRun("nosuchtopic"); code != exitUsage {
		t.Errorf("spbridge help nosuchtopic: exit %d, want %d", code, exitUsage)
	}
	for _, text := range []string{serveTerminalNote, helpOf(t, "", "200"), helpOf(t, "help", "200")} {
		m := regexp.MustCompile("spbridge help ([a-z.]+)").FindAllStringSubmatch(text, -1)
		if len(m) == 0 {
			t.Errorf("names no help topic:\n%s", text)
		}
		for _, topic := range m {
			if _, isCommand := findCommand(topCommands(), topic[1]); isCommand {
				continue
			}
			if _, ok := docs.Page(topic[1]); !ok {
				t.Errorf("names spbridge help %s, which is no page:\n%s", topic[1], text)
			}
		}
	}
}
