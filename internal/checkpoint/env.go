package checkpoint

import (
	"fmt"
	"strconv"
)

// The environment variables that set the Policy's defaults.
const (
	EnvTurns = "SPBRIDGE_CHECKPOINT_TURNS"
	EnvBytes = "SPBRIDGE_CHECKPOINT_BYTES"
)

// PolicyFromEnv is the policy $SPBRIDGE_CHECKPOINT_TURNS (entries kept)
// and $SPBRIDGE_CHECKPOINT_BYTES (bytes of contents kept) set, each
// taking its default when unset; getenv is os.Getenv.
func PolicyFromEnv(getenv func(string) string) (Policy, error) {
	p := Policy{MaxTurns: DefaultMaxTurns, MaxBytes: DefaultMaxBytes}
	if v := getenv(EnvTurns); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return p, fmt.Errorf("%s=%q: want a whole number of turns, 1 or more", EnvTurns, v)
		}
		p.MaxTurns = n
	}
	if v := getenv(EnvBytes); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return p, fmt.Errorf("%s=%q: want a whole number of bytes, 1 or more", EnvBytes, v)
		}
		p.MaxBytes = n
	}
	return p, nil
}
