package acp

import (
	"spbridge/internal/archive"
)

// promptUsage is a turn's tokens as PromptResponse.usage (ACP's unstable
// Usage, which no client capability gates: a client that does not know
// it ignores it): input, output, cache reads and writes as the CLI
// reported them (format 1 counts the cache apart from input, for every
// CLI), and their sum. nil when the turn reported no tokens.
func promptUsage(u archive.Usage) map[string]any {
	in, out, read, write := tokens(u.Input), tokens(u.Output), tokens(u.CacheRead), tokens(u.CacheWrite)
	total := in + out + read + write
	if total == 0 {
		return nil
	}
	usage := map[string]any{"totalTokens": total, "inputTokens": in, "outputTokens": out}
	if u.CacheRead != "" {
		usage["cachedReadTokens"] = read
	}
	if u.CacheWrite != "" {
		usage["cachedWriteTokens"] = write
	}
	return usage
}
