package cliproc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
)

func readAll(r io.Reader, bufSize, maxLine int) ([]string, error) {
	var out []string
	err := readLines(bufio.NewReaderSize(r, bufSize), maxLine, func(l Line) bool {
		switch {
		case l.Oversize > 0:
			out = append(out, fmt.Sprintf("<oversize %d>", l.Oversize))
		case l.Data == nil:
			out = append(out, "<nil>")
		default:
			out = append(out, string(l.Data))
		}
		return true
	})
	return out, err
}

func TestReadLines(t *testing.T) {
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
		{strings.Repeat("z", 1000) + "\nok", 10, []string{"<oversize 1000>", "ok"}},
	} {
		for name, r := range map[string]func(string) io.Reader{
			"whole":   func(s string) io.Reader { return strings.NewReader(s) },
			"onebyte": func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
			"half":    func(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) },
			"dataerr": func(s string) io.Reader { return iotest.DataErrReader(strings.NewReader(s)) },
		} {
			got, err := readAll(r(tc.in), 16, tc.maxLine)
			if err != nil || !equal(got, tc.want) {
				t.Errorf("readLines(%s %.30q, max %d) = %q, %v, want %q", name, tc.in, tc.maxLine, got, err, tc.want)
			}
		}
	}
}

func equal(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || strings.Join(a, "\x00") == strings.Join(b, "\x00"))
}

func TestReadLinesError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("a\npart"), iotest.ErrReader(boom))
	got, err := readAll(r, 16, 10)
	if err != boom || !equal(got, []string{"a", "part"}) {
		t.Errorf("readLines = %q, %v, want [a part], boom", got, err)
	}
}

func TestReadLinesStop(t *testing.T) {
	n := 0
	err := readLines(bufio.NewReader(strings.NewReader("a\nb\nc\n")), 10, func(Line) bool {
		n++
		return n < 2
	})
	if err != nil || n != 2 {
		t.Errorf("readLines stopped after %d lines with %v, want 2, nil", n, err)
	}
}

// repeatReader yields n copies of c.
type repeatReader struct {
	c byte
	n int64
}

func (r *repeatReader) Read(b []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	k := int(min(int64(len(b)), r.n))
	if k > 0 {
		b[0] = r.c
		for filled := 1; filled < k; filled *= 2 {
			copy(b[filled:k], b[:filled])
		}
	}
	r.n -= int64(k)
	return k, nil
}

// TestReadLinesOversizeMemory: a 256 MiB line over a 1 MiB cap is skipped
// without being held.
func TestReadLinesOversizeMemory(t *testing.T) {
	const size = 256 << 20
	r := io.MultiReader(&repeatReader{'x', size}, strings.NewReader("\nok\n"))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, err := readAll(r, readBufSize, 1<<20)
	runtime.ReadMemStats(&after)
	want := []string{fmt.Sprintf("<oversize %d>", size), "ok"}
	if err != nil || !equal(got, want) {
		t.Errorf("readLines = %q, %v, want %q", got, err, want)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Errorf("skipping a %d-byte line allocated %d bytes", size, alloc)
	}
}

func TestTailBuffer(t *testing.T) {
	for _, keep := range []int{1, 7, 64} {
		tb := newTailBuffer(keep)
		var all bytes.Buffer
		for i, n := range []int{0, 3, 1, 10, 64, 65, 2, 200, 5, 6, 7} {
			chunk := bytes.Repeat([]byte{byte('a' + i)}, n)
			for j := range chunk {
				chunk[j] += byte(j % 3)
			}
			tb.write(chunk)
			all.Write(chunk)
			want := all.Bytes()[max(0, all.Len()-keep):]
			if got := tb.bytes(); !bytes.Equal(got, want) {
				t.Fatalf("keep %d, after %d writes: bytes() = %q, want %q", keep, i+1, got, want)
			}
		}
	}
}
