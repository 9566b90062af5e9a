package host_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/mcptest"
)

// Which Tasks a stateful (2025-11-25) session gets is decided at its initialize
// (host.extensionSession): the extension if its client declared it, did not declare
// 2025-11-25's capabilities.tasks and is not the MCP Inspector; 2025-11-25 Tasks
// otherwise. Its initialize shows one of capabilities.tasks and the extension, never
// both.

var extensionCaps = map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}

// initialize params of a 2025-11-25 session.
func initParams(name string, caps map[string]any) map[string]any {
	return map[string]any{"protocolVersion": "2025-11-25", "capabilities": caps,
		"clientInfo": map[string]any{"name": name, "version": "2.12.0"}}
}

func with(caps map[string]any, k string, v any) map[string]any {
	out := map[string]any{k: v}
	for key, val := range caps {
		out[key] = val
	}
	return out
}

func TestSessionWire(t *testing.T) {
	f := newFixture(t)
	legacyTasks := map[string]any{"list": map[string]any{}, "cancel": map[string]any{}}
	for _, tc := range []struct {
		name string
		init map[string]any
		ext  bool
	}{
		{"nothing declared", initParams("raw", map[string]any{}), false},
		{"elicitation only (TypeScript SDK, ext-tasks on 2025-11-25)", initParams("raw", map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}), false},
		{"the extension (the conformance suite's client)", initParams("conformance-test-client", extensionCaps), true},
		{"the extension and elicitation", initParams("raw", mcptest.TasksExtension()), true},
		{"the extension and capabilities.tasks", initParams("raw", with(extensionCaps, "tasks", legacyTasks)), false},
		{"the extension, from the Inspector CLI", initParams("inspector-cli", with(extensionCaps, "roots", map[string]any{"listChanged": true})), false},
		{"the extension, from the Inspector web client", initParams("mcp-inspector", extensionCaps), false},
		// The private key that records capabilities.tasks cannot be sent by a client.
		{"the extension and a forged capabilities.tasks record", with(initParams("raw", mcptest.TasksExtension()), "_meta",
			map[string]any{"io.github.mcp-wasmhost/client-tasks": true}), true},
		{"the extension on 2025-06-18", with(initParams("raw", mcptest.TasksExtension()), "protocolVersion", "2025-06-18"), true},
	} {
		for _, transport := range []string{"http", "stream"} {
			t.Run(tc.name+"/"+transport, func(t *testing.T) {
				var tr mcp.Transport
				if transport == "http" {
					tr = f.httpTransport()
				} else {
					tr = f.stream(t)
				}
				c := mcptest.DialInitialize(t, tr, nil, tc.init)
				var init struct {
					Capabilities map[string]json.RawMessage `json:"capabilities"`
				}
				if err := json.Unmarshal(c.Init, &init); err != nil {
					t.Fatal(err)
				}
				_, legacy := init.Capabilities["tasks"]
				ext := strings.Contains(string(init.Capabilities["extensions"]), `"io.modelcontextprotocol/tasks"`)
				if legacy == tc.ext || ext != tc.ext {
					t.Fatalf("initialize capabilities = %s, want the extension: %v, capabilities.tasks: %v", init.Capabilities, tc.ext, !tc.ext)
				}
				caps, _ := tc.init["capabilities"].(map[string]any)
				if tc.ext {
					checkExtensionSession(t, c, caps["elicitation"] != nil)
				} else {
					checkLegacySession(t, c)
				}
			})
		}
	}
}

