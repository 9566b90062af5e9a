package host_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/mcptest"
)

// extTask is a task on the Tasks extension's wire (CreateTaskResult, DetailedTask).
type extTask struct {
	ResultType     string                     `json:"resultType"`
	TaskID         string                     `json:"taskId"`
	Status         string                     `json:"status"`
	StatusMessage  string                     `json:"statusMessage"`
	TTLMs          *int64                     `json:"ttlMs"`
	PollIntervalMs int64                      `json:"pollIntervalMs"`
	Result         *toolResult                `json:"result"`
	Error          *jsonrpc.Error             `json:"error"`
	InputRequests  map[string]json.RawMessage `json:"inputRequests"`
	RequestState   *string                    `json:"requestState"`
	Task           json.RawMessage            `json:"task"`
}

type toolResult struct {
	ResultType string `json:"resultType"`
	Content    []struct {
		Text string `json:"text"`
	} `json:"content"`
	IsError       bool                       `json:"isError"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	RequestState  string                     `json:"requestState"`
	Meta          map[string]any             `json:"_meta"`
}

func (r *toolResult) text() string {
	if r == nil {
		return ""
	}
	var parts []string
	for _, c := range r.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "\n")
}

// must sends a request that must succeed and decodes its result into out.
func must(t *testing.T, c *mcptest.Stateless, method string, params map[string]any, out any) {
	t.Helper()
	r, err := c.Call(method, params, nil)
	if err != nil {
		t.Fatalf("%s(%v) = %v", method, params, err)
	}
	if r.Error != nil {
		t.Fatalf("%s(%v) = error %d %s", method, params, r.Error.Code, r.Error.Message)
	}
	if out != nil {
		if err := json.Unmarshal(r.Result, out); err != nil {
			t.Fatalf("%s: decode %s: %v", method, r.Result, err)
		}
	}
}

// mustFail sends a request that must fail with code and returns the error.
func mustFail(t *testing.T, c *mcptest.Stateless, method string, params map[string]any, header map[string]*string, code int64) *jsonrpc.Error {
	t.Helper()
	r, err := c.Call(method, params, header)
	if err != nil {
		t.Fatalf("%s(%v) = %v", method, params, err)
	}
	if r.Error == nil || r.Error.Code != code {
		t.Fatalf("%s(%v) = %s, %v; want error %d", method, params, r.Result, r.Error, code)
	}
	return r.Error
}

func extCreate(t *testing.T, c *mcptest.Stateless, tool string, args map[string]any) extTask {
	t.Helper()
	var task extTask
	must(t, c, "tools/call", map[string]any{"name": tool, "arguments": args}, &task)
	if task.ResultType != "task" || task.TaskID == "" || task.Task != nil || task.RequestState != nil {
		t.Fatalf("tools/call(%s) = %+v, want a flat CreateTaskResult", tool, task)
	}
	return task
}

// extWait polls tasks/get until the task's status is one of want.
func extWait(t *testing.T, c *mcptest.Stateless, id string, want ...string) extTask {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var task extTask
		must(t, c, "tasks/get", map[string]any{"taskId": id}, &task)
		for _, w := range want {
			if task.Status == w {
				return task
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s is %s (%s), want %v", id, task.Status, task.StatusMessage, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestExtCapabilities(t *testing.T) {
	f := newFixture(t)
	c := &mcptest.Stateless{URL: f.url, Caps: mcptest.TasksExtension()}
	var disc struct {
		Capabilities map[string]json.RawMessage `json:"capabilities"`
		Supported    []string                   `json:"supportedVersions"`
	}
	must(t, c, "server/discover", nil, &disc)
	if _, ok := disc.Capabilities["tasks"]; ok || !strings.Contains(string(disc.Capabilities["extensions"]), `"io.modelcontextprotocol/tasks"`) {
		t.Errorf("server/discover capabilities = %s, want the extension and no capabilities.tasks", disc.Capabilities)
	}
	if len(disc.Supported) == 0 || disc.Supported[0] != "2026-07-28" {
		t.Errorf("supportedVersions = %v", disc.Supported)
	}
	// Which stateful sessions get the extension: session_test.go.
}

func TestExtLifecycle(t *testing.T) {
	f := newFixture(t)
	c := &mcptest.Stateless{URL: f.url, Caps: mcptest.TasksExtension()}

	var sync toolResult
	must(t, c, "tools/call", map[string]any{"name": "greet", "arguments": map[string]any{"name": "W"}, "task": map[string]any{"ttl": 1000}}, &sync)
	if sync.ResultType != "complete" || sync.text() != "Hello, W!" {
		t.Errorf("greet (a legacy task param is ignored) = %+v", sync)
	}

	task := extCreate(t, c, "slow_compute", map[string]any{"seconds": 0.05, "label": "x"})
	if task.TTLMs == nil || *task.TTLMs <= 0 || task.PollIntervalMs <= 0 || task.Status != "working" {
		t.Errorf("CreateTaskResult = %+v", task)
	}
	done := extWait(t, c, task.TaskID, "completed")
	if done.ResultType != "complete" || !strings.Contains(done.Result.text(), `Computed "x"`) || done.Error != nil {
		t.Errorf("completed task = %+v", done)
	}
	if _, ok := done.Result.Meta["io.modelcontextprotocol/related-task"]; ok {
		t.Error("inlined result carries the related-task _meta")
	}

	// A tool result with isError completes on this line; a protocol error fails.
	failing := extWait(t, c, extCreate(t, c, "failing_job", nil).TaskID, "completed", "failed")
	if failing.Status != "completed" || failing.Result == nil || !failing.Result.IsError {
		t.Errorf("failing_job task = %+v, want completed with isError", failing)
	}
	perr := extWait(t, c, extCreate(t, c, "protocol_error_job", nil).TaskID, "completed", "failed")
	if perr.Status != "failed" || perr.Error == nil || perr.Error.Code != -32603 || perr.Result != nil {
		t.Errorf("protocol_error_job task = %+v, want failed with error -32603", perr)
	}

	// Cancel: an empty ack, for a running and for a finished task alike.
	long := extCreate(t, c, "slow_compute", map[string]any{"seconds": 60})
	for i := 0; i < 2; i++ {
		var ack map[string]any
		must(t, c, "tasks/cancel", map[string]any{"taskId": long.TaskID}, &ack)
		delete(ack, "_meta") // the SDK's serverInfo
		if len(ack) != 1 || ack["resultType"] != "complete" {
			t.Errorf("tasks/cancel #%d = %v, want {resultType: complete}", i+1, ack)
		}
	}
	if got := extWait(t, c, long.TaskID, "cancelled", "completed", "failed"); got.Status != "cancelled" {
		t.Errorf("cancelled task = %+v", got)
	}

	for _, m := range []string{"tasks/result", "tasks/list"} {
		mustFail(t, c, m, map[string]any{"taskId": task.TaskID}, nil, jsonrpc.CodeMethodNotFound)
	}
	mustFail(t, c, "tasks/get", map[string]any{"taskId": "no-such-task"}, nil, jsonrpc.CodeInvalidParams)
	mustFail(t, c, "tasks/cancel", map[string]any{"taskId": "no-such-task"}, nil, jsonrpc.CodeInvalidParams)
}

func TestExtInputRequests(t *testing.T) {
	f := newFixture(t)
	c := &mcptest.Stateless{URL: f.url, Caps: mcptest.TasksExtension()}

	task := extCreate(t, c, "confirm_delete", map[string]any{"filename": "a.txt"})
	asked := extWait(t, c, task.TaskID, "input_required")
	if len(asked.InputRequests) != 1 {
		t.Fatalf("inputRequests = %v, want one", asked.InputRequests)
	}
	var key string
	for k, v := range asked.InputRequests {
		key = k
		if !strings.Contains(string(v), `"method":"elicitation/create"`) || !strings.Contains(string(v), "Delete a.txt?") {
			t.Errorf("inputRequests[%s] = %s", k, v)
		}
	}
	var ack map[string]any
	must(t, c, "tasks/update", map[string]any{"taskId": task.TaskID, "inputResponses": map[string]any{"unknown-key": map[string]any{"action": "accept"}}}, &ack)
	delete(ack, "_meta")
	if ack["resultType"] != "complete" || len(ack) != 1 {
		t.Errorf("tasks/update = %v", ack)
	}
	if got := extWait(t, c, task.TaskID, "input_required", "working", "completed"); got.Status != "input_required" {
		t.Errorf("after an unknown key the task is %s, want input_required", got.Status)
	}
	must(t, c, "tasks/update", map[string]any{"taskId": task.TaskID, "inputResponses": map[string]any{
		key: map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}}, nil)
	if got := extWait(t, c, task.TaskID, "completed", "failed"); got.Result.text() != "Deleted a.txt" {
		t.Errorf("confirm_delete = %+v", got)
	}
	// The key was answered: answering it again changes nothing.
	must(t, c, "tasks/update", map[string]any{"taskId": task.TaskID, "inputResponses": map[string]any{
		key: map[string]any{"action": "decline"}}}, nil)

	// Two requests pending at once, answered one at a time.
	multi := extCreate(t, c, "multi_input", nil)
	var both extTask
	for deadline := time.Now().Add(30 * time.Second); len(both.InputRequests) < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("multi_input: %+v, want two input requests", both)
		}
		must(t, c, "tasks/get", map[string]any{"taskId": multi.TaskID}, &both)
	}
	var keys []string
	for k := range both.InputRequests {
		keys = append(keys, k)
	}
	answers := map[string]any{}
	for _, k := range keys {
		var req struct {
			Params struct {
				Message string `json:"message"`
			} `json:"params"`
		}
		json.Unmarshal(both.InputRequests[k], &req)
		if strings.Contains(req.Params.Message, "name") {
			answers[k] = map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}
		} else {
			answers[k] = map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}
		}
	}
	must(t, c, "tasks/update", map[string]any{"taskId": multi.TaskID, "inputResponses": map[string]any{keys[0]: answers[keys[0]]}}, nil)
	var half extTask
	must(t, c, "tasks/get", map[string]any{"taskId": multi.TaskID}, &half)
	if _, still := half.InputRequests[keys[0]]; half.Status != "input_required" || still || half.InputRequests[keys[1]] == nil {
		t.Errorf("after one answer: %+v, want input_required with only %s", half, keys[1])
	}
	must(t, c, "tasks/update", map[string]any{"taskId": multi.TaskID, "inputResponses": map[string]any{keys[1]: answers[keys[1]]}}, nil)
	got := extWait(t, c, multi.TaskID, "completed", "failed")
	if txt := got.Result.text(); !strings.Contains(txt, "1: accept map[name:Ada]") || !strings.Contains(txt, "2: accept map[confirm:true]") {
		t.Errorf("multi_input = %q", txt)
	}
}

func TestExtWithoutExtension(t *testing.T) {
	f := newFixture(t)
	c := &mcptest.Stateless{URL: f.url, Caps: map[string]any{"elicitation": map[string]any{}}}
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		mustFail(t, c, m, map[string]any{"taskId": "x", "inputResponses": map[string]any{}}, nil, -32021)
	}
	e := mustFail(t, c, "tools/call", map[string]any{"name": "failing_job", "arguments": map[string]any{}}, nil, -32021)
	if !strings.Contains(string(e.Data), `"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}`) {
		t.Errorf("-32021 data = %s", e.Data)
	}
	var res toolResult
	must(t, c, "tools/call", map[string]any{"name": "slow_compute", "arguments": map[string]any{"seconds": 0}}, &res)
	if res.ResultType != "complete" || !strings.Contains(res.text(), "Computed") {
		t.Errorf("optional tool without the extension = %+v, want a synchronous result", res)
	}
	// Opting in for one request only.
	var task extTask
	must(t, c, "tools/call", map[string]any{"name": "slow_compute", "arguments": map[string]any{"seconds": 0},
		"_meta": map[string]any{"io.modelcontextprotocol/clientCapabilities": mcptest.TasksExtension()}}, &task)
	if task.ResultType != "task" || task.TaskID == "" {
		t.Errorf("per-request opt-in = %+v, want a task", task)
	}
}

