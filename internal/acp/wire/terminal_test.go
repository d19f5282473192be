package wire

import (
	"strings"
	"testing"
)

func TestTerminalOutputNext(t *testing.T) {
	var st Output
	if got := st.next("ab", "ab"); got != "ab" {
		t.Errorf("next = %q, want %q", got, "ab")
	}
	if got := st.next("abc", ""); got != "c" {
		t.Errorf("next = %q, want %q", got, "c")
	}
	big := strings.Repeat("x", maxTerminalOutput+10)
	got := st.next(big, "")
	if want := ClearTerminal + big[:maxTerminalOutput] + "\r\n… 10 bytes more\r\n"; got != want {
		t.Errorf("next over the cap = %d bytes, want %d", len(got), len(want))
	}
	if got := st.next(big+"y", "y"); got != "" {
		t.Errorf("next after the cap = %q, want nothing", got)
	}
}
