package wire

import (
	"encoding/json"
	"strconv"

	"spbridge/internal/archive"
	"spbridge/internal/itemmap"
	"spbridge/internal/money"
	"spbridge/internal/prices"
)

// PromptUsage is a turn's tokens as PromptResponse.usage (ACP's unstable
// Usage, which no client capability gates: a client that does not know
// it ignores it): input, output, cache reads and writes as the CLI
// reported them (format 1 counts the cache apart from input, for every
// CLI), and their sum. nil when the turn reported no tokens.
func PromptUsage(u archive.Usage) map[string]any {
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

// UsageUpdate is the usage_update after a turn that reported its usage:
// the tokens in context after its last request, the model's context
// window (as the CLI reported it, else from the bundled table) and the
// conversation's cost so far (cost) when known; nil when neither knows
// the window, or the turn reported no tokens.
func UsageUpdate(end *itemmap.TurnEnd, cost archive.Cost) map[string]any {
	lr := end.LastRound
	used := tokens(lr.Input) + tokens(lr.CacheRead) + tokens(lr.CacheWrite) + tokens(lr.Output)
	size := end.ContextWindow
	if size <= 0 {
		size, _ = prices.ContextWindow(end.Model)
	}
	if size <= 0 || used == 0 {
		return nil
	}
	up := map[string]any{"sessionUpdate": "usage_update", "used": used, "size": size}
	if cost.Kind == archive.CostReported || cost.Kind == archive.CostEstimated {
		if amount, err := strconv.ParseFloat(string(money.JSON(cost.Dollars)), 64); err == nil {
			up["cost"] = map[string]any{"amount": amount, "currency": "USD"}
		}
	}
	return up
}

// tokens is a token count as a number, 0 when absent or not a count.
func tokens(n json.Number) int64 {
	v, err := n.Int64()
	if err != nil || v < 0 {
		return 0
	}
	return v
}