func TestExtHeaders(t *testing.T) {
	f := newFixture(t)
	c := &mcptest.Stateless{URL: f.url, Caps: mcptest.TasksExtension()}
	task := extCreate(t, c, "slow_compute", map[string]any{"seconds": 0})
	wrong := "someone-else"
	getMethod := "tasks/get"
	mustFail(t, c, "tasks/get", map[string]any{"taskId": task.TaskID}, map[string]*string{"Mcp-Name": &wrong}, -32020)
	mustFail(t, c, "tools/call", map[string]any{"name": "greet", "arguments": map[string]any{"name": "x"}}, map[string]*string{"Mcp-Method": &getMethod}, -32020)
	padded := "  " + task.TaskID + " "
	var ok extTask
	r, err := c.Call("tasks/get", map[string]any{"taskId": task.TaskID}, map[string]*string{"Mcp-Name": &padded})
	if err != nil || r.Error != nil || json.Unmarshal(r.Result, &ok) != nil || ok.TaskID != task.TaskID {
		t.Errorf("tasks/get with a padded Mcp-Name = %v, %v", r, err)
	}
}

// TestTaskIsolationAcrossLines: a task is its requester's on either wire; another
// requester cannot read it through either.
func TestTaskIsolationAcrossLines(t *testing.T) {
	f := newFixture(t)
	stateless := &mcptest.Stateless{URL: f.url, Caps: mcptest.TasksExtension()}
	a := mcptest.Dial(t, f.httpTransport(), nil) // 2025-11-25 sessions
	b := mcptest.Dial(t, f.httpTransport(), nil)
	local := mcptest.Dial(t, f.stream(t), nil) // the stdio user

	legacy := a.CreateTask("slow_compute", map[string]any{"seconds": 0}, map[string]any{}, nil)
	ext := extCreate(t, stateless, "slow_compute", map[string]any{"seconds": 0})
	extWait(t, stateless, ext.TaskID, "completed")
	for _, id := range []string{legacy.TaskID} {
		mustFail(t, stateless, "tasks/get", map[string]any{"taskId": id}, nil, jsonrpc.CodeInvalidParams)
		mustFail(t, stateless, "tasks/cancel", map[string]any{"taskId": id}, nil, jsonrpc.CodeInvalidParams)
		mustFail(t, stateless, "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{}}, nil, jsonrpc.CodeInvalidParams)
	}
	for _, other := range []*mcptest.Client{a, b, local} {
		for _, m := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
			if e := other.CallErr(m, map[string]any{"taskId": ext.TaskID}); e.Code != jsonrpc.CodeInvalidParams {
				t.Errorf("%s of a stateless task from a 2025-11-25 session = %v, want -32602", m, e)
			}
		}
	}
	for _, other := range []*mcptest.Client{b, local} {
		if e := other.CallErr("tasks/get", map[string]any{"taskId": legacy.TaskID}); e.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("tasks/get of session A's task from another requester = %v", e)
		}
	}
	// The same outcome, each line's name for it: isError is failed on 2025-11-25.
	failing := a.CreateTask("failing_job", nil, map[string]any{}, nil)
	if got := a.WaitStatus(failing.TaskID, "failed"); !strings.Contains(got.StatusMessage, "tool returned an error") {
		t.Errorf("failing_job on 2025-11-25 = %+v", got)
	}
}

