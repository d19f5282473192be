package wire

import "encoding/json"

// Capabilities is what spbridge reads of initialize's
// clientCapabilities: each turns on something the client shows, and a
// client that sends none of them sees plain ACP (docs/acp.md lists them).
// acp reads them once, when initialize arrives, so that what the client
// writes after it already sees its choice.
type Capabilities struct {
	Meta struct {
		// spbridge.items: _spbridge/item notifications (and
		// _spbridge/edited, and saving by the client).
		Spbridge struct {
			Items bool `json:"items"`
		} `json:"spbridge"`
		// terminal_output: the client shows a command's output in a
		// terminal of its own (Zed's display-only terminal), streamed as
		// _meta.terminal_output.
		TerminalOutput bool `json:"terminal_output"`
	} `json:"_meta"`
	// auth.terminal: the client runs terminal log-ins.
	Auth struct {
		Terminal bool `json:"terminal"`
	} `json:"auth"`
	Session struct {
		// notices (an object): a notice item also goes out as ACP's
		// notice update.
		Notices json.RawMessage `json:"notices"`
		// compaction (an object): a CLI's compaction goes out as
		// compaction_update and compaction_summary_chunk, in place of its
		// notice.
		Compaction json.RawMessage `json:"compaction"`
		// configOptions.boolean (an object): a CLI's on/off settings go
		// out as boolean config options.
		ConfigOptions struct {
			Boolean json.RawMessage `json:"boolean"`
		} `json:"configOptions"`
	} `json:"session"`
	// elicitation.form (an object): the client fills in forms; a
	// questions request is asked as one elicitation/create form, not one
	// permission request a question.
	Elicitation struct {
		Form json.RawMessage `json:"form"`
	} `json:"elicitation"`
}

// ReadCapabilities reads the clientCapabilities of initialize's params.
// One that is missing, or not of its type, is off; the others are read.
func ReadCapabilities(params json.RawMessage) Capabilities {
	var p struct {
		ClientCapabilities Capabilities `json:"clientCapabilities"`
	}
	json.Unmarshal(params, &p) // a field not of its type is left off, and the rest read
	return p.ClientCapabilities
}

// IsObject reports whether a capability is given as an object, the way
// ACP turns one on.
func IsObject(raw json.RawMessage) bool { return len(raw) > 0 && raw[0] == '{' }
