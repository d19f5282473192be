package codex

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"spbridge/internal/archive"
	"spbridge/internal/history"
	"spbridge/internal/history/historytest"
	"spbridge/internal/restore"
)

// codexVersions are the Codex versions the thread files were recorded
// from (TestRecordCodexThreadFiles): the pinned one and the newest.
var codexVersions = []string{"0.169.0", "0.171.0"}

// filesHome is the CODEX_HOME of a recording of thread files: kind
// "paged" (as codex wrote them) or "compressed" (the same, after
// codex compressed every rollout).
func filesHome(version, kind string) string {
	return filepath.Join("testdata", "history", "codex-files-"+version, kind)
}

// sessionFiles are the rollouts under home, by their names.
func sessionFiles(t *testing.T, home string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(filepath.Join(home, "sessions"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out[d.Name()] = p
		}
		return nil
	})
	if len(out) == 0 {
		t.Fatalf("no rollouts under %s", home)
	}
	return out
}

// snapshot is each file's bytes and time under dir, to tell that nothing
// of a CLI's store was written.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		sum := ""
		if !d.IsDir() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h := sha256.Sum256(data)
			sum = string(h[:])
		}
		out[p] = fi.ModTime().String() + strconv.FormatInt(fi.Size(), 10) + sum
		return nil
	})
	return out
}

// TestImportGoldenThreadFiles: the recorded threads of both Codex
// versions, plain and compressed, import to their golden conversations:
// a reverted thread as it is now (its first turn, then its fourth: the
// two taken back are not there), whichever of its files is given.
func TestImportGoldenThreadFiles(t *testing.T) {
	var cases []historytest.Case
	for _, v := range codexVersions {
		for _, kind := range []string{"paged", "compressed"} {
			files := sessionFiles(t, filesHome(v, kind))
			names := slices.Sorted(func(yield func(string) bool) {
				for n := range files {
					if !yield(n) {
						return
					}
				}
			})
			for i, n := range names {
				cases = append(cases, historytest.Case{Name: "codex-files-" + v + "-" + kind + "-" + strconv.Itoa(i), Backend: "codex", Path: files[n]})
			}
		}
	}
	historytest.Golden(t, stores, cases, *update)
}

// TestThreadFiles: of each recording (both versions, plain and
// compressed), the listing shows each thread once, under its thread id,
// titled by its first message; the reverted thread imports as it is now
// (the first turn, then the fourth), with its usage; the legacy thread
// (one file) whole; and nothing of the store is written.
func TestThreadFiles(t *testing.T) {
	for _, v := range codexVersions {
		for _, kind := range []string{"paged", "compressed"} {
			t.Run(v+"/"+kind, func(t *testing.T) {
				home := filesHome(v, kind)
				before := snapshot(t, home)
				es, err := history.List(history.Options{Stores: stores, Backend: "codex", Dirs: dirs("", home)})
				if err != nil {
					t.Fatal(err)
				}
				titles := map[string]string{}
				ids := map[string]bool{}
				for _, e := range es {
					if ids[e.ID] {
						t.Errorf("thread %s listed twice", e.ID)
					}
					ids[e.ID] = true
					titles[e.Title] = e.Path
					if kind == "compressed" && !strings.HasSuffix(e.Path, ".jsonl.zst") {
						t.Errorf("%s is not the compressed file", e.Path)
					}
				}
				if len(es) != 3 || titles["First question"] == "" || titles["Compress this one"] == "" || titles["Legacy one"] == "" {
					t.Fatalf("listed\n%s", historytest.Describe(es))
				}
				conv, rep := historytest.Import(t, stores, "", titles["First question"])
				got := strings.Join(historytest.Kinds(conv), "\n")
				want := "user First question\nassistant First answer.\nuser Fourth question\nassistant Fourth answer, after the reverts."
				if got != want || rep.Turns != 2 || len(conv.History) != 4 || len(rep.Notices) != 0 {
					t.Errorf("reverted thread: items\n%s\nwant\n%s\nreport %+v", got, want, rep)
				}
				if conv.Usage.Output == "" || conv.Usage.Output == "0" {
					t.Errorf("usage %+v", conv.Usage)
				}
				conv, _ = historytest.Import(t, stores, "", titles["Legacy one"])
				got = strings.Join(historytest.Kinds(conv), "\n")
				want = "user Legacy one\nassistant Legacy answer one.\nuser Legacy two\nassistant Legacy answer two.\nuser Legacy three\nassistant Legacy answer three."
				if got != want {
					t.Errorf("legacy thread: items\n%s\nwant\n%s", got, want)
				}
				// Find gives the thread's newest file too.
				e, err := history.Find(history.Options{Stores: stores, Backend: "codex", Dirs: dirs("", home)}, es[len(es)-1].ID)
				if err != nil || e.Path != es[len(es)-1].Path {
					t.Errorf("find: %v %v", e, err)
				}
				if after := snapshot(t, home); !maps.Equal(before, after) {
					t.Error("the store changed while it was listed and imported")
				}
			})
		}
	}
}

