package main

import (
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// suggestCommands returns the names of cmds that typed is perhaps a
// mistyping of, the nearest first: the nearest within a small edit
// distance (one edit for names of up to four letters, two for longer),
// and those typed begins (two letters or more). Case is ignored.
func suggestCommands(typed string, cmds []command) []string {
	names := make([]string, len(cmds))
	for i, c := range cmds {
		names[i] = c.name
	}
	return suggestNames(typed, names)
}

// suggestFlags returns the flags of f that --typed is perhaps a mistyping
// of, as "--name", chosen as suggestCommands chooses.
func suggestFlags(typed string, f *flagSet) []string {
	var names []string
	f.VisitAll(func(fl *pflag.Flag) {
		if !fl.Hidden {
			names = append(names, fl.Name)
		}
	})
	out := suggestNames(typed, names)
	for i, name := range out {
		out[i] = "--" + name
	}
	return out
}

// suggestNames returns the names that typed is perhaps a mistyping of.
func suggestNames(typed string, names []string) []string {
	typed = strings.ToLower(typed)
	type near struct {
		name   string
		dist   int
		prefix bool
	}
	var found []near
	best := -1 // the least distance within the limit
	for _, name := range names {
		d := editDistance(typed, name)
		limit := 1
		if len(name) > 4 {
			limit = 2
		}
		prefix := len(typed) >= 2 && strings.HasPrefix(name, typed)
		if d <= limit && (best < 0 || d < best) {
			best = d
		}
		if d <= limit || prefix {
			found = append(found, near{name, d, prefix})
		}
	}
	// The nearest only (save, not serve or state, for Save), and what
	// typed begins.
	found = slices.DeleteFunc(found, func(n near) bool { return !n.prefix && n.dist != best })
	slices.SortStableFunc(found, func(a, b near) int { return a.dist - b.dist })
	var out []string
	for _, n := range found {
		out = append(out, n.name)
	}
	return out
}

// editDistance is the Levenshtein distance between a and b, counting a
// swap of two neighbouring letters as one edit.
func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	// d[i][j] is the distance between x[:i] and y[:j].
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}

// orList quotes names and joins them: "a", "a" or "b", "a", "b" or "c".
func orList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}
