package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Client is the one raw JSON-RPC client every server is driven with, so that no
// server is measured through a different client library. It speaks MCP 2025-11-25
// over stdio (newline-delimited JSON on a process's pipes) or Streamable HTTP (one
// session; a POST per request, answered as JSON or as an SSE stream). Server requests
// (elicitation/create) are left unanswered: the benchmarks park tasks on them.
type Client struct {
	call     func(ctx context.Context, id int64, body []byte) (json.RawMessage, error)
	stop     func() error
	next     atomic.Int64
	requests atomic.Int64 // server requests seen (stdio)
	progress atomic.Int64 // notifications/progress read (stdio)

	smu      sync.Mutex
	statuses map[statusKey]chan time.Time // awaited notifications/tasks/status (stdio)
}

// statusKey is a task and a status its notifications/tasks/status is awaited with.
type statusKey struct{ task, status string }

// ExpectStatus returns a channel that receives the moment the stdio connection reads
// a notifications/tasks/status of task id in status, and a func that stops waiting.
// Call it before what causes the notification. Over HTTP nothing arrives: the server
// sends these notifications on stream transports only.
func (c *Client) ExpectStatus(id, status string) (<-chan time.Time, func()) {
	k := statusKey{id, status}
	ch := make(chan time.Time, 1)
	c.smu.Lock()
	if c.statuses == nil {
		c.statuses = map[statusKey]chan time.Time{}
	}
	c.statuses[k] = ch
	c.smu.Unlock()
	return ch, func() {
		c.smu.Lock()
		if c.statuses[k] == ch {
			delete(c.statuses, k)
		}
		c.smu.Unlock()
	}
}

// sawStatus hands the moment a notifications/tasks/status was read to its waiter.
func (c *Client) sawStatus(params json.RawMessage, at time.Time) {
	var t struct {
		TaskID string `json:"taskId"`
		Status string `json:"status"`
	}
	if json.Unmarshal(params, &t) != nil {
		return
	}
	k := statusKey{t.TaskID, t.Status}
	c.smu.Lock()
	ch := c.statuses[k]
	delete(c.statuses, k)
	c.smu.Unlock()
	if ch != nil {
		ch <- at
	}
}

// ServerRequests is how many requests (such as elicitation/create) the server has sent
// on a stdio connection so far.
func (c *Client) ServerRequests() int64 { return c.requests.Load() }

// Progress is how many notifications/progress a stdio connection has read so far.
// The connection reads (and drops) every message the server sends, so notifications
// never back up into the server while a benchmark waits for a response.
func (c *Client) Progress() int64 { return c.progress.Load() }

// Error is a JSON-RPC error answered by a server.
type Error struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// message is any JSON-RPC message a server sends.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *Error          `json:"error"`
}

// response returns the id of a response, or false for a request or notification.
func (m *message) response() (int64, bool) {
	if m.Method != "" || len(m.ID) == 0 {
		return 0, false
	}
	var id int64
	if err := json.Unmarshal(m.ID, &id); err != nil {
		return 0, false
	}
	return id, true
}

func (m *message) outcome() (json.RawMessage, error) {
	if m.Error != nil {
		return nil, m.Error
	}
	return m.Result, nil
}

// Call sends a request and waits for its response.
func (c *Client) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	p, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("%s: encode params: %w", method, err)
	}
	id := c.next.Add(1)
	body := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, p)
	res, err := c.call(ctx, id, body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	return res, nil
}

// CallInto is Call decoding the result into out.
func (c *Client) CallInto(ctx context.Context, method string, params, out any) error {
	res, err := c.Call(ctx, method, params)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(res, out); err != nil {
		return fmt.Errorf("%s: decode %.200s: %w", method, res, err)
	}
	return nil
}

// Close ends the session (and, over stdio, the connection).
func (c *Client) Close() error { return c.stop() }

// Caps are the client capabilities a session declares at initialize.
type Caps struct {
	Elicitation bool // elicitation: the client can answer requests for user input
	// TasksExtension declares the Tasks extension (io.modelcontextprotocol/tasks) on
	// the 2025-11-25 session: the server decides which calls become tasks, tasks/get
	// inlines pending input requests and tasks/update answers them.
	TasksExtension bool
}

