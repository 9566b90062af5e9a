package host

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Limits on what a client sends, shared by both transports. Options fields of the same
// names override them; config.toml's [server] table sets those.
const (
	// DefaultMaxMessageBytes caps one JSON-RPC message: a stdio line or a Streamable
	// HTTP POST body. 8 MiB is above the default plugin input (1 MiB) with room for
	// JSON escaping.
	DefaultMaxMessageBytes = 8 << 20
	// MaxMessageDepth caps how deeply arrays and objects nest in one stdio message.
	// It is checked by a linear scan before anything decodes the message, so no
	// decoder recurses deeper than this. It is the go-sdk decoder's own limit, which
	// bounds HTTP bodies, so both transports accept the same messages.
	MaxMessageDepth = 1000
	// stdioDrainTimeout bounds how long the server, once stdin has ended, waits for
	// the answers to requests it has already read (a tool call, a blocking
	// tasks/result) before it exits. It equals a plugin's default call timeout.
	stdioDrainTimeout = 30 * time.Second
	// peekBytes is how much of an oversized line is kept to find its id.
	peekBytes = 4 << 10
)

// JSON-RPC error codes for a message that cannot be served (JSON-RPC 2.0, 5.1).
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// stdioTransport is the server's side of stdio: newline-delimited JSON-RPC read line by
// line. Unlike the go-sdk's IOTransport, whose first undecodable byte ends the session
// (its decoder reads a stream, not lines, and any Read error closes the connection), a
// line that is not a JSON-RPC message is answered with an error and skipped; and when
// the input ends, Read reports it only after every request already read was answered
// (or stdioDrainTimeout passed), because the go-sdk stops writing once Read fails.
// Batches (JSON arrays) are refused: MCP dropped them in 2025-06-18.
type stdioTransport struct {
	in       io.ReadCloser
	out      io.WriteCloser
	maxBytes int           // largest line; 0 means DefaultMaxMessageBytes
	drain    time.Duration // 0 means stdioDrainTimeout
	logger   *slog.Logger
	// onEOF, if set, is called when the input has ended, before the drain: it ends
	// what would otherwise hold the drain (the connection's listens).
	onEOF func()
}

var (
	_ mcp.Transport  = (*stdioTransport)(nil)
	_ mcp.Connection = (*stdioConn)(nil)
)

func (t *stdioTransport) Connect(context.Context) (mcp.Connection, error) {
	maxBytes := t.maxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxMessageBytes
	}
	c := &stdioConn{
		in: t.in, out: t.out, drain: t.drain, logger: t.logger, onEOF: t.onEOF,
		items:   make(chan lineItem),
		closed:  make(chan struct{}),
		pending: map[jsonrpc.ID]bool{},
	}
	if c.drain <= 0 {
		c.drain = stdioDrainTimeout
	}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	// The reader ends when in's Read returns: at the end of input, or when Close
	// closes in. Close does not wait for it, since a Read of a terminal or of a
	// blocking pipe need not return on Close; the process is ending then.
	go c.readLines(bufio.NewReaderSize(t.in, 64<<10), maxBytes)
	return c, nil
}

// lineItem is what the reader found on one line: a message, the error answer (a whole
// line) for a line that is not one, or the error that ended the input.
type lineItem struct {
	msg   jsonrpc.Message
	reply []byte
	err   error
}

type stdioConn struct {
	in     io.ReadCloser
	out    io.WriteCloser
	drain  time.Duration
	logger *slog.Logger
	onEOF  func()
	items  chan lineItem

	wmu sync.Mutex // one message per Write on out

	mu       sync.Mutex
	pending  map[jsonrpc.ID]bool // requests read and not yet answered
	answered chan struct{}       // closed when pending empties, while draining

	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error
}

func (c *stdioConn) SessionID() string { return "" }

