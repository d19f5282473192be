//go:build linux

package cliproc

import (
	"bytes"
	"errors"
	"testing"
)

// TestSendToProgramNotReading: a write the program never reads does not hold
// the caller, and Close ends it (and the writes queued after it) and the
// program.
func TestSendToProgramNotReading(t *testing.T) {
	p := start(t, helperConfig("hang"))
	recvLine(t, p) // ready
	big := p.Send(bytes.Repeat([]byte("x"), 1<<20))
	after := p.Send([]byte("after\n"))
	select {
	case err := <-big:
		t.Fatalf("a 1 MB write nobody reads ended: %v", err)
	default:
	}
	p.Close(0)
	if err := <-big; !errors.Is(err, ErrStdinClosed) {
		t.Errorf("the stuck write = %v, want ErrStdinClosed", err)
	}
	if err := <-after; !errors.Is(err, ErrStdinClosed) {
		t.Errorf("the write queued after it = %v, want ErrStdinClosed", err)
	}
	checkNothingLeft(t, p.Pid())
}

// TestSendOrder: sends are written in order, whole, and Write waits for
// the sends before it.
func TestSendOrder(t *testing.T) {
	p := start(t, helperConfig("echo"))
	echoed := make(chan []Line)
	go func() { echoed <- collect(t, p) }() // the echo must not fill its stdout
	var want bytes.Buffer
	var results []<-chan error
	for i := range 200 {
		line := bytes.Repeat([]byte{byte('a' + i%26)}, 1000+i*37)
		line = append(line, '\n')
		want.Write(line)
		results = append(results, p.Send(line))
	}
	if err := p.Write([]byte("end\n")); err != nil {
		t.Fatal(err)
	}
	want.WriteString("end\n")
	for i, r := range results {
		select {
		case err := <-r:
			if err != nil {
				t.Fatalf("send %d: %v", i, err)
			}
		default:
			t.Fatalf("send %d not done after a later Write returned", i)
		}
	}
	p.CloseStdin()
	var got bytes.Buffer
	for _, l := range <-echoed {
		got.Write(l.Data)
		got.WriteByte('\n')
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Errorf("echoed %d bytes, want %d, in order", got.Len(), want.Len())
	}
}
