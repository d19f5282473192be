package search

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"spbridge/internal/archive"
)

// The benchmarks search conversations they generate into a temporary
// folder: SPBRIDGE_SEARCH_BENCH=full makes 1,000 conversations of about 1
// MB each (1 GB, several minutes to generate on a 2-core machine); the
// default is 100 of about 256 KB (25 MB). SPBRIDGE_SEARCH_BENCH_DIR keeps
// them (and their index) in that folder, for runs after the first.
func benchShape() (n, size int) {
	if os.Getenv("SPBRIDGE_SEARCH_BENCH") == "full" {
		return 1000, 1 << 20
	}
	return 100, 256 << 10
}

// corpus is the generated conversations.
type corpus struct {
	dir    string
	common []string // the most frequent words, most first
	pkgs   []string
	bytes  int64
}

var (
	corpusOnce sync.Once
	theCorpus  *corpus
	corpusErr  error
)

func getCorpus(b *testing.B) *corpus {
	corpusOnce.Do(func() {
		n, size := benchShape()
		dir := os.Getenv("SPBRIDGE_SEARCH_BENCH_DIR")
		if dir == "" {
			dir, corpusErr = os.MkdirTemp("", "spbridge-search-bench-")
			if corpusErr != nil {
				return
			}
		}
		theCorpus, corpusErr = generate(dir, n, size)
	})
	if corpusErr != nil {
		b.Fatal(corpusErr)
	}
	return theCorpus
}

func TestMain(m *testing.M) {
	code := m.Run()
	if theCorpus != nil && os.Getenv("SPBRIDGE_SEARCH_BENCH_DIR") == "" {
		os.RemoveAll(theCorpus.dir)
	}
	os.Exit(code)
}

