package cliproc

import (
	"strings"
	"testing"
)

func TestMaskCredentials(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"OPENAI_API_KEY=sk-proj-abcdefghijklmnop", "OPENAI_API_KEY=sk-proj-abcd****"},
		{"ANTHROPIC_API_KEY=abcdefghijkl rest", "ANTHROPIC_API_KEY=abcd**** rest"},
		{"export GITHUB_TOKEN='ghp_0123456789'", "export GITHUB_TOKEN='ghp_****'"},
		{"CLAUDE_CODE_OAUTH_TOKEN: tok-123456789", "CLAUDE_CODE_OAUTH_TOKEN: tok-****"},
		{"Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig", "Authorization: Bearer eyJh****"},
		{`"authorization":"Basic dXNlcjpwYXNzd29yZA=="`, `"authorization":"Basic dXNl****"`},
		{"request failed: bearer abcdefgh12345", "request failed: bearer abcd****"},
		{"x-api-key: sk-ant-api03-ZZZZZZZZZZZZ", "x-api-key: sk-ant-api0****"},
		{"key sk-ant-api03-AAAAAAAAAAAAAAAA used", "key sk-ant-api0**** used"},
		{"the key sk-1234567890abcdef was refused", "the key sk-1234**** was refused"},
		{"MY_SECRET=ab", "MY_SECRET=****"},
		{"Bearer abcd", "Bearer ****"},
		{"nothing secret here: max_tokens 4096, risk-free", "nothing secret here: max_tokens 4096, risk-free"},
		{"two: A_TOKEN=aaaaaaaa B_API_KEY=bbbbbbbb", "two: A_TOKEN=aaaa**** B_API_KEY=bbbb****"},
	} {
		if got := MaskCredentials(tc.in); got != tc.want {
			t.Errorf("MaskCredentials(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := MaskCredentials(MaskCredentials(tc.in)); got != tc.want {
			t.Errorf("MaskCredentials twice (%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCutEcho(t *testing.T) {
	prefix := "# Conversation so far\nuser: the launch code is 0000\nassistant: noted, I will keep the launch code safe\n\n"
	sent := prefix + "What next?"
	for _, tc := range []struct{ out, want string }{
		{"debug: prompt=" + sent + "\nerror: boom\n", "debug: prompt=[…]\nerror: boom\n"},
		{"a piece: the launch code is 0000\nassistant: noted, I will keep\n", "a piece[…]\n"},
		{"cut at the start: launch code is 0000\nassistant: noted, I", "cut at the start:[…]"},
		{"error: connection refused\n", "error: connection refused\n"},
		{"short: code is 0\n", "short: code is 0\n"},
	} {
		if got := CutEcho(tc.out, sent); got != tc.want {
			t.Errorf("CutEcho(%q) = %q, want %q", tc.out, got, tc.want)
		}
	}
	if got := CutEcho(strings.Repeat("x", 100), ""); got != strings.Repeat("x", 100) {
		t.Errorf("CutEcho with nothing sent changed the text: %q", got)
	}
}
