package history_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"spbridge/internal/history"
)

// benchStore builds a store of n sessions, half Claude Code's (in ten
// folders) and half Codex's, in dir: each a few lines of head and tail,
// and every hundredth a sparse file of 300 MB (its head and tail written,
// the middle a hole), as a session with pasted files or long command
// output may grow.
func benchStore(b testing.TB, dir string, n int) history.Options {
	b.Helper()
	claudeDir, codexHome := filepath.Join(dir, "claude"), filepath.Join(dir, "codex")
	meta, err := os.ReadFile(codexFixture)
	if err != nil {
		b.Fatal(err)
	}
	codexHead := string(meta[:strings.Index(string(meta), "\n")+1]) // session_meta, 22 KB
	for i := range n {
		mod := base.Add(time.Duration(i) * time.Minute)
		var path, head, tail string
		if i%2 == 0 {
			id := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
			cwd := fmt.Sprintf("/work/project%d", i%10)
			path = filepath.Join(claudeDir, "projects", munge(cwd), id+".jsonl")
			user := strings.NewReplacer(`"cwd":"/w"`, `"cwd":"`+cwd+`"`, "hello", fmt.Sprintf("hello number %d", i)).Replace(claudeUser)
			head = `{"type":"queue-operation","operation":"enqueue","sessionId":"` + id + `"}` + "\n" + user + "\n" + claudeReply + "\n"
			tail = claudeReply + "\n" + `{"type":"last-prompt","lastPrompt":"x","sessionId":"` + id + `"}` + "\n"
		} else {
			id := fmt.Sprintf("01a23542-0000-7000-8000-%012d", i)
			path = filepath.Join(codexHome, "sessions", "2026", "12", fmt.Sprintf("%02d", 1+i%28), "rollout-2026-12-01T10-00-00-"+id+".jsonl")
			user := `{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"UserMessage","id":"u","content":[{"type":"text","text":"hello number ` + fmt.Sprint(i) + `"}]}}}`
			head = strings.ReplaceAll(codexHead, "01a23542-6502-7f33-80f4-cae31bfb0ab9", id) + user + "\n"
			tail = `{"type":"event_msg","payload":{"type":"task_complete"}}` + "\n"
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			b.Fatal(err)
		}
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		size := int64(len(head) + len(tail))
		if i%100 == 7 {
			size = 300 << 20
		}
		_, err = f.WriteString(head)
		if err == nil {
			_, err = f.WriteAt([]byte(tail), size-int64(len(tail)))
		}
		if cerr := f.Close(); err != nil || cerr != nil {
			b.Fatal(err, cerr)
		}
		if err := os.Chtimes(path, mod, mod); err != nil {
			b.Fatal(err)
		}
	}
	return history.Options{Stores: stores, Dirs: dirs(claudeDir, codexHome)}
}

// munge is the folder Claude Code keeps a working folder's sessions in
// under its projects/: every character that is not an ASCII letter or
// digit made "-".
func munge(dir string) string {
	b := []byte(dir)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b[i] = '-'
		}
	}
	return string(b)
}

// BenchmarkList: 1,000 sessions (ten of them 300 MB), the first page of
// 25 and the whole list; one folder's sessions.
func BenchmarkList(b *testing.B) {
	opts := benchStore(b, b.TempDir(), 1000)
	b.Run("first-page", func(b *testing.B) {
		for b.Loop() {
			p, err := history.ListPage(opts, "", 25)
			if err != nil || len(p.Entries) != 25 {
				b.Fatal(len(p.Entries), err)
			}
		}
	})
	b.Run("all", func(b *testing.B) {
		for b.Loop() {
			es, err := history.List(opts)
			if err != nil || len(es) != 1000 {
				b.Fatal(len(es), err)
			}
		}
	})
	b.Run("one-folder", func(b *testing.B) {
		o := opts
		o.Cwd = "/work/project4"
		for b.Loop() {
			es, err := history.List(o)
			if err != nil || len(es) != 100 {
				b.Fatal(len(es), err)
			}
		}
	})
}

