package archive

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"spbridge/internal/testbin"
)

const crashHelperEnv = "SPBRIDGE_ARCHIVE_CRASH_HELPER"

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashHelperEnv); dir != "" {
		crashHelper(dir)
		return
	}
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

const crashVariants = 4

// crashVariant builds conversation k of the crash test deterministically:
// fixed ids, a shared image and two images of its own.
func crashVariant(k int) *Conversation {
	c := &Conversation{Model: fmt.Sprintf("model-%d", k), Provider: "claude-code"}
	shared := bytes.Repeat([]byte("shared image "), 4000)
	for turn := 0; turn <= k; turn++ {
		u := ItemFromMap(map[string]any{"id": fmt.Sprintf("00000000-0000-4000-8000-%012d", 2*turn), "type": TypeUser, "text": fmt.Sprintf("variant %d turn %d", k, turn), "hasImage": true})
		a := ItemFromMap(map[string]any{"id": fmt.Sprintf("00000000-0000-4000-8000-%012d", 2*turn+1), "type": TypeAssistant, "text": bytesOf("reply ", 2000+k)})
		c.Items = append(c.Items, u, a)
		own, err := NewImageBlock("image/png", []byte(fmt.Sprintf("%s variant %d turn %d", bytesOf("own ", 30000), k, turn)))
		if err != nil {
			panic(err)
		}
		sharedBlock, err := NewImageBlock("image/png", shared)
		if err != nil {
			panic(err)
		}
		c.History = append(c.History,
			Message{Role: "user", Content: []Block{NewTextBlock(u.String("text")), own, sharedBlock}},
			Message{Role: "assistant", Content: []Block{NewTextBlock(a.String("text"))}})
	}
	return c
}

func bytesOf(s string, n int) string { return string(bytes.Repeat([]byte(s), n)) }

// crashHelper saves the crash variants into dir one after another, forever,
// until it is killed, writing a byte to its standard output after each
// save.
func crashHelper(dir string) {
	p, err := Open(dir, KindDocument, true)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	start := rand.IntN(crashVariants)
	for i := start; ; i++ {
		p.Conv = crashVariant(i % crashVariants)
		if _, err := p.Save(true); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Stdout.Write([]byte{'s'})
	}
}

// TestSaveSurvivesSIGKILL kills a process that is saving at random moments,
// hundreds of times, and checks each time that conversation.json is whole and
// is one of the conversations that were saved, that every image it
// references is there with the right bytes, that fsck finds no problem (what
// the killed save left is a leftover), and that the next save removes those
// leftovers.
func TestSaveSurvivesSIGKILL(t *testing.T) {
	runs := 300
	if testing.Short() {
		runs = 40
	}
	// The helper saves without the race detector: it starts 300 times.
	exe := testbin.Helper()
	want := make(map[string]int)
	for k := range crashVariants {
		data, err := crashVariant(k).Encode()
		if err != nil {
			t.Fatal(err)
		}
		want[string(data)] = k
	}
	pkg := newPackage(t)
	seen := make(map[int]int)
	leftovers, cleaned := 0, 0
	for run := range runs {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), crashHelperEnv+"="+pkg)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		saved, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The kill comes at a random moment after the helper's first save
		// ended, however slowly it starts on a busy machine.
		if _, err := saved.Read(make([]byte, 1)); err != nil {
			cmd.Wait()
			t.Fatalf("run %d: the helper ended before its first save: %v\n%s", run, err, stderr.Bytes())
		}
		time.Sleep(time.Duration(rand.IntN(40000)) * time.Microsecond)
		cmd.Process.Signal(syscall.SIGKILL)
		err = cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("run %d: helper ended by itself: %v\n%s", run, err, stderr.Bytes())
		}
		// fsck finds no problem at any instant: what the killed save left
		// behind is reported as leftovers.
		rep, err := Inspect(pkg)
		if err != nil {
			t.Fatalf("run %d: fsck: %v", run, err)
		}
		if len(rep.Problems) > 0 {
			t.Fatalf("run %d: fsck after a kill: %q", run, rep.Problems)
		}
		leftovers += len(rep.Leftovers)
		data, err := os.ReadFile(filepath.Join(pkg, AgentDir, ConversationFile))
		if os.IsNotExist(err) && len(seen) == 0 {
			continue // killed before its first save finished
		}
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		k, ok := want[string(data)]
		if !ok {
			t.Fatalf("run %d: conversation.json is none of the saved conversations (%d bytes)", run, len(data))
		}
		seen[k]++
		p := mustOpen(t, pkg)
		if p.Unreadable != "" {
			t.Fatalf("run %d: reopened as unreadable: %s", run, p.Unreadable)
		}
		for _, m := range p.Conv.History {
			for _, b := range m.Content {
				if b.Type() == BlockImageOmitted {
					t.Fatalf("run %d: variant %d lost an image", run, k)
				}
			}
		}
		if run%3 == 0 && len(rep.Leftovers) > 0 {
			// The next open-then-save removes the leftovers, and changes
			// nothing else.
			r := mustSave(t, p)
			if len(r.Written) != 0 {
				t.Fatalf("run %d: the save after a kill wrote %q", run, r.Written)
			}
			if rep, err := Inspect(pkg); err != nil || len(rep.Problems)+len(rep.Leftovers) != 0 {
				t.Fatalf("run %d: fsck after the next save: %+v, %v", run, rep, err)
			}
			cleaned++
		}
	}
	t.Logf("%d kills; conversation.json held variants %v; %d leftovers found, %d times cleaned by the next save", runs, seen, leftovers, cleaned)
	if len(seen) < 2 {
		t.Errorf("the kills only ever saw variants %v; the helper did not get to save", seen)
	}
}
