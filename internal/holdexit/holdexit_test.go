package holdexit

import "testing"

// TestExitWaitsForHolds: an exit asked for while writes hold it off runs
// when the last of them is released, and at once when none holds it.
func TestExitWaitsForHolds(t *testing.T) {
	exited := 0
	exit := func() { exited++ }
	a, b := Hold(), Hold()
	Exit(exit)
	a()
	a() // a second release does nothing
	if exited != 0 {
		t.Fatalf("exited with a hold left")
	}
	b()
	if exited != 1 {
		t.Fatalf("exited %d times after the last release, want 1", exited)
	}
	pending = nil
	Exit(exit)
	if exited != 2 {
		t.Fatalf("no exit with nothing held")
	}
}
