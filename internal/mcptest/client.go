package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Client speaks JSON-RPC over an MCP transport with no SDK logic in the way, so
// that tests can send what the go-sdk client cannot (params.task, tasks/*) and see
// every message the server sends.
type Client struct {
	t    testing.TB
	Conn mcp.Connection

	mu            sync.Mutex
	nextID        int64
	pending       map[int64]chan *jsonrpc.Response
	notifications []*jsonrpc.Request
	onRequest     func(*jsonrpc.Request) (any, error) // answers server requests
	requests      []*jsonrpc.Request
	Init          json.RawMessage // the initialize result
}

// Dial connects over transport and initializes a 2025-11-25 session. onRequest answers
// the server's requests (elicitation/create, sampling/createMessage); when it is nil
// the client declares neither capability.
func Dial(t testing.TB, transport mcp.Transport, onRequest func(*jsonrpc.Request) (any, error)) *Client {
	t.Helper()
	caps := map[string]any{}
	if onRequest != nil {
		caps["elicitation"] = map[string]any{}
		caps["sampling"] = map[string]any{}
	}
	return DialWith(t, transport, onRequest, caps)
}

// DialWith is Dial declaring the client capabilities caps.
func DialWith(t testing.TB, transport mcp.Transport, onRequest func(*jsonrpc.Request) (any, error), caps map[string]any) *Client {
	t.Helper()
	return DialInitialize(t, transport, onRequest, map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": caps,
		"clientInfo": map[string]any{"name": "raw", "version": "1"},
	})
}

// DialInitialize is Dial sending params as the initialize params, as they are.
func DialInitialize(t testing.TB, transport mcp.Transport, onRequest func(*jsonrpc.Request) (any, error), params map[string]any) *Client {
	t.Helper()
	conn, err := transport.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := &Client{t: t, Conn: conn, pending: map[int64]chan *jsonrpc.Response{}, onRequest: onRequest}
	go c.readLoop()
	t.Cleanup(func() { conn.Close() })
	c.MustCall("initialize", params, &c.Init)
	if err := conn.Write(context.Background(), &jsonrpc.Request{Method: "notifications/initialized", Params: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *Client) readLoop() {
	for {
		msg, err := c.Conn.Read(context.Background())
		if err != nil {
			return
		}
		switch m := msg.(type) {
		case *jsonrpc.Response:
			id, _ := m.ID.Raw().(int64)
			c.mu.Lock()
			ch := c.pending[id]
			delete(c.pending, id)
			c.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		case *jsonrpc.Request:
			c.mu.Lock()
			if !m.IsCall() {
				c.notifications = append(c.notifications, m)
				c.mu.Unlock()
				continue
			}
			c.requests = append(c.requests, m)
			handler := c.onRequest
			c.mu.Unlock()
			go func() {
				var result any = map[string]any{}
				var err error
				if handler != nil {
					result, err = handler(m)
				}
				resp := &jsonrpc.Response{ID: m.ID, Error: err}
				if err == nil {
					resp.Result, _ = json.Marshal(result)
				}
				c.Conn.Write(context.Background(), resp)
			}()
		}
	}
}

// call sends a request and waits for its response.
func (c *Client) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	b, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	ch := make(chan *jsonrpc.Response, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	jid, _ := jsonrpc.MakeID(float64(id))
	if err := c.Conn.Write(ctx, &jsonrpc.Request{ID: jid, Method: method, Params: b}); err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return nil, r.Error
		}
		return r.Result, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *Client) MustCall(method string, params any, out any) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw, err := c.Call(ctx, method, params)
	if err != nil {
		c.t.Fatalf("%s(%v) = %v", method, params, err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			c.t.Fatalf("%s: decode %s: %v", method, raw, err)
		}
	}
}

// callErr sends a request that must fail and returns its JSON-RPC error.
func (c *Client) CallErr(method string, params any) *jsonrpc.Error {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw, err := c.Call(ctx, method, params)
	werr, ok := err.(*jsonrpc.Error)
	if !ok {
		c.t.Fatalf("%s(%v) = %s, %v; want a JSON-RPC error", method, params, raw, err)
	}
	return werr
}

func (c *Client) NotificationsOf(method string) []*jsonrpc.Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*jsonrpc.Request
	for _, n := range c.notifications {
		if n.Method == method {
			out = append(out, n)
		}
	}
	return out
}

// Task is a task as the client sees it.
type Task struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	TTL           *int64 `json:"ttl"`
	PollInterval  int64  `json:"pollInterval"`
}

// CreateTask calls a tool as a task and returns the created task.
func (c *Client) CreateTask(tool string, args any, task map[string]any, meta map[string]any) Task {
	c.t.Helper()
	params := map[string]any{"name": tool, "arguments": args, "task": task}
	if meta != nil {
		params["_meta"] = meta
	}
	var res struct {
		Task Task `json:"task"`
	}
	c.MustCall("tools/call", params, &res)
	if res.Task.TaskID == "" || res.Task.Status != "working" {
		c.t.Fatalf("tools/call(%s, task) = %+v, want a working task", tool, res.Task)
	}
	return res.Task
}

func (c *Client) Get(id string) Task {
	c.t.Helper()
	var t Task
	c.MustCall("tasks/get", map[string]any{"taskId": id}, &t)
	return t
}

// WaitStatus polls tasks/get until the task reaches status.
func (c *Client) WaitStatus(id, status string) Task {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		t := c.Get(id)
		if t.Status == status {
			return t
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("task %s is %s (%s), want %s", id, t.Status, t.StatusMessage, status)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (t Task) String() string { return fmt.Sprintf("%s:%s", t.TaskID, t.Status) }

// CallErr0 returns the JSON-RPC error of a call, or nil if it succeeded.
func (c *Client) CallErr0(method string, params any) *jsonrpc.Error {
	_, err := c.Call(context.Background(), method, params)
	werr, _ := err.(*jsonrpc.Error)
	return werr
}

// Requests returns the requests the server has sent so far (elicitation/create, ...).
func (c *Client) Requests() []*jsonrpc.Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*jsonrpc.Request(nil), c.requests...)
}
