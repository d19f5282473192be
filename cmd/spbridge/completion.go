package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"spbridge/docs"
)

// completeCommand is the hidden command the completion scripts run: given
// the words after "spbridge" up to the cursor, the last being the one
// completed, it prints what can go there (see runComplete).
const completeCommand = "__complete"

// completionShells are the shells completion writes a script for.
var completionShells = []string{"bash", "zsh", "fish", "powershell"}

func runCompletion(_ context.Context, st stdio, args []string) error {
	f := newFlagSet("completion", "bash|zsh|fish|powershell",
		"Print the script that completes spbridge's commands, flags, their values\n"+
			"and package folders in the shell named. The script asks spbridge itself\n"+
			"what fits (spbridge "+completeCommand+"), so it stays right when spbridge is\n"+
			"updated; only spbridge must be on PATH.")
	if done, err := f.parse(args, st.out); done || err != nil {
		return err
	}
	if f.NArg() != 1 {
		return usagef(f.cmd, "completion needs one shell: %s", strings.Join(completionShells, ", "))
	}
	script, ok := completionScripts[f.Arg(0)]
	if !ok {
		return usagef(f.cmd, "unknown shell %q (want %s)", f.Arg(0), strings.Join(completionShells, ", "))
	}
	_, err := io.WriteString(st.out, script)
	return err
}

// What runComplete prints first, for the shell to do:
const (
	completeWords = "words" // offer the lines that follow, "WORD\tDESCRIPTION"
	completeFiles = "files" // complete a file name
	completeDirs  = "dirs"  // complete a folder name
)

// runComplete prints the completions of the last of words (the words
// after "spbridge", "" when the cursor starts a new one; a first word
// "--new-word" stands for that empty last word, which some shells cannot
// pass): a line saying what to complete, then for words one a line.
func runComplete(st stdio, words []string) error {
	if len(words) > 0 && words[0] == "--new-word" {
		words = append(words[1:], "")
	}
	if len(words) == 0 {
		words = []string{""}
	}
	kind, cands := complete(words[:len(words)-1], words[len(words)-1])
	var b strings.Builder
	b.WriteString(kind + "\n")
	for _, c := range cands {
		b.WriteString(c + "\n")
	}
	_, err := io.WriteString(st.out, b.String())
	return err
}

// complete returns what can go in place of cur after the words done: a
// kind and, for completeWords, the candidates starting with cur.
func complete(done []string, cur string) (kind string, cands []string) {
	node, err := flagsOf(runTop)
	if err != nil || node == nil {
		return completeWords, nil
	}
	var operands []string   // the current command's operands so far
	var pending *pflag.Flag // a flag whose value is next
	onlyOperands := false   // after --
	for _, w := range done {
		switch {
		case pending != nil:
			pending = nil
		case !onlyOperands && w == "--":
			onlyOperands = true
		case !onlyOperands && len(w) > 1 && w[0] == '-':
			if fl := lookupFlag(node.FlagSet, w); fl != nil && fl.NoOptDefVal == "" && !strings.Contains(w, "=") {
				pending = fl
			}
		case len(node.commands) > 0 && len(operands) == 0:
			c, ok := findCommand(node.commands, w)
			if !ok {
				return completeWords, nil // an unknown command: nothing fits
			}
			sub, err := flagsOf(c.run)
			if err != nil || sub == nil {
				return completeWords, nil
			}
			node, onlyOperands = sub, false
		default:
			operands = append(operands, w)
		}
	}
	if pending != nil {
		return completeValue(pending, cur)
	}
	if !onlyOperands && strings.HasPrefix(cur, "-") {
		node.VisitAll(func(fl *pflag.Flag) {
			if !fl.Hidden {
				_, usage := pflag.UnquoteUsage(fl)
				cands = append(cands, candidate("--"+fl.Name, usage, cur)...)
			}
		})
		return completeWords, cands
	}
	switch {
	case len(node.commands) > 0 && len(operands) == 0:
		return completeWords, commandCandidates(node.commands, cur)
	case node.cmd == "completion" && len(operands) == 0:
		for _, sh := range completionShells {
			cands = append(cands, candidate(sh, "", cur)...)
		}
		return completeWords, cands
	case node.cmd == "help":
		// help COMMAND [SUBCOMMAND]: the commands at that depth.
		cmds := topCommands()
		for _, w := range operands {
			c, ok := findCommand(cmds, w)
			if !ok {
				return completeWords, nil
			}
			f, err := flagsOf(c.run)
			if err != nil || f == nil {
				return completeWords, nil
			}
			cmds = f.commands
		}
		cands = commandCandidates(cmds, cur)
		if len(operands) == 0 {
			// Or a page of the manual.
			for _, topic := range docs.Topics() {
				if _, isCommand := findCommand(cmds, topic); isCommand {
					topic += ".md"
				}
				cands = append(cands, candidate(topic, "", cur)...)
			}
		}
		return completeWords, cands
	}
	return completeOperand(node, len(operands))
}

// lookupFlag finds the flag a word names: --name, --name=value, -h.
func lookupFlag(fs *pflag.FlagSet, w string) *pflag.Flag {
	if name, ok := strings.CutPrefix(w, "--"); ok {
		name, _, _ = strings.Cut(name, "=")
		return fs.Lookup(name)
	}
	if len(w) == 2 {
		return fs.ShorthandLookup(w[1:])
	}
	return nil
}

// completeValue completes the value of flag fl: its choices, or a file or
// a folder when its value's name says so.
func completeValue(fl *pflag.Flag, cur string) (string, []string) {
	var cands []string
	for _, c := range flagChoices(fl.Name) {
		cands = append(cands, candidate(c, "", cur)...)
	}
	if cands != nil {
		return completeWords, cands
	}
	return kindOfName(valueName(fl)), nil
}