// readLines reads the input line by line until it ends, handing Read one item per line.
func (c *stdioConn) readLines(r *bufio.Reader, maxBytes int) {
	for {
		line, over, err := readLine(r, maxBytes)
		var it lineItem
		switch {
		case over:
			it.reply = errorLine(peekID(line), codeInvalidRequest,
				fmt.Sprintf("message refused: longer than %d bytes", maxBytes))
		case len(bytes.TrimSpace(line)) > 0:
			it.msg, it.reply = decodeLine(line)
		}
		if it.msg != nil || it.reply != nil {
			select {
			case c.items <- it:
			case <-c.closed:
				return
			}
		}
		if err != nil {
			select {
			case c.items <- lineItem{err: err}:
			case <-c.closed:
			}
			return
		}
	}
}

// readLine reads one line, without its line ending, holding at most maxBytes of it. A
// longer line is read to its end and dropped: over is true and line holds its first
// peekBytes. err is the input's error (io.EOF at its end) after the last line.
func readLine(r *bufio.Reader, maxBytes int) (line []byte, over bool, err error) {
	for {
		frag, err := r.ReadSlice('\n')
		if !over {
			line = append(line, frag...)
			if len(bytes.TrimRight(line, "\r\n")) > maxBytes {
				over = true
				line = line[:min(len(line), peekBytes)]
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimRight(line, "\r\n"), over, err
	}
}

// nesting reports how deeply arrays and objects nest in b, in one pass and without
// recursion; it does not check that b is valid JSON.
func nesting(b []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// errorLine is a JSON-RPC error response for id (nil means null), as one line.
func errorLine(id json.RawMessage, code int64, msg string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: msg}})
	if err != nil { // unreachable: every part is valid JSON
		panic(fmt.Sprintf("encode error answer: %v", err))
	}
	return append(b, '\n')
}

// Read returns the next message. Lines that are not messages are answered here and
// skipped. At the end of input it first waits for the answers to every request read.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, io.EOF
		case it := <-c.items:
			switch {
			case it.err != nil:
				if c.onEOF != nil {
					c.onEOF()
				}
				c.waitAnswered(ctx)
				return nil, it.err
			case it.reply != nil:
				c.logger.Warn("stdio: message refused", "answer", bytes.TrimSpace(it.reply))
				if err := c.writeLine(it.reply); err != nil {
					return nil, err
				}
				continue
			}
			c.track(it.msg)
			return it.msg, nil
		}
	}
}

// track records a request that needs an answer, and forgets one the client cancelled
// (which gets none).
func (c *stdioConn) track(msg jsonrpc.Message) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return
	}
	if req.IsCall() {
		c.mu.Lock()
		c.pending[req.ID] = true
		c.mu.Unlock()
		return
	}
	if req.Method != "notifications/cancelled" {
		return
	}
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(req.Params, &p) != nil {
		return
	}
	// MakeID takes a number as JSON decodes it (float64), not as an int64.
	if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
		c.done(id)
	}
}

// done forgets an answered request.
func (c *stdioConn) done(id jsonrpc.ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pending, id)
	if len(c.pending) == 0 && c.answered != nil {
		close(c.answered)
		c.answered = nil
	}
}

// waitAnswered waits until every request read has been answered, for at most c.drain.
func (c *stdioConn) waitAnswered(ctx context.Context) {
	c.mu.Lock()
	n := len(c.pending)
	if n == 0 {
		c.mu.Unlock()
		return
	}
	answered := make(chan struct{})
	c.answered = answered
	c.mu.Unlock()
	timer := time.NewTimer(c.drain)
	defer timer.Stop()
	select {
	case <-answered:
	case <-timer.C:
		c.mu.Lock()
		n = len(c.pending)
		c.mu.Unlock()
		c.logger.Warn("stdio: input ended; requests left unanswered", "requests", n, "waited", c.drain)
	case <-ctx.Done():
	case <-c.closed:
	}
}

// Write writes one message as one line.
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	err = c.writeLine(append(data, '\n'))
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.ID.IsValid() {
		c.done(resp.ID)
	}
	return err
}

// writeLine writes one whole line, never interleaved with another.
func (c *stdioConn) writeLine(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.out.Write(b)
	return err
}

// Close closes both ends; it may be called more than once.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.closeErr = errors.Join(c.in.Close(), c.out.Close())
	})
	return c.closeErr
}
