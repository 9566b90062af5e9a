package worker

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
)

// A frame is: a 4-byte big-endian length of the rest, a 1-byte type, an 8-byte
// big-endian call ID, and the payload. Call ID 0 belongs to the worker itself (init).
const headerLen = 4 + 1 + 8

// maxFrame bounds any frame in either direction: the init frame carries the whole
// module, the others at most a call's input, output or a reply (a few MiB by config).
const maxFrame = 256 << 20

type frameType uint8

// Frame types. S->W is server to worker, W->S worker to server.
const (
	frameInit     frameType = iota + 1 // S->W: u32 len + init JSON, then the .wasm bytes
	frameReady                         // W->S: "" when loaded, else the load error
	frameCall                          // S->W: u8 entry point + input document
	frameCancel                        // S->W: stop the call
	frameReply                         // S->W: u8 replyStatus + reply or error text
	frameLog                           // W->S: u8 level + message
	frameProgress                      // W->S: f64 progress + f64 total + message
	frameRequest                       // W->S: u8 method length + method + params
	frameResult                        // W->S: u8 outcome + output or message
	frameBegun                         // W->S: the call's guest is about to start (empty)
	frameReport                        // W->S: the call's resource report (report.go), before its result
	frameMemory                        // W->S, call ID 0: u64 bytes of linear memory the worker's live instances hold (livememory.go)
)

func (t frameType) String() string {
	names := [...]string{"", "init", "ready", "call", "cancel", "reply", "log", "progress", "request", "result", "begun", "report", "memory"}
	if int(t) < len(names) && t != 0 {
		return names[t]
	}
	return fmt.Sprintf("frame(%d)", uint8(t))
}

// Entry points a call frame can run.
const (
	entryDescribe byte = 1
	entryCall     byte = 2
)

// Statuses of a reply frame.
const (
	replyOK byte = iota
	replyUnsupported
	replyUnavailable
	replyFailed
)

// outcomeOK marks a successful result frame; any other outcome is a sandbox.ErrorKind,
// or outcomeError for a failure that is not the guest's.
const (
	outcomeOK    byte = 0
	outcomeError byte = 255
)

type frame struct {
	typ     frameType
	id      uint64
	payload []byte
}

// writer serializes frames onto one stream. Frames sent while a write is under way
// queue, and the goroutine that made that write writes them all in one more (group
// commit): under load one write(2), and one wake-up of the reader, carries several
// frames. send returns once its frames are written, as each frame's own write did:
// a begun frame is out before the guest starts, and a failed write is the sender's to
// report.
type writer struct {
	w io.Writer

	mu      sync.Mutex
	flushed *sync.Cond // signalled after each write
	buf     []byte     // frames waiting for the next write
	spare   []byte     // the buffer of the write before, reused
	writing bool       // a goroutine is writing: it will write buf too
	queued  uint64     // frames appended to buf, counted from the first
	written uint64     // frames written (or failed), counted the same way
	err     error      // sticky: after a failed write nothing more is sent
	lost    uint64     // after err: the frames from number lost+1 on were not written
}

// outFrame is one frame for [writer.sendFrames].
type outFrame struct {
	typ   frameType
	id    uint64
	parts [3][]byte // the payload, in up to three pieces
}

func (w *writer) send(typ frameType, id uint64, parts ...[]byte) error {
	if len(parts) > len(outFrame{}.parts) {
		panic("worker: a frame of more than three pieces") // this package's own bug
	}
	f := outFrame{typ: typ, id: id}
	copy(f.parts[:], parts)
	return w.sendFrames(f)
}

// sendFrames writes the frames together, in order, and returns once they are written.
func (w *writer) sendFrames(fs ...outFrame) error {
	for _, f := range fs {
		if n := headerLen + f.size(); n > maxFrame {
			return fmt.Errorf("%s frame of %d bytes exceeds the %d-byte limit", f.typ, n, maxFrame)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	for _, f := range fs {
		w.buf = appendFrame(w.buf, f)
	}
	w.queued += uint64(len(fs))
	mine := w.queued
	for w.written < mine {
		if w.writing {
			// The goroutine writing now, or the next to write, takes these frames.
			if w.flushed == nil {
				w.flushed = sync.NewCond(&w.mu)
			}
			w.flushed.Wait()
			continue
		}
		// Write everything queued, these frames among it; then the next waiter, if
		// any frames came meanwhile, writes those: each sender writes at most once.
		w.writing = true
		b, before, upTo := w.buf, w.written, w.queued
		w.buf = w.spare[:0]
		w.mu.Unlock()
		_, err := w.w.Write(b)
		w.mu.Lock()
		w.writing = false
		if cap(b) <= 64<<10 {
			w.spare = b // keep small buffers; let big ones go
		} else {
			w.spare = nil
		}
		w.written = upTo
		if err != nil {
			// These frames and every one queued since will never be written.
			w.err, w.lost = err, before
			w.buf, w.written = nil, w.queued
		}
		if w.flushed != nil {
			w.flushed.Broadcast()
		}
	}
	return w.failed(mine)
}

// failed is the error of the write that carried frame number n, if it failed.
func (w *writer) failed(n uint64) error {
	if w.err != nil && n > w.lost {
		return w.err
	}
	return nil
}

func appendFrame(b []byte, f outFrame) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(headerLen-4+f.size()))
	b = append(b, byte(f.typ))
	b = binary.BigEndian.AppendUint64(b, f.id)
	for _, p := range f.parts {
		b = append(b, p...)
	}
	return b
}

func (f *outFrame) size() int { return len(f.parts[0]) + len(f.parts[1]) + len(f.parts[2]) }

// readFrame reads one frame. The payload is freshly allocated.
func readFrame(r io.Reader, hdr *[headerLen]byte) (frame, error) {
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return frame{}, errors.New("stream ended inside a frame header")
		}
		return frame{}, err // io.EOF between frames is a clean end
	}
	n := binary.BigEndian.Uint32(hdr[:4])
	if n < headerLen-4 || n > maxFrame-4 {
		return frame{}, fmt.Errorf("frame length %d out of range", n)
	}
	f := frame{typ: frameType(hdr[4]), id: binary.BigEndian.Uint64(hdr[5:])}
	size := int(n - (headerLen - 4))
	if size <= smallFrame {
		f.payload = make([]byte, size)
		if _, err := io.ReadFull(r, f.payload); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF // io.EOF is a clean end between frames only
			}
			return frame{}, fmt.Errorf("stream ended inside a %s frame: %w", f.typ, err)
		}
		return f, nil
	}
	// The length is the sender's word, not bytes yet: grow the buffer as they arrive,
	// so that a header announcing maxFrame and then nothing costs nothing.
	var b bytes.Buffer
	b.Grow(smallFrame)
	got, err := b.ReadFrom(io.LimitReader(r, int64(size)))
	if err == nil && got < int64(size) {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return frame{}, fmt.Errorf("stream ended inside a %s frame: %w", f.typ, err)
	}
	f.payload = b.Bytes()
	return f, nil
}

// smallFrame is the largest payload readFrame allocates at once, on the header's word.
const smallFrame = 64 << 10

func appendF64(b []byte, v float64) []byte {
	return binary.BigEndian.AppendUint64(b, math.Float64bits(v))
}

func f64(b []byte) float64 { return math.Float64frombits(binary.BigEndian.Uint64(b)) }
