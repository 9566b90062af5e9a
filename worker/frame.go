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
)

func (t frameType) String() string {
	names := [...]string{"", "init", "ready", "call", "cancel", "reply", "log", "progress", "request", "result", "begun", "report"}
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

// writer serializes frames onto one stream: each frame is one Write.
type writer struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
	err error // sticky: after a failed write nothing more is sent
}

func (w *writer) send(typ frameType, id uint64, parts ...[]byte) error {
	n := headerLen - 4
	for _, p := range parts {
		n += len(p)
	}
	if n+4 > maxFrame {
		return fmt.Errorf("%s frame of %d bytes exceeds the %d-byte limit", typ, n+4, maxFrame)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	b := w.buf[:0]
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	b = append(b, byte(typ))
	b = binary.BigEndian.AppendUint64(b, id)
	for _, p := range parts {
		b = append(b, p...)
	}
	_, w.err = w.w.Write(b)
	if cap(b) <= 64<<10 {
		w.buf = b // keep small buffers; let big ones go
	}
	return w.err
}

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
