// Package money formats amounts of US dollars, such as a turn's cost, for
// people and for JSON.
//
// Costs are kept as the decimal text they were read or summed with (a CLI's
// 0.0009599999999999999 stays so in a conversation and in an audit record);
// only what is shown is rounded, here, so that every command shows a cost
// the same way.
package money

import (
	"encoding/json"
	"math"
	"math/big"
	"strings"
)

// JSONPlaces is how many decimal places a cost keeps in JSON output.
const JSONPlaces = 10

// Text is usd for reading, with a dollar sign: to the cent from a dollar
// up ("$1.23", "$12.30"), else to four significant digits with at least
// two decimals ("$0.00096", "$0.1235", "$0.50", "$0.00"). Text that is not
// a number is shown as it is, after the dollar sign.
func Text(usd json.Number) string {
	r, ok := parse(usd)
	if !ok {
		return "$" + string(usd)
	}
	sign := ""
	if r.Sign() < 0 {
		sign = "-"
		r.Neg(r)
	}
	if r.Sign() == 0 {
		return "$0.00"
	}
	if r.Cmp(big.NewRat(1, 1)) >= 0 {
		return sign + "$" + r.FloatString(2)
	}
	s := r.FloatString(sigPlaces(r))
	if atLeastOne(s) {
		// Rounding to four digits reached a dollar: cents.
		s = r.FloatString(2)
	} else {
		s = trimZeros(s, 2)
	}
	return sign + "$" + s
}

// JSON is usd rounded to JSONPlaces decimal places, without trailing
// zeros: 0.0009599999999999999 is 0.00096. Text that is not a number is
// returned as it is.
func JSON(usd json.Number) json.Number {
	r, ok := parse(usd)
	if !ok {
		return usd
	}
	s := trimZeros(r.FloatString(JSONPlaces), 0)
	if s == "-0" {
		s = "0"
	}
	return json.Number(s)
}

// parse reads usd as an exact decimal: a JSON number, not infinite.
func parse(usd json.Number) (*big.Rat, bool) {
	if usd == "" || strings.IndexByte("-0123456789", usd[0]) < 0 || !json.Valid([]byte(usd)) {
		return nil, false
	}
	r, ok := new(big.Rat).SetString(string(usd))
	return r, ok
}

// sigPlaces is how many decimal places give r (positive, below a dollar
// or not) four significant digits, at least two.
func sigPlaces(r *big.Rat) int {
	f, _ := r.Float64()
	if f <= 0 || math.IsInf(f, 0) {
		return 2
	}
	// The first significant digit is at 10^e.
	e := int(math.Floor(math.Log10(f)))
	return max(2, 3-e)
}

// atLeastOne reports whether the decimal text s (not negative) is 1 or
// more.
func atLeastOne(s string) bool {
	whole, _, _ := strings.Cut(s, ".")
	return strings.TrimLeft(whole, "0") != ""
}

// trimZeros removes the trailing zeros of the decimal text s, keeping at
// least keep decimals (and no point when keep is 0 and none are left).
func trimZeros(s string, keep int) string {
	whole, frac, ok := strings.Cut(s, ".")
	if !ok {
		if keep == 0 {
			return s
		}
		return s + "." + strings.Repeat("0", keep)
	}
	frac = strings.TrimRight(frac, "0")
	if len(frac) < keep {
		frac += strings.Repeat("0", keep-len(frac))
	}
	if frac == "" {
		return whole
	}
	return whole + "." + frac
}
