package claude

import (
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"spbridge/internal/backend"
)

// TestProjectCommandsReadUnlocked: the init line's command names get the
// descriptions of the project's .claude/commands, read with no lock of the
// backend held: while the read is held up, the backend's lock is free and
// Commands, Models and Mode answer from other goroutines; the names are
// published once the read is done.
func TestProjectCommandsReadUnlocked(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".claude", "commands"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".claude", "commands", "greet.md"), []byte("---\ndescription: Greet someone\n---\nSay hello.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var published [][]backend.Command
	var pubMu sync.Mutex
	b := New(Options{Dir: dir, Events: backend.Events{CommandsChanged: func(c []backend.Command) {
		pubMu.Lock()
		published = append(published, c)
		pubMu.Unlock()
	}}})

	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var lockFree bool
	b.projectCommands = func(dir string) []backend.Command {
		first := false
		once.Do(func() { first = true })
		if first { // the init line's read: held up until the test lets go
			if b.mu.TryLock() {
				lockFree = true
				b.mu.Unlock()
			}
			close(entered)
			<-release
		}
		return ProjectCommands(dir)
	}

	done := make(chan struct{})
	go func() {
		defer close(done)
		b.observe([]byte(`{"type":"system","subtype":"init","slash_commands":["greet","compact","login"]}`), nil)
	}()
	<-entered
	if !lockFree {
		close(release)
		<-done
		t.Fatal("the backend's lock is held while .claude/commands is read")
	}
	// Other goroutines are not kept waiting by the read.
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got := b.Commands(); !slices.Contains(got, backend.Command{Name: "greet", Description: "Greet someone"}) {
				t.Errorf("Commands() during the read = %v, want the project's greet", got)
			}
			b.Models()
			b.Mode()
		}()
	}
	wg.Wait()
	close(release)
	<-done

	want := []backend.Command{{Name: "greet", Description: "Greet someone"}, {Name: "compact"}}
	if got := b.Commands(); !slices.Equal(got, want) {
		t.Errorf("Commands() = %v, want %v", got, want)
	}
	pubMu.Lock()
	defer pubMu.Unlock()
	if len(published) != 1 || !slices.Equal(published[0], want) {
		t.Errorf("CommandsChanged heard %v, want %v once", published, want)
	}
}

// TestFullCommandsWinOverSlowRead: the initialize answer's full list that
// arrives while the init line's names wait on the project's commands is
// kept: the slower read does not overwrite it.
func TestFullCommandsWinOverSlowRead(t *testing.T) {
	b := New(Options{Dir: t.TempDir()})
	entered, release := make(chan struct{}), make(chan struct{})
	var lockFree bool
	b.projectCommands = func(dir string) []backend.Command {
		if b.mu.TryLock() {
			lockFree = true
			b.mu.Unlock()
		}
		close(entered)
		<-release
		return ProjectCommands(dir)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.setCommands([]backend.Command{{Name: "greet"}}, false)
	}()
	<-entered
	if !lockFree {
		close(release)
		<-done
		t.Fatal("the backend's lock is held while .claude/commands is read")
	}
	full := []backend.Command{{Name: "review", Description: "Review a change"}}
	b.setCommands(full, true)
	close(release)
	<-done
	if got := b.Commands(); !slices.Equal(got, full) {
		t.Errorf("Commands() = %v, want the full list %v", got, full)
	}
}
