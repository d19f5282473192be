package search

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// Snippet is a line of a conversation that matched, in context: where it
// is (Label, as Segment's), the line (cut around its first match, with
// "…" where it was cut) and the matches in it.
type Snippet struct {
	Label string
	Text  string
	// Matches are the byte ranges [start, end) of the words matched in
	// Text, in order.
	Matches [][2]int
}

// Marked is the snippet's text with each match between open and close.
func (s Snippet) Marked(open, close string) string {
	var b strings.Builder
	last := 0
	for _, m := range s.Matches {
		b.WriteString(s.Text[last:m[0]])
		b.WriteString(open)
		b.WriteString(s.Text[m[0]:m[1]])
		b.WriteString(close)
		last = m[1]
	}
	b.WriteString(s.Text[last:])
	return b.String()
}

// Snippet bounds: how many a conversation shows, and how much of a line
// each (before its first match, and in all).
const (
	MaxSnippets   = 3
	snippetBefore = 60
	snippetLen    = 200
)

// matchLine is a line of a segment with the query's matches in it.
type matchLine struct {
	seg, start, end int      // the segment, and the line's bytes in its text
	matches         [][2]int // in the segment's text
	terms           int      // how many of the query's terms it matches
}

// snippets are the lines of segs that match q best (the most terms, then
// the earliest), at most n, in the conversation's order.
func snippets(q Query, segs []Segment, n int) []Snippet {
	sn := snipper{q: q, n: n}
	for _, s := range segs {
		if !sn.add(s) {
			break
		}
	}
	return sn.result()
}

// snipper collects the lines that match a query, segment by segment.
type snipper struct {
	q     Query
	n     int
	lines []matchLine
	segs  []Segment // those with a matched line, by matchLine.seg
	whole int       // lines that match every term
}

// add looks in the next segment; it returns false once n lines match
// every term (no later line can be better: reading may stop).
func (sn *snipper) add(s Segment) bool {
	found := matchSegment(sn.q, len(sn.segs), s.Text)
	if len(found) == 0 {
		return true
	}
	sn.segs = append(sn.segs, s)
	sn.lines = append(sn.lines, found...)
	for _, l := range found {
		if l.terms == len(sn.q.Terms) {
			sn.whole++
		}
	}
	return sn.whole < sn.n
}

// result is the best lines as snippets.
func (sn *snipper) result() []Snippet {
	if len(sn.lines) == 0 {
		return nil
	}
	best := slices.Clone(sn.lines)
	slices.SortStableFunc(best, func(a, b matchLine) int { return b.terms - a.terms })
	best = best[:min(sn.n, len(best))]
	slices.SortFunc(best, func(a, b matchLine) int {
		if a.seg != b.seg {
			return a.seg - b.seg
		}
		return a.start - b.start
	})
	out := make([]Snippet, 0, len(best))
	for _, l := range best {
		out = append(out, makeSnippet(sn.segs[l.seg], l))
	}
	return out
}

