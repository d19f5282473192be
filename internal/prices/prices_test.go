package prices

import (
	"testing"

	"spbridge/internal/archive"
)

func TestEstimate(t *testing.T) {
	tests := []struct {
		model string
		u     archive.Usage
		want  string
		ok    bool
	}{
		{"gpt-5", archive.Usage{Input: "1000000", Output: "100000"}, "2.25", true},
		{"gpt-5", archive.Usage{Input: "400", CacheRead: "600", Output: "50"}, "0.001075", true},
		{"gpt-4.1-2025-04-14", archive.Usage{Input: "1000"}, "0.002", true},
		{"gpt-5.5", archive.Usage{Input: "1000"}, "", false},
		{"gpt-5-turbo", archive.Usage{Input: "1000"}, "", false},
		{"", archive.Usage{Input: "1000"}, "", false},
	}
	for _, tt := range tests {
		got, ok := Estimate(tt.model, tt.u)
		if string(got) != tt.want || ok != tt.ok {
			t.Errorf("Estimate(%q, %+v) = %q, %v, want %q, %v", tt.model, tt.u, got, ok, tt.want, tt.ok)
		}
	}
}

func TestContextWindow(t *testing.T) {
	for _, tc := range []struct {
		model string
		want  int64
		ok    bool
	}{
		{"gpt-5", 400_000, true},
		{"gpt-4.1-2025-04-14", 1_047_576, true},
		{"claude-sonnet-4-5-20250929", 200_000, true},
		{"claude-opus-4-1", 200_000, true},
		{"unknown-model", 0, false},
	} {
		if got, ok := ContextWindow(tc.model); got != tc.want || ok != tc.ok {
			t.Errorf("ContextWindow(%q) = %d, %v, want %d, %v", tc.model, got, ok, tc.want, tc.ok)
		}
	}
}
