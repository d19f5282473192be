package cliproc

import "time"

// PTYConfig says what to run in a pseudo-terminal.
type PTYConfig struct {
	Path string
	Args []string
	Dir  string
	Env  []string // nil inherits os.Environ()
	// Rows and Cols size the terminal when spbridge's own input is not a
	// terminal (default 24×80). When it is one, its size is used and kept in
	// step.
	Rows, Cols uint16
	// Grace is how long an ended run waits for the program at each step
	// (hang-up, SIGTERM, SIGKILL). Default one second.
	Grace time.Duration
}
