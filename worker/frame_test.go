package worker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// answeringHost is a sandbox.Host that takes every log and progress report and answers
// every request at once, so that the supervisor's handling of each frame runs through.
type answeringHost struct{}

func (answeringHost) Log(context.Context, sandbox.Level, string)         {}
func (answeringHost) Progress(context.Context, float64, float64, string) {}
func (answeringHost) Request(context.Context, string, []byte) ([]byte, error) {
	return []byte(`{}`), nil
}

// frames encodes frames as a worker writes them.
func frames(fs ...frame) []byte {
	var b bytes.Buffer
	w := &writer{w: &b}
	for _, f := range fs {
		if err := w.send(f.typ, f.id, f.payload); err != nil {
			panic(err)
		}
	}
	return b.Bytes()
}

// FuzzWorkerFrames feeds the supervisor's frame decoder what a worker, which runs
// hostile code, could write: every frame is read (readFrame), checked (validate) and
// the valid ones handled as the supervisor handles them (handle, result). Nothing may
// panic, and a frame read is never longer than its length says.
func FuzzWorkerFrames(f *testing.F) {
	f.Add(frames(frame{frameReady, 0, nil}))
	f.Add(frames(
		frame{frameLog, 1, append([]byte{byte(sandbox.LevelInfo)}, "hello"...)},
		frame{frameProgress, 1, append(appendF64(appendF64(nil, 1), 10), "step"...)},
		frame{frameRequest, 1, append([]byte{6}, `elicit{"message":"?"}`...)},
		frame{frameResult, 1, append([]byte{outcomeOK}, `{"content":[]}`...)},
	))
	f.Add(frames(frame{frameResult, 1, append([]byte{byte(sandbox.KindTimeout)}, "stopped"...)}))
	f.Add(frames(frame{frameResult, 1, append([]byte{outcomeError}, "oops"...)}))
	f.Add(frames(frame{frameMemory, 0, binary.BigEndian.AppendUint64(nil, 49<<16)}, frame{frameMemory, 1, make([]byte, 8)}))
	f.Add([]byte{0, 0, 0, 9, byte(frameLog), 0, 0, 0, 0, 0, 0, 0, 1})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, byte(frameResult)})
	f.Add([]byte{0, 0, 0, 12, byte(frameRequest), 0, 0, 0, 0, 0, 0, 0, 1, 200, 'a', 'b'})
	m := &Module{name: "fuzz", limits: sandbox.Limits{}.WithDefaults(), logger: slog.New(slog.DiscardHandler)}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := &process{w: &writer{w: io.Discard}, dead: make(chan struct{}), calls: map[uint64]*call{}, logger: m.logger}
		c := p.register(nil)
		clock := sandbox.NewClock(time.Minute)
		defer clock.Stop()
		r := bufio.NewReader(bytes.NewReader(data))
		var hdr [headerLen]byte
		read := 0
		for {
			fr, err := readFrame(r, &hdr)
			if err != nil {
				if errors.Is(err, io.EOF) && read != len(data)-r.Buffered() {
					t.Fatalf("clean end after %d of %d bytes", read, len(data))
				}
				return
			}
			read += headerLen + len(fr.payload)
			if fr.typ == frameReady {
				continue
			}
			if validate(fr) != nil {
				continue // the supervisor kills the worker; read on to try more frames
			}
			for _, h := range []sandbox.Host{answeringHost{}, nil} {
				out, err, finished := m.handle(context.Background(), clock, p, c, fr, h)
				if fr.typ == frameResult && (!finished || (err == nil) != (fr.payload[0] == outcomeOK) || (err == nil && !bytes.Equal(out, fr.payload[1:]))) {
					t.Fatalf("handle(result %x) = %q, %v, %v", fr.payload, out, err, finished)
				}
			}
		}
	})
}

// TestFrameLengthIsNotAnAllocation: a header that announces the largest frame and then
// nothing costs the reader what arrived, not the announced length. A worker could
// otherwise make the server allocate maxFrame bytes per stalled frame.
func TestFrameLengthIsNotAnAllocation(t *testing.T) {
	hdr := []byte{0, 0, 0, 0, byte(frameResult), 0, 0, 0, 0, 0, 0, 0, 1}
	n := uint32(maxFrame - 4)
	hdr[0], hdr[1], hdr[2], hdr[3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	data := append(hdr, []byte("short")...)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var h [headerLen]byte
	_, err := readFrame(bytes.NewReader(data), &h)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "stream ended inside a result frame") {
		t.Errorf("readFrame(a cut frame) = %v, want the stream ended inside it", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("readFrame allocated %d bytes for a frame of which 5 bytes arrived; want under 1 MiB", got)
	}
}