// matchSegment finds the lines of text where a word of q's terms is.
func matchSegment(q Query, seg int, text string) []matchLine {
	type hit struct {
		at   [2]int
		term int
	}
	var hits []hit
	lower := asciiLower(text)
	var others [][3]int // the words of text with other letters than ASCII: where, and their folded form's index
	var folded []string
	if !isASCII(text) {
		seen := map[string]int{}
		for i := 0; i < len(text); {
			r, size := utf8.DecodeRuneInString(text[i:])
			if !isWordRune(r) {
				i += size
				continue
			}
			end := wordEnd(text, i)
			if w := text[i:end]; !isASCII(w) {
				f := Fold(w)
				k, ok := seen[f]
				if !ok {
					k = len(folded)
					seen[f] = k
					folded = append(folded, f)
				}
				others = append(others, [3]int{i, end, k})
			}
			i = end
		}
	}
	for ti, t := range q.Terms {
		for wi, w := range t.Words {
			prefix := t.Prefix && wi == len(t.Words)-1
			if isASCII(w) {
				for from := 0; from < len(lower); {
					i := strings.Index(lower[from:], w)
					if i < 0 {
						break
					}
					i += from
					end := i + len(w)
					from = end
					if wordBefore(text, i) {
						continue
					}
					if prefix {
						end = wordEnd(text, end)
					} else if wordAfter(text, end) {
						continue
					}
					hits = append(hits, hit{[2]int{i, end}, ti})
				}
			}
			// The words with other letters, folded (été is ete).
			for _, o := range others {
				if f := folded[o[2]]; f == w || (prefix && strings.HasPrefix(f, w)) {
					hits = append(hits, hit{[2]int{o[0], o[1]}, ti})
				}
			}
		}
	}
	if len(hits) == 0 {
		return nil
	}
	slices.SortFunc(hits, func(a, b hit) int { return a.at[0] - b.at[0] })
	var out []matchLine
	for _, h := range hits {
		start := strings.LastIndexByte(text[:h.at[0]], '\n') + 1
		if n := len(out); n > 0 && out[n-1].start == start {
			l := &out[n-1]
			if m := l.matches[len(l.matches)-1]; h.at[0] < m[1] {
				continue // overlaps the one before
			}
			l.matches = append(l.matches, h.at)
			l.terms |= 1 << h.term
			continue
		}
		end := strings.IndexByte(text[h.at[0]:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += h.at[0]
		}
		out = append(out, matchLine{seg: seg, start: start, end: end, matches: [][2]int{h.at}, terms: 1 << h.term})
	}
	for i := range out {
		out[i].terms = popcount(out[i].terms)
	}
	return out
}

func popcount(x int) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

// makeSnippet cuts a matched line to at most snippetLen bytes around its
// first match.
func makeSnippet(seg Segment, l matchLine) Snippet {
	from, to := l.start, l.end
	first := l.matches[0]
	if to-from > snippetLen {
		if first[0]-snippetBefore > from {
			// Begin at a word: after the first space past the cut.
			from = first[0] - snippetBefore
			if i := strings.IndexByte(seg.Text[from:first[0]], ' '); i >= 0 {
				from += i + 1
			}
		}
		if from+snippetLen < to {
			// End at a word: before the last space of the cut.
			to = max(from+snippetLen, first[1])
			if i := strings.LastIndexByte(seg.Text[first[1]:to], ' '); i >= 0 {
				to = first[1] + i
			}
		}
	}
	from = runeStart(seg.Text, from)
	to = runeStart(seg.Text, to)
	text := seg.Text[from:to]
	lead := ""
	if from > l.start {
		lead = "…"
	}
	trimmed := strings.TrimLeft(text, " \t")
	shift := len(lead) - (len(text) - len(trimmed)) - from // a byte of seg.Text to one of the snippet
	text = lead + strings.TrimRight(trimmed, " \t\r")
	if to < l.end {
		text += "…"
	}
	s := Snippet{Label: seg.Label, Text: text}
	for _, m := range l.matches {
		if m[0] >= from && m[1] <= to && m[1]+shift <= len(text) {
			s.Matches = append(s.Matches, [2]int{m[0] + shift, m[1] + shift})
		}
	}
	return s
}

// runeStart is i moved back to the start of the character it is in.
func runeStart(s string, i int) int {
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

// wordBefore reports whether a word character ends just before i.
func wordBefore(s string, i int) bool {
	if i == 0 {
		return false
	}
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return isWordRune(r)
}

// wordAfter reports whether a word character begins at i.
func wordAfter(s string, i int) bool {
	if i >= len(s) {
		return false
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return isWordRune(r)
}

// wordEnd is where the word going on at i ends.
func wordEnd(s string, i int) int {
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !isWordRune(r) {
			break
		}
		i += size
	}
	return i
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// asciiLower is s with A-Z made lower case, byte for byte (so offsets
// hold).
func asciiLower(s string) string {
	i := strings.IndexFunc(s, func(r rune) bool { return 'A' <= r && r <= 'Z' })
	if i < 0 {
		return s
	}
	b := []byte(s)
	for j := i; j < len(b); j++ {
		if c := b[j]; 'A' <= c && c <= 'Z' {
			b[j] = c + 'a' - 'A'
		}
	}
	return string(b)
}
