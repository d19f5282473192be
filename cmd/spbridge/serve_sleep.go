package main

import (
	"fmt"
	"strconv"
	"time"
)

// What serve's CLIs sleep by when the flags say nothing: the environment,
// else the defaults.
const (
	envCLIIdle        = "SPBRIDGE_CLI_IDLE"
	envMaxLiveCLIs    = "SPBRIDGE_MAX_LIVE_CLIS"
	defaultCLIIdle    = 5 * time.Minute
	defaultMaxLiveCLI = 8
)

// sleepFlags are serve's --cli-idle and --max-live-clis.
type sleepFlags struct {
	f    *flagSet
	idle *time.Duration
	max  *int
}

// addSleepFlags adds --cli-idle and --max-live-clis (their defaults from
// the environment, checked when used).
func addSleepFlags(f *flagSet) sleepFlags {
	return sleepFlags{f: f,
		idle: f.Duration("cli-idle", 0, "put a session's CLI to sleep once it has been idle this long: it is ended, and the next message, setting or command resumes it on its own session; 0 keeps CLIs awake (default $"+envCLIIdle+", else 5m)"),
		max:  f.Int("max-live-clis", 0, "keep at most this many CLIs running across the sessions, the least recently used put to sleep first; 0: no limit (default $"+envMaxLiveCLIs+", else 8)"),
	}
}

// options are the idle time and the limit: a flag given, else its
// environment variable, else the default.
func (s sleepFlags) options(getenv func(string) string) (idle time.Duration, max int, err error) {
	idle, max = defaultCLIIdle, defaultMaxLiveCLI
	switch v := getenv(envCLIIdle); {
	case s.f.Changed("cli-idle"):
		idle = *s.idle
	case v != "":
		if idle, err = time.ParseDuration(v); err != nil {
			return 0, 0, fmt.Errorf("%s=%q: want a duration such as 5m or 90s, or 0 to keep CLIs awake", envCLIIdle, v)
		}
	}
	switch v := getenv(envMaxLiveCLIs); {
	case s.f.Changed("max-live-clis"):
		max = *s.max
	case v != "":
		if max, err = strconv.Atoi(v); err != nil {
			return 0, 0, fmt.Errorf("%s=%q: want a number of CLIs, or 0 for no limit", envMaxLiveCLIs, v)
		}
	}
	if idle < 0 {
		return 0, 0, fmt.Errorf("--cli-idle %v: want 0 or more", idle)
	}
	if max < 0 {
		return 0, 0, fmt.Errorf("--max-live-clis %d: want 0 or more", max)
	}
	return idle, max, nil
}
