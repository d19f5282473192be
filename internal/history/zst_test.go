package history_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"spbridge/internal/history"
	"spbridge/internal/history/historytest"
)

// compress compresses data as a stream is (its frame not saying its
// size, its window the encoder's own).
func compress(t testing.TB, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	e, err := zstd.NewWriter(&b)
	if err != nil {
		t.Fatal(err)
	}
	for len(data) > 0 {
		n := min(len(data), 1<<16)
		if _, err := e.Write(data[:n]); err != nil {
			t.Fatal(err)
		}
		data = data[n:]
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestCompressedImport: a compressed session file imports as the plain
// one does, told by its content too.
func TestCompressedImport(t *testing.T) {
	dir := t.TempDir()
	plain := claudeUser + "\n" + claudeReply + "\n"
	p := historytest.Write(t, dir, "s.jsonl.zst", string(compress(t, []byte(plain))))
	conv, rep := historytest.Import(t, stores, "", p)
	if got := historytest.Kinds(conv); len(got) != 2 || got[0] != "user hello" || got[1] != "assistant hi" || rep.Backend != "claude" {
		t.Errorf("items %q report %+v", got, rep)
	}
}

// TestCompressedBounds: a compressed file that expands past the bound is
// not read (an ExpandError naming it), nor is one cut short or corrupt
// (a CorruptError); reading keeps to the bound, whatever the file
// expands to.
func TestCompressedBounds(t *testing.T) {
	old := *history.MaxExpanded
	defer func() { *history.MaxExpanded = old }()
	*history.MaxExpanded = 1 << 20
	dir := t.TempDir()
	// 8 MiB of one line repeated, from a file of a few kilobytes.
	big := bytes.Repeat([]byte(claudeUser+"\n"), (8<<20)/(len(claudeUser)+1))
	bomb := historytest.Write(t, dir, "bomb.jsonl.zst", string(compress(t, big)))
	_, _, err := history.ImportFile("claude", bomb, history.ImportOptions{Stores: stores})
	var ee *history.ExpandError
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), "expands past 1 MiB") {
		t.Errorf("bomb: %v", err)
	}
	sf, err := history.OpenSession(bomb, 0)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, sf)
	sf.Close()
	if n != 1<<20 || !errors.As(err, &ee) {
		t.Errorf("read %d bytes: %v", n, err)
	}
	// Exactly the bound is read whole.
	exact := historytest.Write(t, dir, "exact.jsonl.zst", string(compress(t, big[:1<<20])))
	sf, err = history.OpenSession(exact, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := io.Copy(io.Discard, sf); n != 1<<20 || err != nil {
		t.Errorf("exact: %d %v", n, err)
	}
	sf.Close()

	whole := compress(t, []byte(claudeUser+"\n"+claudeReply+"\n"))
	for name, data := range map[string][]byte{
		"cut.jsonl.zst":     whole[:len(whole)-5],
		"corrupt.jsonl.zst": append([]byte("not zstd at all"), whole...),
	} {
		p := historytest.Write(t, dir, name, string(data))
		_, _, err := history.ImportFile("claude", p, history.ImportOptions{Stores: stores})
		var ce *history.CorruptError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), p+" is not a whole zstd file") {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A frame whose window is past what spbridge gives one is not read.
	*history.MaxExpanded = old
	// (A frame asking for a window of 1 GiB, then one raw byte.)
	huge := historytest.Write(t, dir, "window.jsonl.zst", "\x28\xb5\x2f\xfd\x00\xa0\x09\x00\x00x")
	_, _, err = history.ImportFile("claude", huge, history.ImportOptions{Stores: stores})
	if err == nil || !strings.Contains(err.Error(), "needs more than 128 MiB of memory to decompress") {
		t.Errorf("window: %v", err)
	}
	// Nothing of the files was written.
	if data, _ := os.ReadFile(bomb); !bytes.Equal(data, compress(t, big)) {
		t.Error("the file changed")
	}
}

// FuzzCompressedImport: any bytes named as a compressed session file
// import or fail with an error; nothing panics.
func FuzzCompressedImport(f *testing.F) {
	whole := compress(f, []byte(claudeUser+"\n"+claudeReply+"\n"))
	f.Add(whole)
	f.Add(whole[:len(whole)/2])
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x58, 0x00, 0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		p := historytest.Write(t, t.TempDir(), "f.jsonl.zst", string(data))
		history.ImportFile("", p, history.ImportOptions{Stores: stores})
		if sf, err := history.OpenSession(p, 0); err == nil {
			sf.Head(func([]byte) bool { return true })
			sf.Tail(func([]byte) bool { return true })
			sf.Close()
		}
	})
}
