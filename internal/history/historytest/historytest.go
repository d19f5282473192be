// Package historytest helps test the stores of past sessions (a CLI's
// history.Store) and the generic wing that lists and imports them: the
// golden import of recorded session files, the way a test reads a
// conversation or a listing, and Lines, the store of a CLI package
// history knows nothing of. Only tests import it.
package historytest

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"spbridge/internal/archive"
	"spbridge/internal/history"
	"spbridge/internal/itemmap"
)

// Import imports the session file at path as backend's ("" tells it by
// its content among stores), its items numbered in order; a failure ends
// the test.
func Import(t testing.TB, stores []history.Store, backend, path string) (*archive.Conversation, *history.Report) {
	t.Helper()
	conv, rep, err := history.ImportFile(backend, path, history.ImportOptions{Stores: stores, NewID: itemmap.SequentialIDs()})
	if err != nil {
		t.Fatal(err)
	}
	return conv, rep
}

// Case is a recorded session file and the golden conversation its import
// gives.
type Case struct {
	Name    string // the golden file's: testdata/history/golden/NAME.json
	Backend string // the CLI that wrote the file
	Path    string
}

// Golden checks that each recorded session imports to its golden
// conversation.json (testdata/history/golden/NAME.json), byte for byte in
// format 1's canonical encoding, that the CLI told by its content among
// stores is the one that wrote it, that no line was skipped, and that
// what was imported reads back as format 1. With update it writes the
// golden files first.
func Golden(t *testing.T, stores []history.Store, cases []Case, update bool) {
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			conv, rep := Import(t, stores, "", tc.Path)
			if rep.Backend != tc.Backend || rep.Skipped != 0 || rep.Partial {
				t.Errorf("report %+v", rep)
			}
			got, err := conv.Encode()
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "history", "golden", tc.Name+".json")
			if update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the import (run with -update to see how)", golden)
			}
			// What was imported reads back as format 1.
			back, err := archive.Decode(got)
			if err != nil || len(back.Items) != len(conv.Items) {
				t.Errorf("decode: %v", err)
			}
		})
	}
}

// Kinds lists items as "type name status text", one a string.
func Kinds(c *archive.Conversation) []string {
	var out []string
	for _, it := range c.Items {
		s := it.Type()
		if n := it.String("name"); n != "" {
			s += " " + n + " " + it.String("status")
		}
		if tx := it.String("text"); tx != "" {
			s += " " + tx
		}
		out = append(out, s)
	}
	return out
}

// Describe lists entries as "backend id cwd title HH:MM", one a line.
func Describe(es []history.Entry) string {
	var s []string
	for _, e := range es {
		s = append(s, e.Backend+" "+e.ID+" "+e.Cwd+" "+e.Title+" "+e.UpdatedAt.UTC().Format("15:04"))
	}
	return strings.Join(s, "\n")
}

// Write writes a file under dir (made with its folders) and returns its
// path.
func Write(t testing.TB, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Run runs a CLI as a recording does: name with args in dir, with env
// and stdin; it returns what it wrote, and a failure ends the test.
func Run(t testing.TB, dir string, env []string, stdin string, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %q: %v\nstdout:\n%s\nstderr:\n%s", name, args, err, out, stderr.String())
	}
	return out
}

// Keep copies the session files a recording made (those under from
// matching the glob pattern) into testdata/history/dst (a folder, made
// anew), with the recording's throwaway paths replaced by repl, and
// returns their paths.
func Keep(t testing.TB, from, pattern, dst string, repl *strings.Replacer) []string {
	t.Helper()
	var names []string
	if err := os.RemoveAll(filepath.Join("testdata", "history", dst)); err != nil {
		t.Fatal(err)
	}
	err := filepath.Walk(from, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if ok, _ := filepath.Match(pattern, filepath.Base(p)); !ok {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out := filepath.Join("testdata", "history", dst, repl.Replace(rel))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		names = append(names, out)
		return os.WriteFile(out, []byte(repl.Replace(string(data))), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// Lines is the store of a CLI package history knows nothing of: its
// sessions are DIR/<id>.log, a first line {"log":ID,"cwd":FOLDER} and then
// one line {"say":TEXT} a message of the user's; DIR/titles.json names
// some.
type Lines struct{}

func (Lines) Name() string            { return "lines" }
func (Lines) Display() string         { return "Lines" }
func (Lines) Dir() string             { return "" }
func (Lines) Where(dir string) string { return dir }
func (Lines) Files(dir, _ string) []history.File {
	return history.RegularFiles(dir, func(name string) bool { return strings.HasSuffix(name, ".log") })
}
func (Lines) FileID(path string) string { return strings.TrimSuffix(filepath.Base(path), ".log") }
func (Lines) Sniff(v gjson.Result) bool { return v.Get("log").Exists() }
func (Lines) TitleIndex(dir string) string {
	return filepath.Join(dir, "titles.json")
}
func (Lines) ReadTitles(path string) map[string]string {
	m := map[string]string{}
	if data, err := os.ReadFile(path); err == nil {
		json.Unmarshal(data, &m)
	}
	return m
}

func (s Lines) Summarize(f history.File) (history.Entry, bool) {
	r, size, err := history.OpenRegular(f.Path)
	if err != nil {
		return history.Entry{}, false
	}
	defer r.Close()
	e := history.Entry{Backend: s.Name(), ID: s.FileID(f.Path), Path: f.Path, UpdatedAt: f.Mod, Size: size}
	history.HeadLines(r, size, func(line []byte) bool {
		v, ok := history.Object(line)
		if ok && v.Get("cwd").Exists() {
			e.Cwd = v.Get("cwd").String()
		}
		if ok && v.Get("say").String() != "" {
			e.Title = history.CutTitle(v.Get("say").String())
			return false
		}
		return true
	})
	return e, e.Title != ""
}

func (Lines) NewImporter(newID itemmap.IDFunc, rep *history.Report) history.Importer {
	return &linesImport{newID: newID, rep: rep, conv: &archive.Conversation{}}
}

type linesImport struct {
	newID itemmap.IDFunc
	rep   *history.Report
	conv  *archive.Conversation
	turn  history.Turn
}

func (li *linesImport) Line(line []byte) bool {
	v, ok := history.Object(line)
	switch {
	case !ok:
		return false
	case v.Get("log").Exists():
		li.rep.ID, li.rep.Cwd = v.Get("log").String(), v.Get("cwd").String()
		return true
	case v.Get("say").String() != "":
		text := v.Get("say").String()
		li.rep.Turns++
		li.turn = history.Turn{User: &archive.Message{Role: "user", Content: []archive.Block{archive.NewTextBlock(text)}}, First: len(li.conv.Items), Model: "line-model", Active: true}
		it := archive.ItemFromMap(map[string]any{"id": li.newID(), "type": archive.TypeUser, "text": text})
		history.ApplyResult(li.conv, itemmap.Result{Changes: []itemmap.Change{{Op: itemmap.OpAdd, Item: it}}})
		history.EndTurn(li.conv, &li.turn, &itemmap.TurnEnd{Status: itemmap.TurnCompleted}, "line-provider")
		return true
	}
	return false
}

func (li *linesImport) Finish() *archive.Conversation { return li.conv }