// copyHome copies a recording's CODEX_HOME into a new folder, leaving out
// the files drop names, and returns it.
func copyHome(t *testing.T, home string, drop func(name string) bool) string {
	t.Helper()
	dst := t.TempDir()
	filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || drop(d.Name()) {
			return err
		}
		rel, _ := filepath.Rel(home, p)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		historytest.Write(t, dst, rel, string(data))
		return nil
	})
	return dst
}

// revertedFiles are the reverted thread's files of a recording, oldest
// first (the first file, then its two pages).
func revertedFiles(t *testing.T, home string) []string {
	t.Helper()
	var out []string
	for n, p := range sessionFiles(t, home) {
		if strings.Contains(n, "_") {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	th, _, _ := rolloutName(out[0])
	for _, p := range sessionFiles(t, home) {
		if id, r, _ := rolloutName(p); id == th && r == th {
			out = append([]string{p}, out...)
		}
	}
	if len(out) != 3 {
		t.Fatalf("reverted thread's files %q", out)
	}
	return out
}

// TestThreadFilesMissing: a thread whose earlier files are missing, or
// whose newest file's mark points past its base's end or at a rollout
// there is none of, imports as far as it reads, with a notice that says
// what is missing; the store is not written.
func TestThreadFilesMissing(t *testing.T) {
	for _, kind := range []string{"paged", "compressed"} {
		t.Run(kind, func(t *testing.T) {
			home := filesHome(codexVersions[0], kind)
			files := revertedFiles(t, home)
			first, page1, page2 := filepath.Base(files[0]), filepath.Base(files[1]), filepath.Base(files[2])

			// The first page missing: the newest imports alone.
			h := copyHome(t, home, func(n string) bool { return n == page1 })
			before := snapshot(t, h)
			es, err := history.List(history.Options{Stores: stores, Backend: "codex", Dirs: dirs("", h)})
			if err != nil || len(es) != 3 {
				t.Fatalf("%s %v", historytest.Describe(es), err)
			}
			p := filepath.Join(filepath.Dir(filepath.Join(h, strings.TrimPrefix(files[2], home))), page2)
			conv, rep := historytest.Import(t, stores, "codex", p)
			got := strings.Join(historytest.Kinds(conv), "\n")
			if !strings.HasPrefix(got, "user Fourth question\nassistant Fourth answer, after the reverts.\nnotice The start of this Codex thread") ||
				len(rep.Notices) != 1 || !strings.Contains(rep.Notices[0], "was not found") {
				t.Errorf("items\n%s\n%+v", got, rep)
			}
			if after := snapshot(t, h); !maps.Equal(before, after) {
				t.Error("the store changed")
			}

			// The first file cut short of what the first page's mark
			// says: read to its end, and said.
			h = copyHome(t, home, func(string) bool { return false })
			in := filepath.Join(h, strings.TrimPrefix(filepath.Dir(files[0]), home))
			data := readPlain(t, files[0])
			cut := data[:bytes.LastIndexByte(data[:len(data)/2], '\n')+1]
			writeLike(t, filepath.Join(in, first), cut)
			conv, rep = historytest.Import(t, stores, "codex", filepath.Join(in, page2))
			got = strings.Join(historytest.Kinds(conv), "\n")
			if len(rep.Notices) != 1 || !strings.Contains(rep.Notices[0], "points at byte") || !strings.Contains(got, "user Fourth question") {
				t.Errorf("cut base: items\n%s\n%+v", got, rep)
			}
		})
	}
}

// readPlain is a rollout's content, decompressed when it is compressed.
func readPlain(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !history.Compressed(path) {
		return data
	}
	d, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	out, err := d.DecodeAll(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// writeLike writes data to path, compressed when path is a compressed
// rollout's.
func writeLike(t *testing.T, path string, data []byte) {
	t.Helper()
	if history.Compressed(path) {
		e, err := zstd.NewWriter(nil)
		if err != nil {
			t.Fatal(err)
		}
		data = e.EncodeAll(data, nil)
		e.Close()
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestThreadFilesBadMark: a newest file whose mark names a rollout there
// is none of imports alone, with a notice; a mark that makes a circle is
// read once.
func TestThreadFilesBadMark(t *testing.T) {
	home := filesHome(codexVersions[0], "paged")
	files := revertedFiles(t, home)
	data := readPlain(t, files[2])
	nl := bytes.IndexByte(data, '\n')
	head := string(data[:nl])
	_, r1, _ := rolloutName(files[1])
	_, r2, _ := rolloutName(files[2])
	dir := filepath.Join(t.TempDir(), "sessions", "2026", "12", "03")
	// A mark pointing at nothing.
	nothing := historytest.Write(t, dir, filepath.Base(files[2]), strings.Replace(head, r1, "01a23d4c-0000-7000-8000-000000000000", 1)+string(data[nl:]))
	conv, rep := historytest.Import(t, stores, "codex", nothing)
	if got := strings.Join(historytest.Kinds(conv), "\n"); !strings.HasPrefix(got, "user Fourth question\n") || len(rep.Notices) != 1 {
		t.Errorf("items\n%s\n%+v", got, rep)
	}
	// A mark pointing at itself.
	self := historytest.Write(t, dir, filepath.Base(files[2]), strings.Replace(head, r1, r2, 1)+string(data[nl:]))
	conv, rep = historytest.Import(t, stores, "codex", self)
	if got := strings.Join(historytest.Kinds(conv), "\n"); !strings.HasPrefix(got, "user Fourth question\n") || len(rep.Notices) != 1 || !strings.Contains(rep.Notices[0], "circle") {
		t.Errorf("items\n%s\n%+v", got, rep)
	}
}

// TestThreadRolledBack: a legacy rollout's thread_rolled_back mark drops
// the turns it takes back (the recorded legacy thread, with the mark
// codex's legacy rollback writes after its second turn), and a mark
// taking back more turns than there are drops them all.
func TestThreadRolledBack(t *testing.T) {
	for n, p := range sessionFiles(t, filesHome(codexVersions[0], "paged")) {
		if data := readPlain(t, p); bytes.Contains(data, []byte("Legacy one")) {
			lines := strings.SplitAfter(string(data), "\n")
			// The mark goes before the third turn's task_started.
			starts := 0
			var out []string
			for _, l := range lines {
				if strings.Contains(l, `"type":"task_started"`) {
					if starts++; starts == 3 {
						out = append(out, `{"timestamp":"2026-12-03T19:06:21.000Z","type":"event_msg","payload":{"type":"thread_rolled_back","num_turns":1}}`+"\n")
					}
				}
				out = append(out, l)
			}
			dir := t.TempDir()
			path := historytest.Write(t, dir, n, strings.Join(out, ""))
			conv, rep := historytest.Import(t, stores, "", path)
			got := strings.Join(historytest.Kinds(conv), "\n")
			want := "user Legacy one\nassistant Legacy answer one.\nuser Legacy three\nassistant Legacy answer three."
			if got != want || rep.Turns != 2 || len(conv.History) != 4 || rep.Skipped != 0 {
				t.Errorf("items\n%s\nwant\n%s\n%+v", got, want, rep)
			}
			all := strings.Replace(strings.Join(out, ""), `"num_turns":1`, `"num_turns":9`, 1)
			conv, rep = historytest.Import(t, stores, "", historytest.Write(t, dir, "all-"+n, all))
			if got := strings.Join(historytest.Kinds(conv), "\n"); got != "user Legacy three\nassistant Legacy answer three." || rep.Turns != 1 {
				t.Errorf("all taken back: items\n%s", got)
			}
			return
		}
	}
	t.Fatal("no legacy thread recorded")
}

// TestCompressedBad: a compressed rollout cut short or corrupt is not
// imported, with an error that says so, and is listed only when its head
// reads; nothing crashes.
func TestCompressedBad(t *testing.T) {
	home := filesHome(codexVersions[0], "compressed")
	var one string
	for n, p := range sessionFiles(t, home) {
		if !strings.Contains(n, "_") && bytes.Contains(readPlain(t, p), []byte("Compress this one")) {
			one = p
		}
	}
	data, err := os.ReadFile(one)
	if err != nil {
		t.Fatal(err)
	}
	h := t.TempDir()
	dir := filepath.Join(h, "sessions", "2026", "12", "03")
	cut := historytest.Write(t, dir, filepath.Base(one), string(data[:len(data)*2/3]))
	_, _, err = history.ImportFile("codex", cut, history.ImportOptions{Stores: stores})
	var ce *history.CorruptError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "cut short or corrupt") {
		t.Errorf("cut short: %v", err)
	}
	corrupt := bytes.Clone(data)
	for i := 20; i < len(corrupt); i += 7 {
		corrupt[i] ^= 0x5a
	}
	historytest.Write(t, dir, filepath.Base(one), string(corrupt))
	if _, _, err = history.ImportFile("", cut, history.ImportOptions{Stores: stores}); err == nil {
		t.Error("a corrupt file imported")
	}
	es, err := history.List(history.Options{Stores: stores, Backend: "codex", Dirs: dirs("", h)})
	if err != nil || len(es) != 0 {
		t.Errorf("corrupt file listed: %s %v", historytest.Describe(es), err)
	}
}

// FuzzRolloutName: any file name gives a thread and rollout id of 36
// characters each, or none.
func FuzzRolloutName(f *testing.F) {
	f.Add("rollout-2026-12-03T19-06-19-01a23d4c-e081-7611-844a-aa975d0599a5_01a23d4c-e6fb-7091-99ec-c3efd7887ec3.jsonl.zst")
	f.Add("rollout-2026-12-03T19-06-19-01a23d4c-e081-7611-844a-aa975d0599a5.jsonl")
	f.Add("rollout-_-.jsonl")
	f.Fuzz(func(t *testing.T, name string) {
		th, r, ok := rolloutName(name)
		if ok && (len(th) != 36 || len(r) != 36) {
			t.Errorf("%q: %q %q", name, th, r)
		}
	})
}

// FuzzThreadSource: a newest file whose first line names any base, and
// bases of any bytes, compressed or not, import or fail with an error;
// nothing panics.
func FuzzThreadSource(f *testing.F) {
	f.Add([]byte(`{"type":"session_meta","payload":{"id":"01a23d4c-e081-7611-844a-aa975d0599a5","history_base":{"thread_id":"01a23d4c-e081-7611-844a-aa975d0599a5","end_byte_offset":10}}}`), []byte("{}\n{\n"), false)
	f.Add([]byte(`{"type":"session_meta","payload":{"history_base":{"thread_id":"01a23d4c-e081-7611-844a-aa975d0599a5","end_byte_offset":-1}}}`), []byte{0x28, 0xb5, 0x2f, 0xfd, 0, 0}, true)
	f.Fuzz(func(t *testing.T, head, base []byte, compressed bool) {
		dir := filepath.Join(t.TempDir(), "sessions", "2026", "12", "03")
		ext := ".jsonl"
		if compressed {
			ext += ".zst"
		}
		historytest.Write(t, dir, "rollout-2026-12-03T19-06-18-01a23d4c-e081-7611-844a-aa975d0599a5"+ext, string(base))
		p := historytest.Write(t, dir, "rollout-2026-12-03T19-06-19-01a23d4c-e081-7611-844a-aa975d0599a5_01a23d4c-e6fb-7091-99ec-c3efd7887ec3.jsonl",
			string(head)+"\n"+codexLines(codexStarted, codexUser("hi")))
		history.ImportFile("codex", p, history.ImportOptions{Stores: stores})
		History.Summarize(history.File{Path: p})
	})
}

// TestRestoredThreadWords: a thread spbridge began after a reopen (its
// first message the restore prefix, then the user's words) is listed and
// imported by the user's words alone, in its item and its history
// message.
func TestRestoredThreadWords(t *testing.T) {
	home := t.TempDir()
	prefix := restore.Prefix([]archive.Item{archive.ItemFromMap(map[string]any{"id": "u", "type": "user", "text": "earlier\n\nwords"})}, nil)
	text, _ := json.Marshal(prefix + "my own\n\nwords")
	user := `{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"UserMessage","id":"u","content":[{"type":"text","text":` + string(text) + `}]}}}`
	historytest.Write(t, filepath.Join(home, "sessions", "2026", "12", "01"), "rollout-2026-12-01T10-00-00-01a23542-0000-7000-8000-000000000001.jsonl",
		codexLines(codexMeta, codexStarted, user, `{"type":"event_msg","payload":{"type":"task_complete"}}`))
	es, err := history.List(history.Options{Stores: stores, Backend: "codex", Dirs: dirs("", home)})
	if err != nil || len(es) != 1 || es[0].Title != "my own words" {
		t.Fatalf("%s %v", historytest.Describe(es), err)
	}
	conv, _ := historytest.Import(t, stores, "codex", es[0].Path)
	if conv.Items[0].String("text") != "my own\n\nwords" || conv.History[0].Content[0].String("text") != "my own\n\nwords" {
		t.Errorf("item %q history %q", conv.Items[0].String("text"), conv.History[0].Content[0].String("text"))
	}
}

// TestExecFork: a thread forked with codex exec fork (recorded: its first
// file continues its parent's, history_base) is listed under its own id
// and imports with the turn it inherited, then its own; the parent is
// listed as it was.
func TestExecFork(t *testing.T) {
	home := filepath.Join("testdata", "history", "codex-fork-"+codexVersions[0])
	es, err := history.List(history.Options{Stores: stores, Backend: "codex", Dirs: dirs("", home)})
	if err != nil || len(es) != 2 || es[0].ID == es[1].ID {
		t.Fatalf("%s %v", historytest.Describe(es), err)
	}
	for _, e := range es {
		conv, rep := historytest.Import(t, stores, "codex", e.Path)
		got := strings.Join(historytest.Kinds(conv), "\n")
		want := "user The parent's question\nassistant The parent's answer."
		if e.Title == "The parent's question" && strings.Contains(e.Path, "7beb") {
			want += "\nuser The fork's question\nassistant The fork's answer."
		}
		if got != want || rep.ID != e.ID || len(rep.Notices) != 0 {
			t.Errorf("%s: items\n%s\nwant\n%s\n%+v", e.ID, got, want, rep)
		}
	}
}