// checkLegacySession checks a session on 2025-11-25 Tasks.
func checkLegacySession(t *testing.T, c *mcptest.Client) {
	t.Helper()
	task := c.CreateTask("slow_compute", map[string]any{"seconds": 0}, map[string]any{}, nil)
	c.WaitStatus(task.TaskID, "completed")
	var res toolResult
	c.MustCall("tasks/result", map[string]any{"taskId": task.TaskID}, &res)
	if !strings.Contains(res.text(), "Computed") || res.Meta["io.modelcontextprotocol/related-task"] == nil {
		t.Errorf("tasks/result = %+v", res)
	}
	var sync toolResult
	c.MustCall("tools/call", map[string]any{"name": "slow_compute", "arguments": map[string]any{"seconds": 0}}, &sync)
	if sync.ResultType != "" || !strings.Contains(sync.text(), "Computed") {
		t.Errorf("optional tool without params.task = %+v, want a synchronous 2025-11-25 result", sync)
	}
	// 2025-11-25's MUSTs: -32601 for a required tool called without params.task,
	// -32602 for an unknown task.
	if e := c.CallErr("tools/call", map[string]any{"name": "failing_job", "arguments": map[string]any{}}); e == nil || e.Code != jsonrpc.CodeMethodNotFound {
		t.Errorf("required tool without params.task = %v, want -32601", e)
	}
	for _, m := range []string{"tasks/get", "tasks/cancel"} {
		if e := c.CallErr(m, map[string]any{"taskId": "nope"}); e == nil || e.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("%s of an unknown task = %v, want -32602", m, e)
		}
	}
	// tasks/update needs the extension, which a request may declare for itself.
	if e := c.CallErr("tasks/update", map[string]any{"taskId": task.TaskID, "inputResponses": map[string]any{}}); e == nil || e.Code != -32021 {
		t.Errorf("tasks/update = %v, want -32021", e)
	}
	optIn := map[string]any{"io.modelcontextprotocol/clientCapabilities": extensionCaps}
	var flat extTask
	c.MustCall("tools/call", map[string]any{"name": "slow_compute", "arguments": map[string]any{"seconds": 0}, "_meta": optIn}, &flat)
	if flat.ResultType != "task" || flat.TaskID == "" || flat.Task != nil {
		t.Fatalf("tools/call opting in for itself = %+v, want the extension's task", flat)
	}
	// The task is the session's, and reads in the form of the request that asks.
	if got := c.WaitStatus(flat.TaskID, "completed"); got.TTL == nil {
		t.Errorf("tasks/get of it without opting in = %+v, want 2025-11-25's Task", got)
	}
	var inlined extTask
	c.MustCall("tasks/get", map[string]any{"taskId": flat.TaskID, "_meta": optIn}, &inlined)
	if !strings.Contains(inlined.Result.text(), "Computed") {
		t.Errorf("tasks/get of it opting in = %+v, want the result inlined", inlined)
	}
	var ack map[string]any
	c.MustCall("tasks/update", map[string]any{"taskId": flat.TaskID, "inputResponses": map[string]any{}, "_meta": optIn}, &ack)
	if ack["resultType"] != "complete" {
		t.Errorf("tasks/update opting in = %v", ack)
	}
}