// vocabulary is the generator's words: made-up words of two to four
// syllables, drawn with a Zipf law as a language's are.
func vocabulary(r *rand.Rand, n int) []string {
	syl := []string{"ka", "lo", "mi", "ne", "ru", "ta", "se", "po", "vi", "da", "go", "he", "ju", "fa", "bre", "sto", "tri", "pla", "qua", "zen"}
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		var b strings.Builder
		for range 2 + r.IntN(3) {
			b.WriteString(syl[r.IntN(len(syl))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// generate writes n packages of about size bytes each under dir (or reads
// them back when dir already holds them): turns of a user's message, the
// assistant's thinking and answer, and tool calls with commands and their
// output, the history holding the model's side as spbridge saves it.
// Conversation i holds the word "mark<i>" once, in its middle.
func generate(dir string, n, size int) (*corpus, error) {
	c := &corpus{dir: dir}
	r := rand.New(rand.NewPCG(1, 2))
	words := vocabulary(r, 30000)
	c.common = words[:3]
	zipf := rand.NewZipf(r, 1.1, 2, uint64(len(words)-1))
	sentence := func(nw int) string {
		var b strings.Builder
		for i := range nw {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[zipf.Uint64()])
		}
		return b.String()
	}
	for i := range n {
		pkg := filepath.Join(dir, fmt.Sprintf("conv%04d.silverpoint", i))
		c.pkgs = append(c.pkgs, pkg)
		conv := filepath.Join(pkg, archive.AgentDir, archive.ConversationFile)
		if fi, err := os.Stat(conv); err == nil {
			c.bytes += fi.Size()
			continue
		}
		if err := os.MkdirAll(pkg, 0o700); err != nil {
			return nil, err
		}
		p, err := archive.Open(pkg, archive.KindDocument, true)
		if err != nil {
			return nil, err
		}
		approx, marked := 0, false
		for t := 0; approx < size; t++ {
			user := sentence(10 + r.IntN(40))
			if !marked && approx > size/2 {
				user += " mark" + strconv.Itoa(i)
				marked = true
			}
			think := sentence(80 + r.IntN(120))
			answer := sentence(150 + r.IntN(300))
			cmd := "go test ./" + words[zipf.Uint64()] + "/..."
			var out strings.Builder
			for range 20 + r.IntN(60) {
				out.WriteString(sentence(8 + r.IntN(8)))
				out.WriteByte('\n')
			}
			items := []archive.Item{archive.NewItem(archive.TypeUser), archive.NewItem(archive.TypeThinking),
				archive.NewItem(archive.TypeTool), archive.NewItem(archive.TypeAssistant)}
			items[0].Set("text", user)
			items[1].Set("text", think)
			items[2].Set("name", "Bash")
			items[2].Set("summary", cmd)
			items[2].Set("status", archive.StatusSucceeded)
			items[2].Set("statusText", "exit 0")
			detail := "arguments:\n{\"command\": \"" + cmd + "\"}\n\noutput:\n" + out.String()
			items[2].Set("detail", cut(detail, 16<<10))
			items[3].Set("text", answer)
			p.Conv.Items = append(p.Conv.Items, items...)
			callID := "call_" + strconv.Itoa(t)
			p.Conv.History = append(p.Conv.History,
				archive.Message{Role: "user", Content: []archive.Block{archive.NewTextBlock(user)}},
				archive.Message{Role: "assistant", Content: []archive.Block{archive.NewToolCallBlock(callID, "Bash", `{"command":"`+cmd+`"}`)}},
				archive.Message{Role: "tool", Content: []archive.Block{archive.NewToolResultBlock(callID, "Bash", out.String(), false)}},
				archive.Message{Role: "assistant", Content: []archive.Block{archive.NewTextBlock(answer)}})
			approx += 2*(len(user)+len(answer)+out.Len()) + len(think) + len(detail) + 600
		}
		if _, err := p.Save(true); err != nil {
			return nil, err
		}
		fi, err := os.Stat(conv)
		if err != nil {
			return nil, err
		}
		c.bytes += fi.Size()
	}
	return c, nil
}

// set lists the corpus's packages as a sessions index would.
func (c *corpus) set() Set {
	return Set{Kind: KindPackage, List: func() ([]Source, error) {
		out := make([]Source, len(c.pkgs))
		for i, p := range c.pkgs {
			out[i] = PackageSource(p, "/work", "conversation "+strconv.Itoa(i), time.Unix(int64(i), 0))
		}
		return out, nil
	}}
}

// state is the corpus's state folder, with the index built once.
func (c *corpus) state(b *testing.B) string {
	state := filepath.Join(c.dir, "state")
	if _, err := Find(context.Background(), state, Request{Sets: []Set{c.set()}}); err != nil {
		b.Fatal(err)
	}
	return state
}

// BenchmarkSearchBuild is the first build of the index over the corpus:
// every conversation read and indexed. index/conv is the index's size as a
// share of the conversations'.
func BenchmarkSearchBuild(b *testing.B) {
	c := getCorpus(b)
	var size int64
	cpu := cpuTime()
	for b.Loop() {
		state := b.TempDir()
		res, err := Find(context.Background(), state, Request{Sets: []Set{c.set()}})
		if err != nil {
			b.Fatal(err)
		}
		if st := res.Updates[0]; st.Indexed != len(c.pkgs) || st.Failed != 0 {
			b.Fatalf("build: %+v", st)
		}
		b.StopTimer()
		ix, err := Open(state)
		if err != nil {
			b.Fatal(err)
		}
		ix.db.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
		size = ix.Size()
		ix.Close()
		b.StartTimer()
	}
	b.ReportMetric((cpuTime()-cpu)*1e3/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(c.bytes)/1e6, "convMB")
	b.ReportMetric(float64(size)/1e6, "indexMB")
	b.ReportMetric(float64(size)/float64(c.bytes), "index/conv")
	b.ReportMetric(float64(c.bytes)/1e6/(b.Elapsed().Seconds()/float64(b.N)), "MB/s")
}

// BenchmarkSearchQuery is a search once the index is built, as `spbridge
// conversation search` runs one: the update that finds nothing changed
// (every package's files looked at), the query, and the snippets of the
// first 20 hits.
func BenchmarkSearchQuery(b *testing.B) {
	c := getCorpus(b)
	state := c.state(b)
	n := len(c.pkgs)
	for _, query := range []struct{ name, q string }{
		{"rare", "mark" + strconv.Itoa(n/2)},
		{"common", c.common[0]},
		{"two", c.common[1] + " mark" + strconv.Itoa(n/3)},
		{"commontwo", c.common[1] + " " + c.common[2]},
		{"phrase", `"go test"`},
		{"prefix", "mark1*"},
	} {
		b.Run(query.name, func(b *testing.B) {
			q, err := ParseQuery(query.q)
			if err != nil {
				b.Fatal(err)
			}
			hits := 0
			cpu := cpuTime()
			for b.Loop() {
				res, err := Find(context.Background(), state, Request{Query: q, Sets: []Set{c.set()}, Snippets: 20})
				if err != nil {
					b.Fatal(err)
				}
				if res.Updates[0].Indexed != 0 {
					b.Fatalf("a search with nothing changed indexed %+v", res.Updates[0])
				}
				hits = len(res.Hits)
			}
			b.ReportMetric(float64(hits), "hits")
			b.ReportMetric((cpuTime()-cpu)*1e3/float64(b.N), "cpu-ms/op")
		})
	}
}

// BenchmarkSearchUpdateOneTurn is a search after one new turn in one
// conversation: that conversation read and indexed again, then the
// query. The turn's save is not timed.
func BenchmarkSearchUpdateOneTurn(b *testing.B) {
	c := getCorpus(b)
	state := c.state(b)
	pkg := c.pkgs[len(c.pkgs)/2]
	i := 0
	var cpu float64
	for b.Loop() {
		b.StopTimer()
		i++
		word := "newturn" + strconv.Itoa(i)
		writePackage(b, pkg, turn{"and now " + word, "done with " + word})
		q, _ := ParseQuery(word)
		b.StartTimer()
		start := cpuTime()
		res, err := Find(context.Background(), state, Request{Query: q, Sets: []Set{c.set()}, Snippets: 20})
		if err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime() - start
		if res.Updates[0].Indexed != 1 || len(res.Hits) != 1 {
			b.Fatalf("after one turn: %+v, %d hits", res.Updates[0], len(res.Hits))
		}
	}
	b.ReportMetric(cpu*1e3/float64(b.N), "cpu-ms/op")
}
