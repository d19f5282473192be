package main

import (
	"os"
	"path/filepath"

	"spbridge/internal/checkpoint"
)

// ckptFlags are the checkpoint flags of run and serve.
type ckptFlags struct {
	off   *bool
	turns *int
	bytes *int64
}

// addCheckpointFlags adds --no-checkpoints, --checkpoint-turns and
// --checkpoint-bytes (their defaults from the environment, checked when
// used).
func addCheckpointFlags(f *flagSet) ckptFlags {
	return ckptFlags{
		off:   f.Bool("no-checkpoints", false, "keep no checkpoints of the files turns change (no change notices, no file rewinds)"),
		turns: f.Int("checkpoint-turns", 0, "keep the checkpoints of this many turns per conversation (default $"+checkpoint.EnvTurns+", else 100)"),
		bytes: f.Int64("checkpoint-bytes", 0, "keep at most this many bytes of earlier file contents per conversation (default $"+checkpoint.EnvBytes+", else 512 MiB)"),
	}
}

// options are where the sessions keep their folders' baselines ("" for
// none) and the policy, under the state folder state.
func (c ckptFlags) options(state string) (string, checkpoint.Policy, error) {
	p, err := checkpoint.PolicyFromEnv(os.Getenv)
	if err != nil {
		return "", p, err
	}
	if *c.turns > 0 {
		p.MaxTurns = *c.turns
	}
	if *c.bytes > 0 {
		p.MaxBytes = *c.bytes
	}
	if *c.off {
		return "", p, nil
	}
	return filepath.Join(state, "checkpoints"), p, nil
}
