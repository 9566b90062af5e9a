package host_test

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

// rawClient speaks JSON-RPC over an MCP transport with no SDK logic in the way, so
// that tests can send what the go-sdk client cannot (params.task, tasks/*) and see
// every message the server sends.
type rawClient struct {
	t    *testing.T
	conn mcp.Connection

	mu            sync.Mutex
	nextID        int64
	pending       map[int64]chan *jsonrpc.Response
	notifications []*jsonrpc.Request
	onRequest     func(*jsonrpc.Request) (any, error) // answers server requests
	requests      []*jsonrpc.Request
	init          json.RawMessage // the initialize result
}

func dialRaw(t *testing.T, transport mcp.Transport, onRequest func(*jsonrpc.Request) (any, error)) *rawClient {
	t.Helper()
	conn, err := transport.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := &rawClient{t: t, conn: conn, pending: map[int64]chan *jsonrpc.Response{}, onRequest: onRequest}
	go c.readLoop()
	t.Cleanup(func() { conn.Close() })
	caps := map[string]any{}
	if onRequest != nil {
		caps["elicitation"] = map[string]any{}
	}
	c.mustCall("initialize", map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": caps,
		"clientInfo": map[string]any{"name": "raw", "version": "1"},
	}, &c.init)
	if err := conn.Write(context.Background(), &jsonrpc.Request{Method: "notifications/initialized", Params: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *rawClient) readLoop() {
	for {
		msg, err := c.conn.Read(context.Background())
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
				c.conn.Write(context.Background(), resp)
			}()
		}
	}
}

// call sends a request and waits for its response.
func (c *rawClient) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
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
	if err := c.conn.Write(ctx, &jsonrpc.Request{ID: jid, Method: method, Params: b}); err != nil {
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

func (c *rawClient) mustCall(method string, params any, out any) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw, err := c.call(ctx, method, params)
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
func (c *rawClient) callErr(method string, params any) *jsonrpc.Error {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw, err := c.call(ctx, method, params)
	werr, ok := err.(*jsonrpc.Error)
	if !ok {
		c.t.Fatalf("%s(%v) = %s, %v; want a JSON-RPC error", method, params, raw, err)
	}
	return werr
}

func (c *rawClient) notificationsOf(method string) []*jsonrpc.Request {
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

// wireTask is a task as the client sees it.
type wireTask struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	TTL           *int64 `json:"ttl"`
	PollInterval  int64  `json:"pollInterval"`
}

// createTask calls a tool as a task and returns the created task.
func (c *rawClient) createTask(tool string, args any, task map[string]any, meta map[string]any) wireTask {
	c.t.Helper()
	params := map[string]any{"name": tool, "arguments": args, "task": task}
	if meta != nil {
		params["_meta"] = meta
	}
	var res struct {
		Task wireTask `json:"task"`
	}
	c.mustCall("tools/call", params, &res)
	if res.Task.TaskID == "" || res.Task.Status != "working" {
		c.t.Fatalf("tools/call(%s, task) = %+v, want a working task", tool, res.Task)
	}
	return res.Task
}

func (c *rawClient) get(id string) wireTask {
	c.t.Helper()
	var t wireTask
	c.mustCall("tasks/get", map[string]any{"taskId": id}, &t)
	return t
}

// waitStatus polls tasks/get until the task reaches status.
func (c *rawClient) waitStatus(id, status string) wireTask {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		t := c.get(id)
		if t.Status == status {
			return t
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("task %s is %s (%s), want %s", id, t.Status, t.StatusMessage, status)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (t wireTask) String() string { return fmt.Sprintf("%s:%s", t.TaskID, t.Status) }
