package main

import (
	"strings"
	"testing"
	"time"
)

// TestSleepFlags: a flag wins over its environment variable, which wins
// over the default; 0 is a value of its own (keep awake, no limit); a bad
// value is an error naming it.
func TestSleepFlags(t *testing.T) {
	for _, c := range []struct {
		args    []string
		env     map[string]string
		idle    time.Duration
		max     int
		wantErr string
	}{
		{nil, nil, defaultCLIIdle, defaultMaxLiveCLI, ""},
		{nil, map[string]string{envCLIIdle: "90s", envMaxLiveCLIs: "3"}, 90 * time.Second, 3, ""},
		{[]string{"--cli-idle", "0", "--max-live-clis", "0"}, map[string]string{envCLIIdle: "90s", envMaxLiveCLIs: "3"}, 0, 0, ""},
		{[]string{"--cli-idle", "1s"}, map[string]string{envCLIIdle: "0"}, time.Second, defaultMaxLiveCLI, ""},
		{nil, map[string]string{envCLIIdle: "0"}, 0, defaultMaxLiveCLI, ""},
		{nil, map[string]string{envCLIIdle: "soon"}, 0, 0, envCLIIdle},
		{nil, map[string]string{envMaxLiveCLIs: "many"}, 0, 0, envMaxLiveCLIs},
		{[]string{"--cli-idle", "-1s"}, nil, 0, 0, "--cli-idle"},
		{[]string{"--max-live-clis", "-2"}, nil, 0, 0, "--max-live-clis"},
	} {
		f := newFlagSet("serve", "", "")
		sf := addSleepFlags(f)
		if err := f.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		idle, max, err := sf.options(func(k string) string { return c.env[k] })
		switch {
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%q %v: error %v, want one naming %s", c.args, c.env, err, c.wantErr)
		case c.wantErr == "" && (err != nil || idle != c.idle || max != c.max):
			t.Errorf("%q %v: %v, %d, %v; want %v, %d", c.args, c.env, idle, max, err, c.idle, c.max)
		}
	}
}
