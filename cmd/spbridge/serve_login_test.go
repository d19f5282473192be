package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestServeLogin: `serve --login NAME` (an editor's terminal log-in, the
// method's args appended to `spbridge serve`) is the login command's: an
// unknown CLI is its usage error.
func TestServeLogin(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"serve", "--login", "nope"}, strings.NewReader(""), &out, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), `unknown backend "nope"`) || !strings.Contains(errOut.String(), "login") {
		t.Errorf("serve --login nope = %d, stderr %q", code, errOut.String())
	}
}
