package cliproc

import (
	"cmp"
	"encoding/binary"
	"regexp"
	"slices"
	"strings"
)

// What a program's stderr may hold that must not be shown or stored as it
// is: its credentials (a key in its environment, a token in a request it
// logs), and an echo of what it was told.

// credentialPatterns find credentials; the submatch named "v" is the
// secret.
var credentialPatterns = []*regexp.Regexp{
	// NAME_API_KEY=value, NAME_TOKEN: value, and the like.
	regexp.MustCompile(`(?i)\b[A-Z0-9_]*(?:API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD)["']?\s*[=:]\s*["']?(?P<v>[^\s"',;]+)`),
	// Authorization: Bearer value, Authorization: Basic value, Bearer value.
	regexp.MustCompile(`(?i)\bauthorization["']?\s*[=:]\s*["']?(?:[a-z]+\s+)?(?P<v>[^\s"',;]+)`),
	regexp.MustCompile(`(?i)\bbearer\s+(?P<v>[A-Za-z0-9._~+/=-]+)`),
	// x-api-key: value (Anthropic's header).
	regexp.MustCompile(`(?i)\bx-api-key["']?\s*[=:]\s*["']?(?P<v>[^\s"',;]+)`),
	// sk-…, sk-ant-…, sk-proj-… keys wherever they appear.
	regexp.MustCompile(`\b(?P<v>sk-[A-Za-z0-9_-]{8,})`),
}

// keyPrefixes are the recognisable beginnings of keys, kept with the
// first characters after them.
var keyPrefixes = []string{"sk-ant-", "sk-proj-", "sk-"}

// maskKeep is how many characters of a secret are kept, beyond its
// recognisable prefix, so that a reader can tell which key it was.
const maskKeep = 4

// mask marks what replaces the hidden part of a secret.
const mask = "****"

// MaskCredentials returns s with everything that looks like a credential
// masked: the values of `*_API_KEY=…`, `*_TOKEN=…` (and secrets,
// passwords), `Authorization: …`, `Bearer …` and `x-api-key: …`, and
// `sk-…`/`sk-ant-…` keys anywhere, keep their first four characters
// (after a key's "sk-ant-" and the like) and the rest becomes "****".
// Masking masked text changes nothing.
func MaskCredentials(s string) string {
	type span struct{ start, end int }
	var spans []span
	for _, re := range credentialPatterns {
		v := re.SubexpIndex("v")
		for _, m := range re.FindAllStringSubmatchIndex(s, -1) {
			spans = append(spans, span{m[2*v], m[2*v+1]})
		}
	}
	if len(spans) == 0 {
		return s
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(b.end, a.end)) })
	var b strings.Builder
	last := 0
	for _, sp := range spans {
		if sp.start < last {
			continue // inside a secret masked already
		}
		v := s[sp.start:sp.end]
		if strings.Contains(v, mask) || strings.HasPrefix(s[sp.end:], mask) {
			continue // masked already
		}
		n := maskKeep
		for _, p := range keyPrefixes {
			if strings.HasPrefix(v, p) {
				n += len(p)
				break
			}
		}
		if len(v) <= n {
			n = 0 // too short to keep any of it
		}
		b.WriteString(s[last : sp.start+n])
		b.WriteString(mask)
		last = sp.end
	}
	b.WriteString(s[last:])
	return b.String()
}

// echoGram is the shortest run of a message that CutEcho recognises in a
// program's output.
const echoGram = 16

// EchoCut replaces each cut-out run of CutEcho.
const EchoCut = "[…]"

// CutEcho returns out with every run of at least 16 bytes that also occurs
// in sent replaced by EchoCut: a program that echoes what it was told (or
// pieces of it) on stderr gives it back only as "[…]".
func CutEcho(out, sent string) string {
	if len(sent) < echoGram || len(out) < echoGram {
		return out
	}
	key := func(s string) [2]uint64 {
		return [2]uint64{binary.LittleEndian.Uint64([]byte(s[:8])), binary.LittleEndian.Uint64([]byte(s[8:16]))}
	}
	grams := make(map[[2]uint64]struct{}, len(sent))
	for i := 0; i+echoGram <= len(sent); i++ {
		grams[key(sent[i:])] = struct{}{}
	}
	var b strings.Builder
	last := 0
	for i := 0; i+echoGram <= len(out); {
		if _, ok := grams[key(out[i:])]; !ok || !strings.Contains(sent, out[i:i+echoGram]) {
			i++
			continue
		}
		// The longest run from i that sent holds: grow it while it does.
		n := echoGram
		for step := echoGram; step > 0; {
			if i+n+step <= len(out) && strings.Contains(sent, out[i:i+n+step]) {
				n += step
				step *= 2
			} else {
				step /= 2
			}
		}
		b.WriteString(out[last:i])
		b.WriteString(EchoCut)
		i += n
		last = i
	}
	if last == 0 {
		return out
	}
	b.WriteString(out[last:])
	return b.String()
}
