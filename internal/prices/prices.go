// Package prices is the bundled price table spbridge estimates a turn's
// cost from when the CLI reports none (the Codex CLI never does).
package prices

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"spbridge/internal/archive"
)

// Price is a model's list price in US dollars per million tokens.
type Price struct {
	Input       float64 // input not read from the cache
	CachedInput float64 // input read from the cache
	Output      float64 // output, reasoning included
}

// table holds list prices by model. A model missing here has no estimate:
// its cost stays unknown rather than guessed.
var table = map[string]Price{
	"gpt-5":             {1.25, 0.125, 10},
	"gpt-5-codex":       {1.25, 0.125, 10},
	"gpt-5-mini":        {0.25, 0.025, 2},
	"gpt-5-nano":        {0.05, 0.005, 0.40},
	"gpt-4.1":           {2, 0.50, 8},
	"gpt-4.1-mini":      {0.40, 0.10, 1.60},
	"gpt-4.1-nano":      {0.10, 0.025, 0.40},
	"gpt-4o":            {2.50, 1.25, 10},
	"gpt-4o-mini":       {0.15, 0.075, 0.60},
	"o3":                {2, 0.50, 8},
	"o4-mini":           {1.10, 0.275, 4.40},
	"codex-mini-latest": {1.50, 0.375, 6},
}

// Lookup returns the price of model: its exact name, or a dated snapshot of
// a model in the table ("gpt-4.1-2025-04-14").
func Lookup(model string) (Price, bool) {
	if p, ok := table[model]; ok {
		return p, true
	}
	for name, p := range table {
		if rest, ok := strings.CutPrefix(model, name+"-"); ok && len(rest) == len("2006-01-02") && rest[4] == '-' && rest[7] == '-' {
			return p, true
		}
	}
	return Price{}, false
}

// Estimate returns the cost of usage on model from the table, and false
// when the model is not in it. Cache writes are priced as input.
func Estimate(model string, u archive.Usage) (json.Number, bool) {
	p, ok := Lookup(model)
	if !ok {
		return "", false
	}
	n := func(v json.Number) float64 { f, _ := strconv.ParseFloat(string(v), 64); return f }
	usd := (n(u.Input)+n(u.CacheWrite))*p.Input + n(u.CacheRead)*p.CachedInput + n(u.Output)*p.Output
	usd = math.Round(usd/1e6*1e9) / 1e9 // to a billionth of a dollar
	return json.Number(strconv.FormatFloat(usd, 'f', -1, 64)), true
}