// TestMultiRoundTrip: a synchronous call on 2026-07-28 asks for input through
// InputRequiredResult, and its request state cannot be forged, replayed or moved to
// another call.
func TestMultiRoundTrip(t *testing.T) {
	f := newFixture(t)
	c := &mcptest.Stateless{URL: f.url, Caps: map[string]any{"elicitation": map[string]any{}}}
	call := func(args map[string]any, responses map[string]any, state string) (*mcptest.Response, toolResult) {
		t.Helper()
		p := map[string]any{"name": "confirm_delete", "arguments": args}
		if responses != nil {
			p["inputResponses"] = responses
		}
		if state != "" {
			p["requestState"] = state
		}
		r, err := c.Call("tools/call", p, nil)
		if err != nil {
			t.Fatal(err)
		}
		var res toolResult
		if r.Result != nil {
			json.Unmarshal(r.Result, &res)
		}
		return r, res
	}
	args := map[string]any{"filename": "b.txt"}
	_, round1 := call(args, nil, "")
	if round1.ResultType != "input_required" || len(round1.InputRequests) != 1 || round1.RequestState == "" || round1.Content != nil {
		t.Fatalf("round 1 = %+v, want InputRequiredResult", round1)
	}
	var key string
	for k := range round1.InputRequests {
		key = k
	}
	yes := map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}
	// Arguments re-encoded in another key order still match.
	_, round2 := call(map[string]any{"filename": "b.txt"}, yes, round1.RequestState)
	if round2.ResultType != "complete" || round2.text() != "Deleted b.txt" {
		t.Fatalf("round 2 = %+v", round2)
	}

	fresh := func() string {
		_, r := call(args, nil, "")
		return r.RequestState
	}
	forged := []byte(fresh())
	forged[len(forged)/3] ^= 1
	tests := []struct {
		name  string
		args  map[string]any
		resp  map[string]any
		state string
		want  string
	}{
		{"replayed", args, yes, round1.RequestState, "already used"},
		{"forged", args, yes, string(forged), "not issued by this server"},
		{"not base64", args, yes, "junk", "not issued by this server"},
		{"other arguments", map[string]any{"filename": "c.txt"}, yes, fresh(), "another call"},
		{"answer of the wrong kind", args, map[string]any{key: map[string]any{"roots": []any{}}}, fresh(), "inputResponses"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := call(tt.args, tt.resp, tt.state)
			if r.Error == nil || r.Error.Code != jsonrpc.CodeInvalidParams || !strings.Contains(r.Error.Message, tt.want) {
				t.Errorf("tools/call = %s, %v; want -32602 %q", r.Result, r.Error, tt.want)
			}
		})
	}
	// A missing answer is asked again, under the same key; unknown keys are ignored.
	_, again := call(args, map[string]any{"other": map[string]any{"action": "accept"}}, fresh())
	if again.ResultType != "input_required" || again.InputRequests[key] == nil || again.RequestState == "" {
		t.Errorf("round without the answer = %+v, want the same request again", again)
	}
	// Answers without requestState are a first round's (SEP-2322).
	if _, first := call(args, yes, ""); first.ResultType != "complete" || first.text() != "Deleted b.txt" {
		t.Errorf("answers without requestState = %+v", first)
	}
	// A state issued for one tool does not work for another.
	r, err := c.Call("tools/call", map[string]any{"name": "multi_input", "arguments": map[string]any{},
		"inputResponses": yes, "requestState": fresh()}, nil)
	if err != nil || r.Error == nil || !strings.Contains(r.Error.Message, "another call") {
		t.Errorf("state of confirm_delete on multi_input = %v, %v", r, err)
	}

	// Two questions at once, then answered together.
	r, err = c.Call("tools/call", map[string]any{"name": "multi_input", "arguments": map[string]any{}}, nil)
	var m1 toolResult
	if err != nil || r.Error != nil || json.Unmarshal(r.Result, &m1) != nil || len(m1.InputRequests) != 2 {
		t.Fatalf("multi_input round 1 = %v, %v", r, err)
	}
	both := map[string]any{}
	for k := range m1.InputRequests {
		both[k] = map[string]any{"action": "decline"}
	}
	r, _ = c.Call("tools/call", map[string]any{"name": "multi_input", "arguments": map[string]any{},
		"inputResponses": both, "requestState": m1.RequestState}, nil)
	var m2 toolResult
	json.Unmarshal(r.Result, &m2)
	if m2.ResultType != "complete" || !strings.Contains(m2.text(), "1: decline") || !strings.Contains(m2.text(), "2: decline") {
		t.Errorf("multi_input round 2 = %s %v", r.Result, r.Error)
	}
}

