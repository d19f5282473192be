package prices

import "strings"

// contextWindows holds the context window, in tokens, of the models in the
// price table and of Claude's model families, for the editor's context
// meter when the CLI does not report it (Claude Code reports it with each
// result; the Codex CLI does not).
var contextWindows = map[string]int64{
	"gpt-5":             400_000,
	"gpt-5-codex":       400_000,
	"gpt-5-mini":        400_000,
	"gpt-5-nano":        400_000,
	"gpt-4.1":           1_047_576,
	"gpt-4.1-mini":      1_047_576,
	"gpt-4.1-nano":      1_047_576,
	"gpt-4o":            128_000,
	"gpt-4o-mini":       128_000,
	"o3":                200_000,
	"o4-mini":           200_000,
	"codex-mini-latest": 200_000,
}

// claudeFamilies are the Claude model name prefixes with a 200,000-token
// window (a model given 1M by a beta reports it itself).
var claudeFamilies = []string{"claude-opus-", "claude-sonnet-", "claude-haiku-", "claude-3-"}

// ContextWindow returns model's context window in tokens, and false when
// the table does not know it: its exact name, a dated snapshot of a model
// in the table, or a Claude model by family.
func ContextWindow(model string) (int64, bool) {
	if n, ok := contextWindows[model]; ok {
		return n, true
	}
	for name, n := range contextWindows {
		if rest, ok := strings.CutPrefix(model, name+"-"); ok && len(rest) == len("2006-01-02") && rest[4] == '-' && rest[7] == '-' {
			return n, true
		}
	}
	for _, f := range claudeFamilies {
		if strings.HasPrefix(model, f) {
			return 200_000, true
		}
	}
	return 0, false
}
