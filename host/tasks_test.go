package host_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/host"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/mcptest"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
)

// transports runs a test over a stream transport (as stdio) and over Streamable HTTP.
func transports(t *testing.T, f *fixture, test func(t *testing.T, dial func(onRequest func(*jsonrpc.Request) (any, error)) *mcptest.Client)) {
	t.Run("stream", func(t *testing.T) {
		test(t, func(h func(*jsonrpc.Request) (any, error)) *mcptest.Client { return mcptest.Dial(t, f.stream(t), h) })
	})
	t.Run("http", func(t *testing.T) {
		test(t, func(h func(*jsonrpc.Request) (any, error)) *mcptest.Client {
			return mcptest.Dial(t, f.httpTransport(), h)
		})
	})
}

func TestTaskCapabilityAndTaskSupport(t *testing.T) {
	f := newFixture(t)
	c := mcptest.Dial(t, f.stream(t), nil)
	var init struct {
		Capabilities struct {
			Tasks json.RawMessage `json:"tasks"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(c.Init, &init); err != nil {
		t.Fatal(err)
	}
	if got := string(init.Capabilities.Tasks); got != `{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}` {
		t.Errorf("capabilities.tasks = %s", got)
	}
	var list struct {
		Tools []struct {
			Name      string `json:"name"`
			Execution struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		} `json:"tools"`
	}
	c.MustCall("tools/list", map[string]any{}, &list)
	want := map[string]string{"toolbox_timer": "required", "toolbox_slow_count": "optional", "textkit_sha256": "forbidden"}
	for _, tool := range list.Tools {
		if w, ok := want[tool.Name]; ok && tool.Execution.TaskSupport != w {
			t.Errorf("%s taskSupport = %q, want %q", tool.Name, tool.Execution.TaskSupport, w)
		}
	}
}

func TestTaskRules(t *testing.T) {
	f := newFixture(t)
	c := mcptest.Dial(t, f.stream(t), nil)
	tests := []struct {
		name   string
		params map[string]any
		code   int64
		want   string
	}{
		{"task on a forbidden tool", map[string]any{"name": "textkit_sha256", "arguments": map[string]any{"text": "x"}, "task": map[string]any{}},
			jsonrpc.CodeMethodNotFound, "does not support task execution"},
		{"no task on a required tool", map[string]any{"name": "toolbox_timer", "arguments": map[string]any{"seconds": 0}},
			jsonrpc.CodeMethodNotFound, "must be called as a task"},
		{"bad arguments", map[string]any{"name": "toolbox_timer", "arguments": map[string]any{"seconds": "x"}, "task": map[string]any{}},
			jsonrpc.CodeInvalidParams, "invalid arguments"},
		{"bad ttl", map[string]any{"name": "toolbox_timer", "arguments": map[string]any{"seconds": 0}, "task": map[string]any{"ttl": -5}},
			jsonrpc.CodeInvalidParams, "ttl"},
		{"task not an object", map[string]any{"name": "toolbox_timer", "arguments": map[string]any{"seconds": 0}, "task": "soon"},
			jsonrpc.CodeInvalidParams, `params.task must be an object such as {"ttl": 60000}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.CallErr("tools/call", tt.params)
			if err.Code != tt.code || !strings.Contains(err.Message, tt.want) {
				t.Errorf("tools/call = %d %q, want %d containing %q", err.Code, err.Message, tt.code, tt.want)
			}
		})
	}
	// A spoofed private key in _meta is not a task request.
	var res mcp.CallToolResult
	c.MustCall("tools/call", map[string]any{"name": "textkit_ping", "arguments": map[string]any{},
		"_meta": map[string]any{"io.github.mcp-wasmhost/task": map[string]any{}}}, &res)
	if len(res.Content) == 0 {
		t.Errorf("spoofed task key: got %+v, want a plain result", res)
	}
}