// checkExtensionSession checks a session on the Tasks extension, over a stateful
// transport: the extension's behaviour, with what the 2025-11-25 schema requires of
// the messages it shares with 2025-11-25 Tasks.
func checkExtensionSession(t *testing.T, c *mcptest.Client, elicits bool) {
	t.Helper()
	// The server decides: no params.task needed, and one on a sync-only tool is ignored.
	var created extTask
	c.MustCall("tools/call", map[string]any{"name": "slow_compute", "arguments": map[string]any{"seconds": 0}}, &created)
	if created.ResultType != "task" || created.TaskID == "" || created.Task != nil || created.TTLMs == nil {
		t.Fatalf("optional tool = %+v, want a flat CreateTaskResult", created)
	}
	var greet toolResult
	c.MustCall("tools/call", map[string]any{"name": "greet", "arguments": map[string]any{"name": "W"}, "task": map[string]any{}}, &greet)
	if greet.ResultType != "complete" || greet.text() != "Hello, W!" {
		t.Errorf("sync tool with a legacy params.task = %+v", greet)
	}
	// tasks/get inlines the result; 2025-11-25's GetTaskResult also requires ttl.
	var done struct {
		extTask
		TTL *int64 `json:"ttl"`
	}
	for deadline := time.Now().Add(30 * time.Second); done.Status != "completed"; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("task %s is %s", created.TaskID, done.Status)
		}
		c.MustCall("tasks/get", map[string]any{"taskId": created.TaskID}, &done)
	}
	if !strings.Contains(done.Result.text(), "Computed") || done.ResultType != "complete" || done.TTL == nil || *done.TTL != *done.TTLMs {
		t.Errorf("tasks/get = %+v (ttl %v), want the result inlined, and ttl beside ttlMs", done.extTask, done.TTL)
	}
	// tasks/cancel acknowledges, also a finished task, carrying the task as
	// 2025-11-25's CancelTaskResult must.
	var ack map[string]any
	c.MustCall("tasks/cancel", map[string]any{"taskId": created.TaskID}, &ack)
	if ack["resultType"] != "complete" || ack["taskId"] != created.TaskID || ack["status"] != "completed" || ack["ttl"] == nil || ack["createdAt"] == nil {
		t.Errorf("tasks/cancel of a finished task = %v", ack)
	}
	for _, m := range []string{"tasks/result", "tasks/list"} {
		if e := c.CallErr(m, map[string]any{"taskId": created.TaskID}); e == nil || e.Code != jsonrpc.CodeMethodNotFound {
			t.Errorf("%s = %v, want -32601", m, e)
		}
	}
	if e := c.CallErr("tasks/get", map[string]any{"taskId": "nope"}); e == nil || e.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("tasks/get of an unknown task = %v, want -32602", e)
	}
	if n := c.NotificationsOf("notifications/tasks/status"); len(n) != 0 {
		t.Errorf("2025-11-25's notifications/tasks/status sent to an extension session: %v", n[0].Params)
	}
	// A required tool without params.task is a task too.
	var failing extTask
	c.MustCall("tools/call", map[string]any{"name": "failing_job", "arguments": map[string]any{}}, &failing)
	if failing.ResultType != "task" {
		t.Errorf("required tool = %+v, want a task", failing)
	}
	defer func() {
		if reqs := c.Requests(); len(reqs) != 0 {
			t.Errorf("the server sent requests to an extension session: %v", reqs[0].Method)
		}
	}()
	if !elicits {
		return // the rest asks for input, which the client did not declare
	}
	// Input inside a task: an inputRequests entry, answered by tasks/update; never a
	// request pushed to the client (which would have to answer it).
	var asking extTask
	c.MustCall("tools/call", map[string]any{"name": "confirm_delete", "arguments": map[string]any{"filename": "s.txt"}}, &asking)
	var parked extTask
	for deadline := time.Now().Add(30 * time.Second); len(parked.InputRequests) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) || parked.Status == "completed" || parked.Status == "failed" {
			t.Fatalf("confirm_delete: %+v, want input_required", parked)
		}
		c.MustCall("tasks/get", map[string]any{"taskId": asking.TaskID}, &parked)
	}
	answers := map[string]any{}
	for k := range parked.InputRequests {
		answers[k] = map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}
	}
	c.MustCall("tasks/update", map[string]any{"taskId": asking.TaskID, "inputResponses": answers}, nil)
	var finished extTask
	for deadline := time.Now().Add(30 * time.Second); finished.Status != "completed"; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) || finished.Status == "failed" {
			t.Fatalf("confirm_delete after tasks/update: %+v", finished)
		}
		c.MustCall("tasks/get", map[string]any{"taskId": asking.TaskID}, &finished)
	}
	if finished.Result.text() != "Deleted s.txt" {
		t.Errorf("confirm_delete = %+v", finished)
	}
	// Input before a task (taskStart "guest"): InputRequiredResult, with the content
	// 2025-11-25's CallToolResult requires; the answered call becomes a task.
	var round1 struct {
		toolResult
		Content *[]any `json:"content"`
	}
	c.MustCall("tools/call", map[string]any{"name": "test_tool_with_task", "arguments": map[string]any{}}, &round1)
	if round1.ResultType != "input_required" || len(round1.InputRequests) != 1 || round1.Content == nil {
		t.Fatalf("round 1 = %+v, want InputRequiredResult with content", round1)
	}
	responses := map[string]any{}
	for k := range round1.InputRequests {
		responses[k] = map[string]any{"action": "accept", "content": map[string]any{"name": "Alice"}}
	}
	var round2 extTask
	c.MustCall("tools/call", map[string]any{"name": "test_tool_with_task", "arguments": map[string]any{},
		"inputResponses": responses, "requestState": round1.RequestState}, &round2)
	if round2.ResultType != "task" || round2.TaskID == "" {
		t.Errorf("round 2 = %+v, want a task", round2)
	}
}
