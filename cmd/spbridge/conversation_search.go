package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"spbridge/internal/canonjson"
	"spbridge/internal/catalog"
	"spbridge/internal/clis"
	"spbridge/internal/history"
	"spbridge/internal/search"
	"spbridge/internal/sessionindex"
	"spbridge/internal/statedir"
)

// searchShown is how many conversations a search prints.
const searchShown = 20

// errNoMatch is a search that found nothing (exit 1, as grep's).
var errNoMatch = errors.New("no conversation matches")

func runConversationSearch(ctx context.Context, st stdio, args []string) error {
	f := newFlagSet("conversation search", "QUERY [--cwd DIR] [--cli] [--json] [--rebuild]",
		"Search the conversations of the packages opened through spbridge serve (the\n"+
			"sessions index in the state folder), or with --cli the sessions Claude Code\n"+
			"and Codex keep themselves, for every word of QUERY (case and accents do not\n"+
			"count; \"a phrase\" in quotes; word* for the words it begins). Prints the best\n"+
			"20, best first: the package's path or the CLI session's id (claude:ID, as an\n"+
			"editor opens it), when it last changed and its title, up to three matching\n"+
			"lines with the words marked »so«, and the command that opens it. --cwd DIR\n"+
			"searches only the conversations of that folder. With --json, one JSON object\n"+
			"a line. The index (search-1.db in the state folder) is brought up to date\n"+
			"first, reading only the conversations that changed; --rebuild makes it anew.\n"+
			"Exits 1 when nothing matches.")
	cwd := f.String("cwd", "", "only the conversations of this `DIR`")
	cli := f.Bool("cli", false, "search the sessions the CLIs keep themselves instead")
	asJSON := f.Bool("json", false, "print one JSON object a line")
	rebuild := f.Bool("rebuild", false, "make the index anew first (QUERY may then be left out)")
	if done, err := f.parse(args, st.out); done || err != nil {
		return err
	}
	text := strings.Join(f.Args(), " ")
	var q search.Query
	if text != "" || !*rebuild {
		var err error
		if q, err = search.ParseQuery(text); err != nil {
			return usagef(f.cmd, "%v", err)
		}
	}
	if *cwd != "" {
		abs, err := filepath.Abs(*cwd)
		if err != nil {
			return err
		}
		*cwd = abs
	}
	state, err := statedir.Dir()
	if err != nil {
		return err
	}
	var set search.Set
	if *cli {
		opts := history.Options{Stores: clis.Stores(), Cwd: *cwd, Cache: history.NewHeadCache(state)}
		set = search.CLIs(opts)
	} else {
		set = search.Packages(sessionindex.New(state), *cwd)
	}
	start := time.Now()
	res, err := search.Find(ctx, state, search.Request{
		Query: q, Sets: []search.Set{set}, Cwd: *cwd, Snippets: searchShown, Rebuild: *rebuild,
		Progress: func(n int) {
			if n >= 50 {
				fmt.Fprintf(st.err, "spbridge: indexing %d conversations (later searches read only what changed)…\n", n)
			}
		},
	})
	if err != nil {
		return err
	}
	if res.Rebuilt {
		fmt.Fprintln(st.err, "spbridge: the search index was damaged and was made anew")
	}
	if len(q.Terms) == 0 {
		u := res.Updates[0]
		_, err := fmt.Fprintf(st.out, "indexed %d conversations (%s read) in %s\n", u.Indexed,
			megabytes(u.Read), time.Since(start).Round(time.Millisecond))
		return err
	}
	if len(res.Hits) == 0 {
		return fmt.Errorf("%w %q", errNoMatch, text)
	}
	var b strings.Builder
	for i, h := range res.Hits[:min(searchShown, len(res.Hits))] {
		if *asJSON {
			line, err := canonjson.EncodeCompact(hitValue(h))
			if err != nil {
				return fmt.Errorf("encode a hit: %w", err)
			}
			b.Write(line)
			b.WriteByte('\n')
			continue
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		writeHit(&b, h)
	}
	if n := len(res.Hits) - searchShown; n > 0 && !*asJSON {
		fmt.Fprintf(&b, "\n… and %d more (more words narrow the search)\n", n)
	}
	_, err = fmt.Fprint(st.out, b.String())
	return err
}

// megabytes is n bytes as a person reads them.
func megabytes(n int64) string {
	return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + " MB"
}

// writeHit writes one conversation found: a line naming it, its
// snippets, and how to open it.
func writeHit(b *strings.Builder, h search.Hit) {
	b.WriteString(strings.Join([]string{h.Ref, h.Updated.UTC().Format(time.RFC3339), h.Title}, "\t"))
	b.WriteByte('\n')
	for _, s := range h.Snippets {
		b.WriteString("  " + s.Label + ": " + s.Marked("»", "«") + "\n")
	}
	b.WriteString("  " + openCommand(h) + "\n")
}

// openCommand is the command that opens what a search found: a package's
// conversation shown; a CLI session imported into a package (an editor
// opens it by its id, the hit's Ref).
func openCommand(h search.Hit) string {
	if h.Kind == search.KindCLI {
		if s := catalog.ParseSession(h.Ref); s != nil {
			return "spbridge import --backend " + s.CLI + " " + s.ID + " PKG"
		}
	}
	return "spbridge conversation show " + shellQuote(h.Ref)
}

// hitValue is a hit as a JSON object. A snippet's matches are
// [start, end) offsets in characters (code points) of its text.
func hitValue(h search.Hit) map[string]any {
	snips := []any{}
	for _, s := range h.Snippets {
		snips = append(snips, snippetValue(s))
	}
	v := map[string]any{
		"kind": h.Kind, "id": h.Ref, "cwd": h.Cwd, "title": h.Title,
		"updated":  h.Updated.UTC().Format(time.RFC3339),
		"snippets": snips, "open": openCommand(h),
		"score": json.Number(strconv.FormatFloat(-h.Score, 'g', 6, 64)),
	}
	if h.Kind == search.KindPackage {
		v["package"] = h.Ref
	}
	return v
}

// snippetValue is a snippet as JSON: where, the text, the matches in
// characters.
func snippetValue(s search.Snippet) map[string]any {
	matches := []any{}
	for _, m := range s.Matches {
		a := utf8.RuneCountInString(s.Text[:m[0]])
		matches = append(matches, []any{json.Number(strconv.Itoa(a)), json.Number(strconv.Itoa(a + utf8.RuneCountInString(s.Text[m[0]:m[1]])))})
	}
	return map[string]any{"where": s.Label, "text": s.Text, "matches": matches}
}