// TestGuestStartsTask: the guest asks first (multi round-trip), then moves the call
// into a task whose result uses the answer.
func TestGuestStartsTask(t *testing.T) {
	f := newFixture(t)
	c := &mcptest.Stateless{URL: f.url, Caps: mcptest.TasksExtension()}
	var round1 toolResult
	must(t, c, "tools/call", map[string]any{"name": "test_tool_with_task", "arguments": map[string]any{}}, &round1)
	if round1.ResultType != "input_required" || len(round1.InputRequests) != 1 {
		t.Fatalf("round 1 = %+v", round1)
	}
	resp := map[string]any{}
	for k := range round1.InputRequests {
		resp[k] = map[string]any{"action": "accept", "content": map[string]any{"name": "Alice"}}
	}
	var task extTask
	must(t, c, "tools/call", map[string]any{"name": "test_tool_with_task", "arguments": map[string]any{},
		"inputResponses": resp, "requestState": round1.RequestState}, &task)
	if task.ResultType != "task" || task.TaskID == "" || task.RequestState != nil || task.InputRequests != nil {
		t.Fatalf("round 2 = %+v, want a CreateTaskResult", task)
	}
	got := extWait(t, c, task.TaskID, "completed", "failed", "cancelled")
	if got.Status != "completed" || !strings.Contains(got.Result.text(), "Hello, Alice!") {
		t.Errorf("task = %+v", got)
	}
	// Cancelling such a task stops the guest it took over.
	var again toolResult
	must(t, c, "tools/call", map[string]any{"name": "test_tool_with_task", "arguments": map[string]any{}}, &again)
	for k := range again.InputRequests {
		resp = map[string]any{k: map[string]any{"action": "accept", "content": map[string]any{"name": "Bob"}}}
	}
	must(t, c, "tools/call", map[string]any{"name": "test_tool_with_task", "arguments": map[string]any{},
		"inputResponses": resp, "requestState": again.RequestState}, &task)
	must(t, c, "tasks/cancel", map[string]any{"taskId": task.TaskID}, nil)
	if got := extWait(t, c, task.TaskID, "cancelled", "completed", "failed"); got.Status != "cancelled" {
		t.Errorf("cancelled guest-started task = %+v", got)
	}
}
