package worker

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"testing"
)

// gate is an io.Writer whose first Write waits until release is closed.
type gate struct {
	mu      sync.Mutex
	b       bytes.Buffer
	writes  int
	entered chan struct{}
	release chan struct{}
	err     error // returned by every Write after the first
}

func (g *gate) Write(p []byte) (int, error) {
	g.mu.Lock()
	g.writes++
	first := g.writes == 1
	g.mu.Unlock()
	if first {
		close(g.entered)
		<-g.release
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !first && g.err != nil {
		return 0, g.err
	}
	return g.b.Write(p)
}

// queuedFrames is how many frames w has taken so far.
func queuedFrames(w *writer) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.queued
}

// waitQueued waits until w has taken n frames.
func waitQueued(t *testing.T, w *writer, n uint64) {
	t.Helper()
	for queuedFrames(w) < n {
		runtime.Gosched()
	}
}

// Frames sent while a write is under way go out together in one more write, each
// sender returning once its frames are out, and read back intact.
func TestWriterGroupsFrames(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("second write fails=%v", fail), func(t *testing.T) {
			g := &gate{entered: make(chan struct{}), release: make(chan struct{})}
			if fail {
				g.err = errors.New("broken pipe")
			}
			w := &writer{w: g}
			errs := make(chan error, 4)
			go func() { errs <- w.send(frameBegun, 1) }()
			<-g.entered // the first write is under way
			const waiting = 3
			for i := range waiting {
				go func() {
					errs <- w.sendFrames(outFrame{typ: frameReport, id: uint64(2 + i), parts: [3][]byte{[]byte("rep")}},
						outFrame{typ: frameResult, id: uint64(2 + i), parts: [3][]byte{{outcomeOK}, []byte("out")}})
				}()
			}
			waitQueued(t, w, 1+2*waiting)
			close(g.release)
			var failed int
			for range 1 + waiting {
				if err := <-errs; err != nil {
					failed++
				}
			}
			if want := map[bool]int{false: 0, true: waiting}[fail]; failed != want {
				t.Errorf("%d sends failed, want %d (only the frames of the failed write)", failed, want)
			}
			if g.writes != 2 {
				t.Errorf("%d writes, want 2: the first, and one for all that queued behind it", g.writes)
			}
			if fail {
				if err := w.send(frameBegun, 9); err == nil {
					t.Error("send after a failed write = nil error, want the write's")
				}
				return
			}
			r := bufio.NewReader(&g.b)
			var hdr [headerLen]byte
			got := map[uint64][]string{}
			for {
				f, err := readFrame(r, &hdr)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got[f.id] = append(got[f.id], fmt.Sprintf("%s %q", f.typ, f.payload))
			}
			if len(got) != 1+waiting || len(got[1]) != 1 {
				t.Fatalf("frames read = %v, want one begun and %d report+result pairs", got, waiting)
			}
			for id := uint64(2); id < 2+waiting; id++ {
				if want := []string{`report "rep"`, `result "\x00out"`}; fmt.Sprint(got[id]) != fmt.Sprint(want) {
					t.Errorf("frames of call %d = %q, want %q", id, got[id], want)
				}
			}
		})
	}
}

// A hammer: many senders at once, every frame arrives whole and each sender's in order.
func TestWriterConcurrentSenders(t *testing.T) {
	pr, pw := io.Pipe()
	w := &writer{w: pw}
	const senders, each = 16, 200
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			for i := range each {
				payload := bytes.Repeat([]byte{byte(i)}, i%50)
				if err := w.send(frameLog, uint64(s+1), []byte{byte(i)}, payload); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	go func() { wg.Wait(); pw.Close() }()
	r := bufio.NewReader(pr)
	var hdr [headerLen]byte
	next := map[uint64]int{}
	for {
		f, err := readFrame(r, &hdr)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		i := next[f.id]
		if f.typ != frameLog || len(f.payload) != 1+i%50 || f.payload[0] != byte(i) {
			t.Fatalf("frame %d of sender %d = %s %q, want log %d", i, f.id, f.typ, f.payload, i)
		}
		next[f.id]++
	}
	for s := uint64(1); s <= senders; s++ {
		if next[s] != each {
			t.Errorf("sender %d: %d frames arrived, want %d", s, next[s], each)
		}
	}
}
