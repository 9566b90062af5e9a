package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Running a tool as a task. go-sdk's client has no Tasks (it cannot send params.task,
// nor tasks/result), so call speaks them one layer down, on its side of the in-memory
// transport, as a 2025-11-25 client would: the server, its sandbox and its task
// manager are the ones every client gets. The client above asks tools/call and gets
// the tool's result, as for a call in the request:
//
//   - the tools/call leaves with params.task;
//   - the server's CreateTaskResult is kept from the client, and a tasks/result of
//     call's own waits for the task's outcome, which goes to the client as the
//     tools/call's answer;
//   - notifications/tasks/status are printed, each change once;
//   - the task's live log (the resource its _meta names) is subscribed to and
//     printed as it grows, to its end before the result.
//
// The task's requests for input (elicitation, sampling) are pushed to the session
// while tasks/result waits, and the client answers them as in a sync call: from
// --answers or the terminal. The task lives in the server's memory (tasks.Options'
// zero value) and ends with call: Ctrl-C closes the server, which cancels it.

// Request IDs call sends on its own; go-sdk's client numbers its requests.
var (
	taskResultID, _   = jsonrpc.MakeID("mcp-wasmhost-call/tasks/result")
	logSubscribeID, _ = jsonrpc.MakeID("mcp-wasmhost-call/resources/subscribe")
	logReadID, _      = jsonrpc.MakeID("mcp-wasmhost-call/resources/read")
)

// taskLogKey names the log's URI in a task's _meta, and the read's position in the
// log's contents (host/tasklog.go).
const taskLogKey = "io.github.mcp-wasmhost/log"

// taskTransport runs the tools/call of tool as a task on the connection inner makes.
type taskTransport struct {
	inner mcp.Transport
	tool  string // the name the client calls
	out   *printer
}

func (t *taskTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &taskConn{Connection: c, tool: t.tool, out: t.out}, nil
}

type taskConn struct {
	mcp.Connection
	tool string
	out  *printer

	mu     sync.Mutex
	callID jsonrpc.ID // the tools/call sent as a task; zero until then
	taskID string     // the task it created; "" until its CreateTaskResult
	shown  string     // the last status printed, with its message

	// The task's log: the next byte to read, whether a read is out (and another
	// is due after it), and the tools/call's answer held until the log is read
	// to its end.
	logURI  string
	logNext int64
	reading bool
	again   bool
	held    *jsonrpc.Response
}

// wireTask is a task as 2025-11-25 renders it (tasks/get, notifications/tasks/status).
type wireTask struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
}

func (c *taskConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/call" {
		if params, ok := c.asTask(req); ok {
			msg = &jsonrpc.Request{ID: req.ID, Method: req.Method, Params: params}
		}
	}
	return c.Connection.Write(ctx, msg)
}

// asTask returns the params of the first tools/call of c.tool with params.task added.
func (c *taskConn) asTask(req *jsonrpc.Request) (json.RawMessage, bool) {
	var p map[string]json.RawMessage
	if json.Unmarshal(req.Params, &p) != nil {
		return nil, false
	}
	var name string
	json.Unmarshal(p["name"], &name)
	c.mu.Lock()
	defer c.mu.Unlock()
	if name != c.tool || c.callID.IsValid() {
		return nil, false
	}
	p["task"] = json.RawMessage(`{}`) // the server's default ttl
	b, err := json.Marshal(p)
	if err != nil {
		return nil, false
	}
	c.callID = req.ID
	return b, true
}

