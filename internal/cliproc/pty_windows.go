package cliproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ErrNoPTY is matched by the error RunPTY returns where spbridge has no
// pseudo-terminal to give a program (Windows).
var ErrNoPTY = errors.New("no pseudo-terminal on this system")

// RunPTY does not run the program on Windows, where spbridge has no
// pseudo-terminal (ConPTY) support yet: it returns an error matching
// ErrNoPTY that names the command to run in a terminal instead.
func RunPTY(ctx context.Context, cfg PTYConfig, in io.Reader, out io.Writer) (int, error) {
	return 0, fmt.Errorf("%w: run `%s` in a terminal instead", ErrNoPTY, commandLine(cfg.Path, cfg.Args))
}

// commandLine shows path and args as one would type them, each word with
// spaces in double quotes.
func commandLine(path string, args []string) string {
	words := make([]string, 0, 1+len(args))
	for _, w := range append([]string{path}, args...) {
		if w == "" || strings.ContainsAny(w, " \t\"") {
			w = `"` + strings.ReplaceAll(w, `"`, `\"`) + `"`
		}
		words = append(words, w)
	}
	return strings.Join(words, " ")
}