// completeOperand completes the command's operand number n (from 0), as
// its usage line names it: PKG and DIR are folders, FILE a file.
func completeOperand(f *flagSet, n int) (string, []string) {
	var ops []string
	tokens := splitSynopsis(f.args)
	for i := 0; i < len(tokens); i++ {
		t := tokens[i]
		switch {
		case isFlagToken(t):
			if strings.HasPrefix(t, "-") && !strings.Contains(t, "=") && i+1 < len(tokens) && isValueName(tokens[i+1]) {
				i++ // the flag's value
			}
		case t != "|" && !slices.Contains(ops, t):
			ops = append(ops, t)
		}
	}
	switch {
	case n < len(ops):
		return kindOfName(ops[n]), nil
	case len(ops) > 0 && strings.Contains(ops[len(ops)-1], "..."):
		return kindOfName(ops[len(ops)-1]), nil
	}
	return completeWords, nil
}

// kindOfName is what to complete for a value named name in usage.
func kindOfName(name string) string {
	switch {
	case strings.Contains(name, "PKG") || strings.Contains(name, "DIR"):
		return completeDirs
	case strings.Contains(name, "FILE"):
		return completeFiles
	}
	return completeWords
}

// commandCandidates are the commands whose names start with cur.
func commandCandidates(cmds []command, cur string) []string {
	var cands []string
	for _, c := range cmds {
		cands = append(cands, candidate(c.name, c.summary, cur)...)
	}
	return cands
}

// candidate is word with its description, when word starts with cur.
func candidate(word, desc, cur string) []string {
	if !strings.HasPrefix(word, cur) {
		return nil
	}
	desc, _, _ = strings.Cut(desc, "\n")
	return []string{fmt.Sprintf("%s\t%s", word, desc)}
}

// completionScripts are the scripts of spbridge completion, by shell.
var completionScripts = map[string]string{
	"bash": `# bash completion for spbridge.
# In this shell: source <(spbridge completion bash)
_spbridge() {
    local cur=${COMP_WORDS[COMP_CWORD]} out kind rest="" line
    out=$(spbridge __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null) || return 0
    kind=${out%%$'\n'*}
    [[ $out == *$'\n'* ]] && rest=${out#*$'\n'}
    COMPREPLY=()
    case $kind in
    dirs)
        compopt -o filenames 2>/dev/null
        while IFS= read -r line; do COMPREPLY+=("$line"); done < <(compgen -d -- "$cur")
        ;;
    files)
        compopt -o filenames 2>/dev/null
        while IFS= read -r line; do COMPREPLY+=("$line"); done < <(compgen -f -- "$cur")
        ;;
    words)
        while IFS= read -r line; do
            [[ -n $line ]] && COMPREPLY+=("${line%%$'\t'*}")
        done <<< "$rest"
        ;;
    esac
    return 0
}
complete -F _spbridge spbridge
`,
	"zsh": `#compdef spbridge
# zsh completion for spbridge.
# As a file: spbridge completion zsh > "${fpath[1]}/_spbridge"
# In this shell (after compinit): source <(spbridge completion zsh)
_spbridge() {
    local -a lines cands
    local line
    lines=("${(@f)$(spbridge __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    case ${lines[1]} in
    dirs) _files -/ ;;
    files) _files ;;
    words)
        for line in "${(@)lines[2,-1]}"; do
            [[ -n $line ]] || continue
            cands+=("${${line%%$'\t'*}//:/\\:}:${line#*$'\t'}")
        done
        (( ${#cands} )) && _describe -t values spbridge cands
        ;;
    esac
}
if [[ ${zsh_eval_context[-1]} == loadautofunc ]]; then
    _spbridge "$@"
else
    compdef _spbridge spbridge
fi
`,
	"fish": `# fish completion for spbridge.
# As a file: spbridge completion fish > ~/.config/fish/completions/spbridge.fish
function __spbridge_complete
    set -l cur (commandline -ct)
    set -l words (commandline -opc)
    set -e words[1]
    set -a words "$cur"
    set -l out (spbridge __complete $words 2>/dev/null)
    or return
    set -l kind $out[1]
    set -e out[1]
    switch "$kind"
        case dirs
            __fish_complete_directories "$cur"
        case files
            __fish_complete_path "$cur"
        case words
            test (count $out) -gt 0
            and printf '%s\n' $out
    end
end
complete -c spbridge -f -a '(__spbridge_complete)'
`,
	"powershell": `# PowerShell completion for spbridge.
# In $PROFILE: spbridge completion powershell | Out-String | Invoke-Expression
Register-ArgumentCompleter -Native -CommandName 'spbridge', 'spbridge.exe' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)
    $request = @('__complete')
    if ($wordToComplete -eq '') { $request += '--new-word' }
    foreach ($element in @($commandAst.CommandElements | Select-Object -Skip 1)) {
        if ($element.Extent.StartOffset -ge $cursorPosition) { break }
        $request += $element.Extent.Text
    }
    $out = @(& spbridge @request 2>$null)
    if ($out.Count -eq 0 -or $out[0] -ne 'words') {
        return # files and folders: PowerShell's own completion
    }
    $out | Select-Object -Skip 1 | Where-Object { $_ -ne '' } | ForEach-Object {
        $name, $description = $_ -split "` + "`" + `t", 2
        if (-not $description) { $description = $name }
        [System.Management.Automation.CompletionResult]::new($name, $name, 'ParameterValue', $description)
    }
}
`,
}