func (c *taskConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return msg, err
		}
		switch m := msg.(type) {
		case *jsonrpc.Request:
			if m.Method == "notifications/tasks/status" {
				var t wireTask
				if json.Unmarshal(m.Params, &t) == nil && t.TaskID != "" {
					c.status(t)
				}
				continue // the client has no use for it
			}
		case *jsonrpc.Response:
			switch m.ID {
			case logSubscribeID:
				continue
			case taskResultID: // the task's outcome, the tools/call's answer
				c.mu.Lock()
				m.ID = c.callID
				if c.logURI == "" {
					c.mu.Unlock()
					return m, nil
				}
				c.held = m // after the log's last lines
				c.mu.Unlock()
				if err := c.readLog(ctx); err != nil {
					return nil, err
				}
				if held := c.release(); held != nil {
					return held, nil
				}
				continue
			case logReadID:
				if err := c.logRead(ctx, m); err != nil {
					return nil, err
				}
				if held := c.release(); held != nil {
					return held, nil
				}
				continue
			}
			c.mu.Lock()
			ours := c.callID.IsValid() && m.ID == c.callID && c.taskID == ""
			c.mu.Unlock()
			if !ours || m.Error != nil {
				break // a refusal (bad arguments, say) is the call's answer
			}
			var created struct {
				Meta map[string]any `json:"_meta"`
				Task *wireTask      `json:"task"`
			}
			if json.Unmarshal(m.Result, &created) != nil || created.Task == nil || created.Task.TaskID == "" {
				break
			}
			logURI, _ := created.Meta[taskLogKey].(string)
			c.mu.Lock()
			c.taskID, c.logURI = created.Task.TaskID, logURI
			c.mu.Unlock()
			c.status(*created.Task)
			if logURI != "" {
				b, _ := json.Marshal(map[string]string{"uri": logURI})
				if err := c.Connection.Write(ctx, &jsonrpc.Request{ID: logSubscribeID, Method: "resources/subscribe", Params: b}); err != nil {
					return nil, fmt.Errorf("resources/subscribe %s: %w", logURI, err)
				}
			}
			b, _ := json.Marshal(map[string]string{"taskId": created.Task.TaskID})
			if err := c.Connection.Write(ctx, &jsonrpc.Request{ID: taskResultID, Method: "tasks/result", Params: b}); err != nil {
				return nil, fmt.Errorf("tasks/result: %w", err)
			}
			continue
		}
		if m, ok := msg.(*jsonrpc.Request); ok && m.Method == "notifications/resources/updated" {
			var p struct {
				URI string `json:"uri"`
			}
			json.Unmarshal(m.Params, &p)
			c.mu.Lock()
			ours := p.URI != "" && p.URI == c.logURI
			c.mu.Unlock()
			if ours {
				if err := c.readLog(ctx); err != nil {
					return nil, err
				}
				continue
			}
		}
		return msg, nil
	}
}

// status prints a change of the task's status.
func (c *taskConn) status(t wireTask) {
	c.mu.Lock()
	shown := t.Status + "\x00" + t.StatusMessage
	changed := c.shown != shown && (c.taskID == "" || t.TaskID == c.taskID)
	if changed {
		c.shown = shown
	}
	c.mu.Unlock()
	if !changed {
		return
	}
	text := fmt.Sprintf("task %s: %s", t.TaskID, t.Status)
	if t.StatusMessage != "" {
		text += ": " + t.StatusMessage
	}
	c.out.event("status", t, text)
}

// readLog reads the task's log from where the last read ended, or has the read that
// is out followed by another.
func (c *taskConn) readLog(ctx context.Context) error {
	c.mu.Lock()
	if c.reading {
		c.again = true
		c.mu.Unlock()
		return nil
	}
	c.reading, c.again = true, false
	uri := fmt.Sprintf("%s?offset=%d", c.logURI, c.logNext)
	c.mu.Unlock()
	b, _ := json.Marshal(map[string]string{"uri": uri})
	if err := c.Connection.Write(ctx, &jsonrpc.Request{ID: logReadID, Method: "resources/read", Params: b}); err != nil {
		return fmt.Errorf("resources/read %s: %w", uri, err)
	}
	return nil
}

// logRead prints the lines a read of the log returned, and reads on while there
// is more.
func (c *taskConn) logRead(ctx context.Context, m *jsonrpc.Response) error {
	var r struct {
		Contents []struct {
			Text string `json:"text"`
			Meta struct {
				Log struct {
					Next *int64 `json:"next"`
					More bool   `json:"more"`
				} `json:"io.github.mcp-wasmhost/log"`
			} `json:"_meta"`
		} `json:"contents"`
	}
	more := false
	if m.Error != nil {
		c.out.event("note", map[string]string{"log": m.Error.Error()}, fmt.Sprintf("task log not read: %v", m.Error))
	} else if json.Unmarshal(m.Result, &r) == nil && len(r.Contents) == 1 {
		ct := r.Contents[0]
		for _, line := range strings.SplitAfter(ct.Text, "\n") {
			if line != "" {
				line = strings.TrimSuffix(line, "\n")
				c.out.event("tasklog", line, "task log: "+line)
			}
		}
		c.mu.Lock()
		if n := ct.Meta.Log.Next; n != nil {
			c.logNext = *n
		}
		c.mu.Unlock()
		more = ct.Meta.Log.More
	}
	c.mu.Lock()
	c.reading = false
	again := more || c.again
	c.mu.Unlock()
	if again {
		return c.readLog(ctx)
	}
	return nil
}

// release returns the held answer once no read of the log is out.
func (c *taskConn) release() *jsonrpc.Response {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held == nil || c.reading {
		return nil
	}
	m := c.held
	c.held = nil
	return m
}