func TestTaskLifecycle(t *testing.T) {
	f := newFixtureWith(t, host.Options{Tasks: tasks.Options{MaxTTL: time.Minute}})
	transports(t, f, func(t *testing.T, dial func(func(*jsonrpc.Request) (any, error)) *mcptest.Client) {
		c := dial(nil)
		created := c.CreateTask("toolbox_slow_count", map[string]any{"to": 3, "delay_ms": 10}, map[string]any{"ttl": 3_600_000},
			map[string]any{"progressToken": "tok"})
		if created.TTL == nil || *created.TTL != 60_000 {
			t.Errorf("ttl = %v, want the requested hour clamped to 60000", created.TTL)
		}
		huge := c.CreateTask("textkit_ping", map[string]any{}, map[string]any{"ttl": int64(1) << 62}, nil)
		if huge.TTL == nil || *huge.TTL != 60_000 {
			t.Errorf("ttl = %v, want a huge ttl clamped to 60000, not overflowed", huge.TTL)
		}
		if created.PollInterval <= 0 || created.CreatedAt == "" || created.LastUpdatedAt == "" {
			t.Errorf("created task = %+v, want pollInterval and timestamps", created)
		}
		if _, err := time.Parse(time.RFC3339Nano, created.CreatedAt); err != nil {
			t.Errorf("createdAt %q is not ISO 8601: %v", created.CreatedAt, err)
		}
		var res struct {
			Content           []map[string]any `json:"content"`
			StructuredContent map[string]any   `json:"structuredContent"`
			Meta              map[string]any   `json:"_meta"`
		}
		c.MustCall("tasks/result", map[string]any{"taskId": created.TaskID}, &res)
		if res.StructuredContent["counted"] != 3.0 {
			t.Errorf("tasks/result = %+v, want counted 3", res)
		}
		related, _ := res.Meta["io.modelcontextprotocol/related-task"].(map[string]any)
		if related["taskId"] != created.TaskID {
			t.Errorf("tasks/result _meta = %v, want the related task", res.Meta)
		}
		done := c.Get(created.TaskID)
		if done.Status != "completed" {
			t.Errorf("status = %s, want completed", done.Status)
		}
	})
}

func TestTaskProgressKeepsToken(t *testing.T) {
	f := newFixture(t)
	c := mcptest.Dial(t, f.stream(t), nil)
	created := c.CreateTask("toolbox_slow_count", map[string]any{"to": 4, "delay_ms": 1}, map[string]any{}, map[string]any{"progressToken": "tok-7"})
	c.MustCall("tasks/result", map[string]any{"taskId": created.TaskID}, nil)
	progress := c.NotificationsOf("notifications/progress")
	if len(progress) != 4 {
		t.Fatalf("%d progress notifications, want 4", len(progress))
	}
	for _, n := range progress {
		if !strings.Contains(string(n.Params), `"progressToken":"tok-7"`) {
			t.Errorf("progress %s lacks the caller's token", n.Params)
		}
	}
	var statuses []string
	for _, n := range c.NotificationsOf("notifications/tasks/status") {
		var w mcptest.Task
		json.Unmarshal(n.Params, &w)
		if w.TaskID == created.TaskID {
			statuses = append(statuses, w.Status)
		}
	}
	if strings.Join(statuses, ",") != "completed" {
		t.Errorf("status notifications = %v, want [completed]", statuses)
	}
}

func TestTaskFailedByToolError(t *testing.T) {
	f := newFixture(t)
	transports(t, f, func(t *testing.T, dial func(func(*jsonrpc.Request) (any, error)) *mcptest.Client) {
		c := dial(nil)
		created := c.CreateTask("toolbox_slow_count", map[string]any{"to": 0}, map[string]any{}, nil)
		var res mcp.CallToolResult
		c.MustCall("tasks/result", map[string]any{"taskId": created.TaskID}, &res)
		if !res.IsError {
			t.Errorf("tasks/result = %+v, want the isError result itself", res)
		}
		got := c.Get(created.TaskID)
		if got.Status != "failed" || !strings.Contains(got.StatusMessage, "to must be between 1 and 1000") {
			t.Errorf("task = %s %q, want failed with the tool's message", got.Status, got.StatusMessage)
		}
	})
}