// BenchmarkSessionListPage: what session/list reads for each page (every
// session of both stores, to merge with the packages it lists), over 100
// and 10,000 sessions, with the head cache warm (as from the second page
// on) and without it (every file's head and tail read again). The time per
// page grows with the files' count only by what it takes to list and stat
// them.
func BenchmarkSessionListPage(b *testing.B) {
	for _, n := range []int{100, 10000} {
		opts := benchStore(b, b.TempDir(), n)
		cached := opts
		cached.Cache = history.NewHeadCache(b.TempDir())
		if _, err := history.List(cached); err != nil {
			b.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			opts history.Options
		}{{"cached", cached}, {"uncached", opts}} {
			b.Run(fmt.Sprintf("%d/%s", n, tc.name), func(b *testing.B) {
				for b.Loop() {
					es, err := history.List(tc.opts)
					if err != nil || len(es) != n {
						b.Fatal(len(es), err)
					}
				}
			})
		}
		b.Run(fmt.Sprintf("%d/cached-one-folder", n), func(b *testing.B) {
			o := cached
			o.Cwd = "/work/project4"
			for b.Loop() {
				es, err := history.List(o)
				if err != nil || len(es) != n/10 {
					b.Fatal(len(es), err)
				}
			}
		})
	}
}

// codexThread is a rollout of one turn as codex 0.169.0 wrote it (44 KB,
// its session_meta most of it), the sessions of BenchmarkListCompressed.
const codexThread = "../codex/testdata/history/codex-files-0.169.0/paged/sessions/2026/12/03/rollout-2026-12-03T19-06-20-01a23d4c-e82a-7321-9539-8eefe3732dce.jsonl"

// codexStore builds a CODEX_HOME of n threads in dir, every second one
// compressed as codex's local_thread_store_compression leaves it
// (rollout-….jsonl.zst), each the recorded thread under its own id.
func codexStore(b testing.TB, dir string, n int) history.Options {
	b.Helper()
	data, err := os.ReadFile(codexThread)
	if err != nil {
		b.Fatal(err)
	}
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		b.Fatal(err)
	}
	defer enc.Close()
	for i := range n {
		id := fmt.Sprintf("01a23d4c-0000-7000-8000-%012d", i)
		content := []byte(strings.ReplaceAll(string(data), "01a23d4c-e82a-7321-9539-8eefe3732dce", id))
		content = []byte(strings.Replace(string(content), "Compress this one", fmt.Sprintf("Question number %d", i), 1))
		path := filepath.Join(dir, "sessions", "2026", "12", fmt.Sprintf("%02d", 1+i%28), "rollout-2026-12-01T10-00-00-"+id+".jsonl")
		if i%2 == 1 {
			path += ".zst"
			content = enc.EncodeAll(content, nil)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(path, content, 0o644); err != nil {
			b.Fatal(err)
		}
		mod := base.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(path, mod, mod); err != nil {
			b.Fatal(err)
		}
	}
	return history.Options{Stores: stores, Backend: "codex", Dirs: dirs("", dir)}
}

// BenchmarkListCompressed: a CODEX_HOME of 1,000 threads, half of them
// compressed: the first page of 25 (conversation list --cli), every
// thread read without the head cache (what session/list's first page
// reads) and with it (its next pages).
func BenchmarkListCompressed(b *testing.B) {
	opts := codexStore(b, b.TempDir(), 1000)
	b.Run("first-page", func(b *testing.B) {
		cpu := cpuTime()
		for b.Loop() {
			p, err := history.ListPage(opts, "", 25)
			if err != nil || len(p.Entries) != 25 || !strings.HasSuffix(p.Entries[0].Path, ".zst") {
				b.Fatal(len(p.Entries), err)
			}
		}
		b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N)/1e6, "cpu-ms/op")
	})
	b.Run("all-uncached", func(b *testing.B) {
		cpu := cpuTime()
		for b.Loop() {
			es, err := history.List(opts)
			if err != nil || len(es) != 1000 {
				b.Fatal(len(es), err)
			}
		}
		b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N)/1e6, "cpu-ms/op")
	})
	cached := opts
	cached.Cache = history.NewHeadCache(b.TempDir())
	if _, err := history.List(cached); err != nil {
		b.Fatal(err)
	}
	b.Run("all-cached", func(b *testing.B) {
		for b.Loop() {
			es, err := history.List(cached)
			if err != nil || len(es) != 1000 {
				b.Fatal(len(es), err)
			}
		}
	})
}
