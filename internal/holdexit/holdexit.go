// Package holdexit holds off the exit a signal asks for while a short write
// is under way, so that the write ends whole (its temporary file renamed
// into place, or removed) before the process ends.
package holdexit

import "sync"

var (
	mu      sync.Mutex
	held    int
	pending func()
)

// Hold holds off an exit until release is called (once; later calls do
// nothing). An exit asked for meanwhile runs when the last hold is
// released, in the goroutine that releases it.
func Hold() (release func()) {
	mu.Lock()
	held++
	mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			held--
			exit := pending
			if held > 0 {
				exit = nil
			}
			mu.Unlock()
			if exit != nil {
				exit()
			}
		})
	}
}

// Exit runs exit (which ends the process) now when nothing is held, else
// when the last hold is released.
func Exit(exit func()) {
	mu.Lock()
	if held > 0 {
		pending = exit
		mu.Unlock()
		return
	}
	mu.Unlock()
	exit()
}
