package cliproc

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
)

// readAllBatches reads r as a Proc reads stdout, with batches of bufSize
// bytes, and returns each line as readAll does and the number of batches.
func readAllBatches(r io.Reader, bufSize, maxLine int) ([]string, int, error) {
	var out []string
	batches := 0
	err := readBatches(r, maxLine, func(bool) *batch { return &batch{buf: make([]byte, 0, bufSize)} }, func(b *batch) bool {
		batches++
		for _, l := range b.lines {
			switch {
			case l.Oversize > 0:
				out = append(out, fmt.Sprintf("<oversize %d>", l.Oversize))
			case l.Data == nil:
				out = append(out, "<nil>")
			default:
				out = append(out, string(l.Data))
			}
		}
		// The receiver is done with the batch: its buffer may be overwritten.
		for i := range b.buf {
			b.buf[i] = '#'
		}
		return true
	})
	return out, batches, err
}

func TestReadBatches(t *testing.T) {
	long := strings.Repeat("abcdefghij", 10) // 100 bytes, beyond the 16-byte buffer
	for _, tc := range []struct {
		in      string
		maxLine int
		want    []string
	}{
		{"", 10, nil},
		{"a", 10, []string{"a"}},
		{"a\n", 10, []string{"a"}},
		{"a\nb", 10, []string{"a", "b"}},
		{"\n\n", 10, []string{"", ""}},
		{"a\r\nb\r\n\r", 10, []string{"a\r", "b\r", "\r"}},
		{"12345\n123456\nok\n", 5, []string{"12345", "<oversize 6>", "ok"}},
		{"1234567", 5, []string{"<oversize 7>"}},
		{long + "\n" + long, 100, []string{long, long}},
		{long + "\n" + long + "x\nend", 100, []string{long, "<oversize 101>", "end"}},
		{strings.Repeat("y", 16) + "\n", 100, []string{strings.Repeat("y", 16)}},
		{strings.Repeat("y", 15) + "\n" + strings.Repeat("w", 17) + "\n", 100, []string{strings.Repeat("y", 15), strings.Repeat("w", 17)}},
		{strings.Repeat("z", 1000) + "\nok", 10, []string{"<oversize 1000>", "ok"}},
	} {
		for name, r := range map[string]func(string) io.Reader{
			"whole":   func(s string) io.Reader { return strings.NewReader(s) },
			"onebyte": func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
			"half":    func(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) },
			"dataerr": func(s string) io.Reader { return iotest.DataErrReader(strings.NewReader(s)) },
		} {
			got, _, err := readAllBatches(r(tc.in), 16, tc.maxLine)
			if err != nil || !equal(got, tc.want) {
				t.Errorf("readBatches(%s %.30q, max %d) = %q, %v, want %q", name, tc.in, tc.maxLine, got, err, tc.want)
			}
		}
	}
}

// TestReadBatchesTogether: the lines one read brings come in one batch.
func TestReadBatchesTogether(t *testing.T) {
	got, batches, err := readAllBatches(strings.NewReader("a\nb\nc\nd"), 64, 10)
	if err != nil || !equal(got, []string{"a", "b", "c", "d"}) || batches != 2 {
		t.Errorf("readBatches = %q in %d batches, %v; want [a b c d] in 2", got, batches, err)
	}
}

func TestReadBatchesError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("a\npart"), iotest.ErrReader(boom))
	got, _, err := readAllBatches(r, 16, 10)
	if err != boom || !equal(got, []string{"a", "part"}) {
		t.Errorf("readBatches = %q, %v, want [a part], boom", got, err)
	}
}

// TestReadBatchesOversizeMemory: a 256 MiB line over a 1 MiB cap is
// skipped without being held.
func TestReadBatchesOversizeMemory(t *testing.T) {
	const size = 256 << 20
	r := io.MultiReader(&repeatReader{'x', size}, strings.NewReader("\nok\n"))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, _, err := readAllBatches(r, batchSize, 1<<20)
	runtime.ReadMemStats(&after)
	want := []string{fmt.Sprintf("<oversize %d>", size), "ok"}
	if err != nil || !equal(got, want) {
		t.Errorf("readBatches = %q, %v, want %q", got, err, want)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Errorf("skipping a %d-byte line allocated %d bytes", size, alloc)
	}
}

// lineChans holds the channel lineCh made for each Proc.
var lineChans sync.Map // *Proc → chan Line

// lineCh returns a channel that receives a copy of each line of p, taken
// with Ready and Next, and is closed when Ready is.
func lineCh(p *Proc) <-chan Line {
	if ch, ok := lineChans.Load(p); ok {
		return ch.(chan Line)
	}
	ch := make(chan Line)
	if prev, loaded := lineChans.LoadOrStore(p, ch); loaded {
		return prev.(chan Line)
	}
	go func() {
		defer close(ch)
		for {
			_, open := <-p.Ready()
			for l, ok := p.Next(); ok; l, ok = p.Next() {
				if l.Data != nil {
					l.Data = append([]byte{}, l.Data...)
				}
				ch <- l
			}
			if !open {
				return
			}
		}
	}()
	return ch
}
