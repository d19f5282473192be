package backend

import (
	"errors"
	"testing"
)

// TestFindProgramMissing: a program that is not there is an error that
// says so as before ("NOTFOUND: PROGRAM") and matches both the CLI's own
// error and ErrNoProgram, which the command line tells "not installed"
// by whichever the CLI.
func TestFindProgramMissing(t *testing.T) {
	errX := errors.New("x not found")
	t.Setenv(ProgramVar("x"), "")
	_, err := FindProgram("x", "/no/such/x-program", errX)
	if err == nil || err.Error() != "x not found: /no/such/x-program" || !errors.Is(err, errX) || !errors.Is(err, ErrNoProgram) {
		t.Errorf("FindProgram: %v", err)
	}
	if _, err := FindProgram("x", "", errX); err == nil || err.Error() != "x not found: x" || !errors.Is(err, ErrNoProgram) {
		t.Errorf("FindProgram on PATH: %v", err)
	}
}
