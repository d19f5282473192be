package search

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// Bounds of a query.
const (
	MaxQuery = 1024 // bytes
	MaxTerms = 32
)

// ErrEmptyQuery is the error of a query with no word to look for.
var ErrEmptyQuery = errors.New("the query has no word to search for (words are letters and digits)")

// Query is a parsed search: every term must be in a conversation.
type Query struct {
	Terms []Term
}

// Term is one word, or a phrase ("…" in the query: its words one after
// the other); Prefix makes its last word match any word it begins
// (a trailing * in the query).
type Term struct {
	Words  []string // folded (Fold)
	Prefix bool
}

// ParseQuery reads a query as a person types it: words, all of which must
// be found, in any order; "a phrase in double quotes", whose words must
// follow one another; a word ending in * matches the words it begins.
// Everything else is text, not syntax: operators, brackets and
// regular-expression characters separate words like spaces (so foo.bar
// is the phrase "foo bar"), and AND, OR, NOT are words. Case and
// diacritics do not count. An empty query, one of no word, one over
// MaxQuery bytes or of more than MaxTerms terms is an error.
func ParseQuery(s string) (Query, error) {
	if len(s) > MaxQuery {
		return Query{}, fmt.Errorf("the query is %d bytes long; at most %d are searched", len(s), MaxQuery)
	}
	s = strings.ToValidUTF8(s, " ")
	var q Query
	addTerm := func(text string, phrase bool) {
		words := Words(text)
		if len(words) == 0 {
			return
		}
		t := Term{Words: words}
		if !phrase && strings.HasSuffix(strings.TrimSpace(text), "*") {
			t.Prefix = true
		}
		// foo.bar is one term, its words in order (foo.bar* a prefix of
		// its last), as the tokenizer reads the text.
		q.Terms = append(q.Terms, t)
	}
	for s != "" {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		if s == "" {
			break
		}
		if s[0] == '"' {
			end := strings.IndexByte(s[1:], '"')
			if end < 0 {
				addTerm(s[1:], true) // an unclosed quote runs to the end
				break
			}
			addTerm(s[1:1+end], true)
			s = s[end+2:]
			continue
		}
		end := strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == '"' })
		if end < 0 {
			end = len(s)
		}
		addTerm(s[:end], false)
		s = s[end:]
	}
	if len(q.Terms) == 0 {
		return Query{}, ErrEmptyQuery
	}
	if len(q.Terms) > MaxTerms {
		return Query{}, fmt.Errorf("the query has %d terms; at most %d are searched", len(q.Terms), MaxTerms)
	}
	return q, nil
}

// fts is the query in the full-text engine's syntax: each term a quoted
// phrase of folded words (which hold only letters, marks and digits, so
// nothing in them is syntax), the terms joined by AND.
func (q Query) fts() string {
	parts := make([]string, len(q.Terms))
	for i, t := range q.Terms {
		p := `"` + strings.Join(t.Words, " ") + `"`
		if t.Prefix {
			p += "*"
		}
		parts[i] = p
	}
	return strings.Join(parts, " AND ")
}

// isWordRune reports whether r is part of a word, as the index's tokenizer
// (unicode61) counts it: letters, marks, digits and private-use
// characters; everything else separates words.
func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsNumber(r) || unicode.IsMark(r) || unicode.In(r, unicode.Co)
}

// Words are the words of s, folded.
func Words(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return !isWordRune(r) }) {
		if f := Fold(w); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// Fold is a word as the index compares it: lower case, without
// diacritics.
func Fold(w string) string {
	ascii := true
	for i := 0; i < len(w); i++ {
		if w[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(w)
	}
	t := transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC)
	s, _, err := transform.String(t, strings.ToLower(w))
	if err != nil {
		return strings.ToLower(w)
	}
	return s
}