func TestTaskInputRequired(t *testing.T) {
	f := newFixture(t)
	transports(t, f, func(t *testing.T, dial func(func(*jsonrpc.Request) (any, error)) *mcptest.Client) {
		os.Remove(filepath.Join(f.notes, "task.txt"))
		asked := make(chan *jsonrpc.Request, 4)
		answer := make(chan struct{})
		c := dial(func(r *jsonrpc.Request) (any, error) {
			asked <- r
			<-answer
			return map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}, nil
		})
		created := c.CreateTask("toolbox_write_note", map[string]any{"name": "task.txt", "text": "from a task"}, map[string]any{}, nil)
		c.WaitStatus(created.TaskID, "input_required")
		// tasks/result, waiting, carries the request on its stream over HTTP.
		result := make(chan json.RawMessage, 1)
		go func() {
			raw, err := c.Call(context.Background(), "tasks/result", map[string]any{"taskId": created.TaskID})
			if err != nil {
				t.Errorf("tasks/result = %v", err)
			}
			result <- raw
		}()
		req := <-asked
		if req.Method != "elicitation/create" || !strings.Contains(string(req.Params), `"io.modelcontextprotocol/related-task":{"taskId":"`+created.TaskID+`"}`) {
			t.Errorf("server request %s %s, want elicitation/create with the related task", req.Method, req.Params)
		}
		close(answer)
		var res mcp.CallToolResult
		json.Unmarshal(<-result, &res)
		if b, _ := json.Marshal(res.Content); !strings.Contains(string(b), "Created note task.txt") {
			t.Errorf("result = %s", b)
		}
		if b, err := os.ReadFile(filepath.Join(f.notes, "task.txt")); err != nil || string(b) != "from a task" {
			t.Errorf("note = %q, %v", b, err)
		}
		if got := c.Get(created.TaskID); got.Status != "completed" {
			t.Errorf("status = %s, want completed", got.Status)
		}
	})
}

func TestTaskWithoutElicitationCapability(t *testing.T) {
	f := newFixture(t)
	c := mcptest.Dial(t, f.stream(t), nil) // declares no elicitation capability
	created := c.CreateTask("toolbox_write_note", map[string]any{"name": "x.txt", "text": "x"}, map[string]any{}, nil)
	var res mcp.CallToolResult
	c.MustCall("tasks/result", map[string]any{"taskId": created.TaskID}, &res)
	if b, _ := json.Marshal(res.Content); !strings.Contains(string(b), "nothing written") {
		t.Errorf("result = %s, want a clear failure, not a hang", b)
	}
}

func TestTaskCancel(t *testing.T) {
	f := newFixture(t)
	tool, _ := f.catalog.Lookup("toolbox_timer")
	note, _ := f.catalog.Lookup("toolbox_write_note")
	transports(t, f, func(t *testing.T, dial func(func(*jsonrpc.Request) (any, error)) *mcptest.Client) {
		block := make(chan struct{})
		defer close(block)
		c := dial(func(*jsonrpc.Request) (any, error) { <-block; return nil, context.Canceled })

		working := c.CreateTask("toolbox_timer", map[string]any{"seconds": 60}, map[string]any{}, nil)
		var cancelled mcptest.Task
		c.MustCall("tasks/cancel", map[string]any{"taskId": working.TaskID}, &cancelled)
		if cancelled.Status != "cancelled" {
			t.Errorf("tasks/cancel = %s, want cancelled", cancelled.Status)
		}
		if n := tool.Plugin.Module.Live(); n != 0 {
			t.Errorf("%d instances alive after cancel, want 0", n)
		}
		waiting := c.CreateTask("toolbox_write_note", map[string]any{"name": "c.txt", "text": "x"}, map[string]any{}, nil)
		c.WaitStatus(waiting.TaskID, "input_required")
		c.MustCall("tasks/cancel", map[string]any{"taskId": waiting.TaskID}, &cancelled)
		if n := note.Plugin.Module.Live(); n != 0 {
			t.Errorf("%d instances alive after cancelling at input_required, want 0", n)
		}
		if got := c.Get(waiting.TaskID); got.Status != "cancelled" {
			t.Errorf("status = %s, want cancelled", got.Status)
		}
		if err := c.CallErr("tasks/cancel", map[string]any{"taskId": waiting.TaskID}); err.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("cancel of a terminal task = %v, want -32602", err)
		}
		for _, m := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
			if err := c.CallErr(m, map[string]any{"taskId": "no-such-task"}); err.Code != jsonrpc.CodeInvalidParams {
				t.Errorf("%s(unknown) = %v, want -32602", m, err)
			}
		}
		if err := c.CallErr("tasks/result", map[string]any{"taskId": working.TaskID}); !strings.Contains(err.Message, "cancelled") {
			t.Errorf("tasks/result(cancelled) = %v", err)
		}
	})
}

