package itemmap

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// appServerSession reads a recorded app-server session: the server's lines
// as one stream, and the client's answers to approval requests by request
// id.
func appServerSession(t *testing.T, path string) ([]byte, map[string]bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	answers := map[string]bool{}
	for _, line := range bytes.Split(data, []byte("\n")) {
		rec := gjson.ParseBytes(line)
		msg := rec.Get("msg")
		switch rec.Get("dir").String() {
		case "out":
			out.WriteString(msg.Raw)
			out.WriteByte('\n')
		case "in":
			if d := msg.Get("result.decision"); d.Exists() {
				answers[msg.Get("id").Raw] = strings.HasPrefix(d.String(), "accept")
			}
		}
	}
	return out.Bytes(), answers
}

func runCodexApp(t *testing.T, r io.Reader, answers map[string]bool) *panel {
	t.Helper()
	m := NewCodexApp(SequentialIDs())
	p := &panel{}
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		line = bytes.TrimSuffix(line, []byte("\n"))
		if len(line) > 0 {
			res := m.Line(line)
			for _, a := range res.Approvals {
				m.Answered(a.RequestID, answers[a.RequestID])
			}
			p.apply(t, res)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if m.InTurn() {
		p.apply(t, m.Finish(false, "codex app-server stopped before the turn ended.", ""))
	}
	return p
}

func TestCodexAppServerGolden(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/codex/app-server/*.jsonl")
	if len(files) == 0 {
		t.Fatal("no recorded app-server sessions")
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".jsonl")
		t.Run(name, func(t *testing.T) {
			stream, answers := appServerSession(t, f)
			whole := runCodexApp(t, bytes.NewReader(stream), answers).golden()
			byLine := runCodexApp(t, &lineReader{stream}, answers).golden()
			byTwo := runCodexApp(t, &chunkReader{stream, 2}, answers).golden()
			if !bytes.Equal(whole, byLine) || !bytes.Equal(whole, byTwo) {
				t.Fatalf("results differ by how the stream is read")
			}
			golden := filepath.Join("testdata", "codex", "app-server", name+".golden.json")
			if *update {
				if err := os.WriteFile(golden, whole, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if !bytes.Equal(whole, want) {
				t.Errorf("items differ from %s; got:\n%s", golden, whole)
			}
		})
	}
}

func FuzzCodexApp(f *testing.F) {
	files, _ := filepath.Glob("../../testdata/codex/app-server/*.jsonl")
	for _, file := range files {
		stream, _ := appServerSession(&testing.T{}, file)
		f.Add(stream)
	}
	for _, line := range deepLines() {
		f.Add(line)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m := NewCodexApp(SequentialIDs())
		for _, line := range bytes.Split(data, []byte("\n")) {
			checkResult(t, m.Line(line))
		}
		checkResult(t, m.Finish(false, "end", ""))
	})
}
