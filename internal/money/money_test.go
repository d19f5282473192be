package money

import (
	"encoding/json"
	"testing"
)

func TestMoneyText(t *testing.T) {
	tests := []struct {
		usd  json.Number
		want string
	}{
		{"0.0009599999999999999", "$0.00096"},
		{"1.23456", "$1.23"},
		{"12.3", "$12.30"},
		{"0", "$0.00"},
		{"0.0", "$0.00"},
		{"1", "$1.00"},
		{"0.5", "$0.50"},
		{"0.123456", "$0.1235"},
		{"0.02134", "$0.02134"},
		{"0.99999", "$1.00"},
		{"0.0000012345678", "$0.000001235"},
		{"1234.565", "$1234.57"},
		{"9.6e-4", "$0.00096"},
		{"-0.25", "-$0.25"},
		{"abc", "$abc"},
		{"\"1\"", "$\"1\""},
	}
	for _, tt := range tests {
		if got := Text(tt.usd); got != tt.want {
			t.Errorf("Text(%s) = %q, want %q", tt.usd, got, tt.want)
		}
	}
}

func TestMoneyJSON(t *testing.T) {
	tests := []struct {
		usd, want json.Number
	}{
		{"0.0009599999999999999", "0.00096"},
		{"1.23456", "1.23456"},
		{"12.3", "12.3"},
		{"0", "0"},
		{"0.00000000004", "0"},
		{"-0.00000000004", "0"},
		{"0.00000000005", "0.0000000001"},
		{"0.12345678901234", "0.123456789"},
		{"3", "3"},
		{"1e-3", "0.001"},
		{"x", "x"},
	}
	for _, tt := range tests {
		got := JSON(tt.usd)
		if got != tt.want {
			t.Errorf("JSON(%s) = %s, want %s", tt.usd, got, tt.want)
		}
		if _, err := got.Float64(); err != nil && tt.usd != "x" {
			t.Errorf("JSON(%s) = %s is not a number: %v", tt.usd, got, err)
		}
	}
}