func TestTaskListPagination(t *testing.T) {
	f := newFixtureWith(t, host.Options{Tasks: tasks.Options{MaxPerOwner: 1000}})
	c := mcptest.Dial(t, f.stream(t), nil)
	ids := map[string]bool{}
	for range 250 {
		ids[c.CreateTask("textkit_ping", map[string]any{}, map[string]any{}, nil).TaskID] = true
	}
	seen := map[string]bool{}
	cursor, pages := "", 0
	for {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		var page struct {
			Tasks      []mcptest.Task `json:"tasks"`
			NextCursor string         `json:"nextCursor"`
		}
		c.MustCall("tasks/list", params, &page)
		pages++
		for _, task := range page.Tasks {
			seen[task.TaskID] = true
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	if len(seen) != 250 || pages < 2 {
		t.Errorf("listed %d tasks in %d pages, want 250 over several", len(seen), pages)
	}
	if err := c.CallErr("tasks/list", map[string]any{"cursor": "garbage!"}); err.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("tasks/list(bad cursor) = %v, want -32602", err)
	}
}

func TestHTTPSessionsAreIsolated(t *testing.T) {
	f := newFixture(t)
	a, b := mcptest.Dial(t, f.httpTransport(), nil), mcptest.Dial(t, f.httpTransport(), nil)
	created := a.CreateTask("toolbox_timer", map[string]any{"seconds": 30}, map[string]any{}, nil)
	for _, m := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		if err := b.CallErr(m, map[string]any{"taskId": created.TaskID}); err.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("another session's %s = %v, want -32602 (not found)", m, err)
		}
	}
	var list struct {
		Tasks []mcptest.Task `json:"tasks"`
	}
	b.MustCall("tasks/list", map[string]any{}, &list)
	if len(list.Tasks) != 0 {
		t.Errorf("another session lists %d tasks, want 0", len(list.Tasks))
	}
	if got := a.Get(created.TaskID); got.Status != "working" {
		t.Errorf("owner's task = %s, want untouched", got.Status)
	}
	a.MustCall("tasks/cancel", map[string]any{"taskId": created.TaskID}, nil)
}

func TestTaskOutlivesDisconnect(t *testing.T) {
	f := newFixture(t)
	first := mcptest.Dial(t, f.stream(t), nil)
	created := first.CreateTask("toolbox_timer", map[string]any{"seconds": 1, "label": "still here"}, map[string]any{}, nil)
	first.Conn.Close() // the client goes away while the task runs
	second := mcptest.Dial(t, f.stream(t), nil)
	var res mcp.CallToolResult
	second.MustCall("tasks/result", map[string]any{"taskId": created.TaskID}, &res)
	if b, _ := json.Marshal(res.Content); !strings.Contains(string(b), "still here") {
		t.Errorf("result after reconnect = %s", b)
	}
}

func TestTaskTTLExpiry(t *testing.T) {
	f := newFixtureWith(t, host.Options{Tasks: tasks.Options{SweepEvery: 10 * time.Millisecond}})
	c := mcptest.Dial(t, f.stream(t), nil)
	created := c.CreateTask("textkit_ping", map[string]any{}, map[string]any{"ttl": 50}, nil)
	c.MustCall("tasks/result", map[string]any{"taskId": created.TaskID}, nil)
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := c.CallErr0("tasks/get", map[string]any{"taskId": created.TaskID})
		if err != nil && err.Code == jsonrpc.CodeInvalidParams {
			return // expired and purged
		}
		if time.Now().After(deadline) {
			t.Fatalf("task still there long after its 50 ms ttl")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestTaskSampling(t *testing.T) {
	f := newFixture(t)
	transports(t, f, func(t *testing.T, dial func(func(*jsonrpc.Request) (any, error)) *mcptest.Client) {
		c := dial(func(r *jsonrpc.Request) (any, error) {
			if r.Method == "sampling/createMessage" && strings.Contains(string(r.Params), "io.modelcontextprotocol/related-task") {
				return map[string]any{"role": "assistant", "model": "m", "content": map[string]any{"type": "text", "text": "summed up"}}, nil
			}
			return map[string]any{"action": "decline"}, nil
		})
		created := c.CreateTask("toolbox_summarize", map[string]any{"text": "long"}, map[string]any{}, nil)
		var res mcp.CallToolResult
		c.MustCall("tasks/result", map[string]any{"taskId": created.TaskID}, &res)
		if b, _ := json.Marshal(res.Content); !strings.Contains(string(b), "summed up") {
			t.Errorf("result = %s", b)
		}
	})
}
