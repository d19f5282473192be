package main

import (
	"slices"

	"spbridge/internal/backend"
	"spbridge/internal/clis"
)

// cliFlags are the flags of the CLIs' own settings (--NAME-SETTING, as
// each CLI's row declares them).
type cliFlags []cliFlag

type cliFlag struct {
	cli     string
	setting backend.Setting
	value   *string
}

// addCLIFlags adds to f the flags of the CLIs' own settings: those of the
// settings a backend is made with (serve: only those serve takes), or,
// stream, those of a recorded stream (replay).
func addCLIFlags(f *flagSet, serve, stream bool) cliFlags {
	var out cliFlags
	for _, c := range clis.All {
		settings := c.Settings
		if stream {
			settings = c.StreamSettings
		}
		for _, s := range settings {
			if serve && !s.Serve {
				continue
			}
			out = append(out, cliFlag{c.Name, s, f.String(c.Flag(s), s.Default, s.Usage)})
		}
	}
	return out
}

// own is the settings of the CLI named name as its flags give them.
func (cf cliFlags) own(name string) map[string]string {
	own := map[string]string{}
	for _, fl := range cf {
		if fl.cli == name {
			own[fl.setting.Name] = *fl.value
		}
	}
	return own
}

// all are the settings of every CLI as their flags give them, by the
// CLI's name.
func (cf cliFlags) all() map[string]map[string]string {
	all := map[string]map[string]string{}
	for _, fl := range cf {
		if all[fl.cli] == nil {
			all[fl.cli] = map[string]string{}
		}
		all[fl.cli][fl.setting.Name] = *fl.value
	}
	return all
}

// check refuses a value a setting does not take, whichever CLI is used.
func (cf cliFlags) check(f *flagSet) error {
	for _, fl := range cf {
		if err := fl.setting.Check(fl.cli, *fl.value); err != nil {
			return usagef(f.cmd, "%v", err)
		}
	}
	return nil
}

// flagValues are the values the flag of a CLI's own setting called name
// takes; false when no setting's flag is called name.
func flagValues(name string) ([]string, bool) {
	for _, c := range clis.All {
		for _, s := range append(slices.Clip(c.Settings), c.StreamSettings...) {
			if c.Flag(s) == name {
				return s.Values, true
			}
		}
	}
	return nil, false
}
