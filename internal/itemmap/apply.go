package itemmap

import (
	"slices"

	"spbridge/internal/archive"
	"spbridge/internal/prices"
)

// ApplyChange brings an item change into conv's items as they are held
// outside a session (a replay, an import): an add appends the item, a
// removal takes it out (looked for from the end), an update changed the
// item in place already.
func ApplyChange(conv *archive.Conversation, c Change) {
	items := conv.Items
	switch c.Op {
	case OpAdd:
		conv.Items = append(items, c.Item)
	case OpUpdate:
		// The mapper changes the item in place; nothing to copy.
	case OpRemove:
		id := c.Item.ID()
		for i := len(items) - 1; i >= 0; i-- {
			if items[i].ID() == id {
				conv.Items = slices.Delete(items, i, i+1)
				break
			}
		}
	}
}

// Apply brings a turn's end into the conversation: its history, its usage
// into the total, the last request's usage, the cost, and the provider and
// model it ran on. The cost is reported while every turn's cost came from
// the CLI; estimated once a turn's had to come from the price table; unknown
// once a turn had neither.
func Apply(conv *archive.Conversation, end *TurnEnd, provider string) {
	if end == nil {
		return
	}
	conv.History = append(conv.History, end.History...)
	hadUsage := !usageZero(conv.Usage)
	turnUsage := !usageZero(end.Usage)
	if turnUsage {
		conv.Usage = conv.Usage.Add(end.Usage)
		conv.LastRoundUsage = end.LastRound
	}
	cost := &conv.EstimatedCost
	if cost.Kind == "" {
		cost.Kind = archive.CostUnknown
	}
	// A conversation with no usage yet has no cost to speak of: its first
	// priced turn decides the kind.
	fresh := !hadUsage && cost.Dollars == ""
	switch est, estimated := prices.Estimate(end.Model, end.Usage); {
	case end.CostUSD != "":
		switch {
		case fresh:
			cost.Kind, cost.Dollars = archive.CostReported, end.CostUSD
		case cost.Kind == archive.CostReported || cost.Kind == archive.CostEstimated:
			cost.Dollars = archive.AddNumbers(cost.Dollars, end.CostUSD)
		}
	case turnUsage && estimated:
		switch {
		case fresh:
			cost.Kind, cost.Dollars = archive.CostEstimated, est
		case cost.Kind == archive.CostReported || cost.Kind == archive.CostEstimated:
			cost.Kind, cost.Dollars = archive.CostEstimated, archive.AddNumbers(cost.Dollars, est)
		}
	case turnUsage:
		cost.Kind, cost.Dollars = archive.CostUnknown, ""
	}
	if provider != "" && end.Status != "" {
		conv.Provider = provider
	}
	if end.Model != "" {
		conv.Model = end.Model
	}
}

func usageZero(u archive.Usage) bool {
	for _, n := range []string{string(u.Input), string(u.Output), string(u.CacheRead), string(u.CacheWrite)} {
		if n != "" && n != "0" {
			return false
		}
	}
	return true
}
