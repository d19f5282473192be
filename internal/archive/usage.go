package archive

import (
	"encoding/json"
	"math/big"
	"strconv"
	"strings"

	"spbridge/internal/canonjson"
)

// Add returns u plus o, field by field. An optional field (CacheWrite1h,
// ReportedCost) is present in the sum when it is present in either. Extra
// fields are u's.
func (u Usage) Add(o Usage) Usage {
	s := Usage{
		Input:             AddNumbers(u.Input, o.Input),
		Output:            AddNumbers(u.Output, o.Output),
		CacheRead:         AddNumbers(u.CacheRead, o.CacheRead),
		CacheWrite:        AddNumbers(u.CacheWrite, o.CacheWrite),
		WebSearchRequests: AddNumbers(u.WebSearchRequests, o.WebSearchRequests),
		Extra:             u.Extra,
	}
	if u.CacheWrite1h != "" || o.CacheWrite1h != "" {
		s.CacheWrite1h = AddNumbers(u.CacheWrite1h, o.CacheWrite1h)
	}
	if u.ReportedCost != "" || o.ReportedCost != "" {
		s.ReportedCost = AddNumbers(u.ReportedCost, o.ReportedCost)
	}
	return s
}

// AddNumbers adds two JSON numbers; "" counts as zero. Integers stay
// integers; otherwise the sum is written in the shortest form that reads back
// as the same float. When one side is "" the other's text is kept as it is.
func AddNumbers(a, b json.Number) json.Number {
	switch {
	case a == "" && b == "":
		return "0"
	case a == "":
		return b
	case b == "":
		return a
	}
	if x, err := strconv.ParseInt(string(a), 10, 64); err == nil {
		if y, err := strconv.ParseInt(string(b), 10, 64); err == nil {
			return json.Number(strconv.FormatInt(x+y, 10))
		}
	}
	if sum, ok := addDecimals(string(a), string(b)); ok {
		return json.Number(sum)
	}
	x, errX := strconv.ParseFloat(string(a), 64)
	y, errY := strconv.ParseFloat(string(b), 64)
	if errX != nil || errY != nil {
		return a
	}
	s, err := canonjson.FormatFloat(x + y)
	if err != nil {
		return a
	}
	return json.Number(s)
}

// addDecimals adds two plain decimals (no exponent) exactly, so that dollar
// amounts do not pick up binary rounding: 0.00062 + 0.00066 is 0.00128.
func addDecimals(a, b string) (string, bool) {
	if strings.ContainsAny(a, "eE") || strings.ContainsAny(b, "eE") {
		return "", false
	}
	x, okX := new(big.Rat).SetString(a)
	y, okY := new(big.Rat).SetString(b)
	if !okX || !okY {
		return "", false
	}
	places := max(decimalPlaces(a), decimalPlaces(b))
	s := new(big.Rat).Add(x, y).FloatString(places)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s, true
}

func decimalPlaces(s string) int {
	if i := strings.IndexByte(s, '.'); i >= 0 {
		return len(s) - i - 1
	}
	return 0
}