// initialize runs the MCP handshake, declaring caps.
func (c *Client) initialize(ctx context.Context, caps Caps, notify func([]byte) error) error {
	declared := map[string]any{}
	if caps.Elicitation {
		declared["elicitation"] = map[string]any{}
	}
	if caps.TasksExtension {
		declared["extensions"] = map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}
	}
	if _, err := c.Call(ctx, "initialize", map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": declared,
		"clientInfo": map[string]any{"name": "benchall", "version": "1"},
	}); err != nil {
		return err
	}
	return notify([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
}

// DialStdio speaks to a server on its stdin and stdout. The caller owns the process.
func DialStdio(ctx context.Context, stdin io.WriteCloser, stdout io.Reader, caps Caps) (*Client, error) {
	var (
		mu      sync.Mutex
		wmu     sync.Mutex
		pending = map[int64]chan *message{}
		dead    error
	)
	write := func(b []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		_, err := stdin.Write(append(b, '\n'))
		return err
	}
	c := &Client{stop: func() error { return stdin.Close() }}
	done := make(chan struct{})
	go func() {
		defer close(done)
		r := bufio.NewReaderSize(stdout, 1<<16)
		for {
			line, err := r.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				m := new(message)
				if json.Unmarshal(line, m) == nil {
					if m.Method != "" && len(m.ID) > 0 {
						c.requests.Add(1)
					}
					if m.Method == "notifications/tasks/status" && len(m.ID) == 0 {
						c.sawStatus(m.Params, time.Now())
					}
					if m.Method == "notifications/progress" && len(m.ID) == 0 {
						c.progress.Add(1)
					}
					if id, ok := m.response(); ok {
						mu.Lock()
						ch := pending[id]
						delete(pending, id)
						mu.Unlock()
						if ch != nil {
							ch <- m
						}
					}
				}
			}
			if err != nil {
				mu.Lock()
				dead = fmt.Errorf("server closed stdout: %w", err)
				for id, ch := range pending {
					delete(pending, id)
					close(ch)
				}
				mu.Unlock()
				return
			}
		}
	}()
	c.call = func(ctx context.Context, id int64, body []byte) (json.RawMessage, error) {
		ch := make(chan *message, 1)
		mu.Lock()
		if dead != nil {
			mu.Unlock()
			return nil, dead
		}
		pending[id] = ch
		mu.Unlock()
		if err := write(body); err != nil {
			return nil, err
		}
		select {
		case m, ok := <-ch:
			if !ok {
				return nil, dead
			}
			return m.outcome()
		case <-ctx.Done():
			mu.Lock()
			delete(pending, id)
			mu.Unlock()
			return nil, ctx.Err()
		}
	}
	if err := c.initialize(ctx, caps, write); err != nil {
		return nil, err
	}
	return c, nil
}

// DialHTTP opens a Streamable HTTP session at url with the given HTTP client.
func DialHTTP(ctx context.Context, hc *http.Client, url string, caps Caps) (*Client, error) {
	var session atomic.Value // string
	session.Store("")
	post := func(ctx context.Context, body []byte) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if s := session.Load().(string); s != "" {
			req.Header.Set("Mcp-Session-Id", s)
		}
		return hc.Do(req)
	}
	c := &Client{}
	c.call = func(ctx context.Context, id int64, body []byte) (json.RawMessage, error) {
		resp, err := post(ctx, body)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
			session.Store(s)
		}
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			return nil, fmt.Errorf("HTTP %s: %s", resp.Status, bytes.TrimSpace(b))
		}
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			return readSSE(resp.Body, id)
		}
		m := new(message)
		if err := json.NewDecoder(resp.Body).Decode(m); err != nil {
			return nil, fmt.Errorf("decode response: %w", err)
		}
		return m.outcome()
	}
	notify := func(b []byte) error {
		resp, err := post(ctx, b)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("notifications/initialized: HTTP %s", resp.Status)
		}
		return nil
	}
	c.stop = func() error {
		s := session.Load().(string)
		if s == "" {
			return nil
		}
		req, err := http.NewRequest(http.MethodDelete, url, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Mcp-Session-Id", s)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}
	if err := c.initialize(ctx, caps, notify); err != nil {
		return nil, err
	}
	return c, nil
}

// readSSE reads server-sent events until the response with id arrives.
func readSSE(r io.Reader, id int64) (json.RawMessage, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 64<<20)
	var data []byte
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case bytes.HasPrefix(line, []byte("data:")):
			data = append(data, bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))...)
		case len(line) == 0 && len(data) > 0:
			m := new(message)
			if json.Unmarshal(data, m) == nil {
				if got, ok := m.response(); ok && got == id {
					return m.outcome()
				}
			}
			data = data[:0]
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(data) > 0 {
		m := new(message)
		if json.Unmarshal(data, m) == nil {
			if got, ok := m.response(); ok && got == id {
				return m.outcome()
			}
		}
	}
	return nil, errors.New("the event stream ended without the response")
}
