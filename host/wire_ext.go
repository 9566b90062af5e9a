package host

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
)

// The Tasks extension io.modelcontextprotocol/tasks (SEP-2663), the Tasks of the MCP
// 2026-07-28 line: the server decides which calls become tasks; tasks/get inlines a
// task's result, error or pending requests for input; tasks/update answers those;
// tasks/cancel is acknowledged; tasks/result and tasks/list are gone. Two wires speak
// it: extWire on 2026-07-28 itself, and extSessionWire on a 2025-11-25 session,
// answered with what the 2025-11-25 schema requires of the messages both share.

// extensionID names the Tasks extension in capabilities.extensions.
const extensionID = "io.modelcontextprotocol/tasks"

// extWire is the Tasks extension on MCP 2026-07-28 (stateless): a request that
// declared the extension in its capabilities.
type extWire struct{}

func (extWire) stateless() bool   { return true }
func (extWire) roundTrips() bool  { return true }
func (extWire) pushesInput() bool { return false }

// taskParam ignores a legacy params.task: the server decides.
func (extWire) taskParam(*taskParams, error) (*taskParams, error) { return nil, nil }

// callTool makes a tool that may run as a task one at once, unless the guest says
// itself when (execution.taskStart "guest"); a tool that never runs as a task runs in
// the request. It renders through c.wire, so that extSessionWire, which shares it,
// answers as its own.
func (extWire) callTool(ctx context.Context, s *Server, req *mcp.CallToolRequest, t *plugins.Tool, c caller, _ *taskParams, next mcp.MethodHandler) (mcp.Result, error) {
	if t.TaskSupport == plugins.TaskForbidden {
		return c.complete(next(ctx, "tools/call", req))
	}
	if err := s.checkArguments(ctx, t, req.Params.Arguments); err != nil {
		return nil, invalidParams("%v", err)
	}
	if t.GuestStartsTask {
		return c.complete(s.callSync(ctx, req, t, c, true))
	}
	task, err := s.startTask(ctx, req, t, c, 0, nil)
	if err != nil {
		return nil, err
	}
	return c.wire.created(task), nil
}

func (extWire) created(t tasks.Task) mcp.Result { return toExt(t, "task") }

func (extWire) inputRequired(reqs mcp.InputRequestMap, state string) *inputRequiredResult {
	return &inputRequiredResult{ResultType: "input_required", InputRequests: reqs, RequestState: state}
}

func (extWire) listTools(r *mcp.ListToolsResult, _ *plugins.Catalog) mcp.Result { return r }

func (extWire) get(ctx context.Context, s *Server, c caller, p *taskIDParams) (mcp.Result, error) {
	d, err := extGet(ctx, s, c, p)
	if err != nil {
		return nil, err
	}
	return d, nil
}

func (extWire) cancel(ctx context.Context, s *Server, c caller, p *taskIDParams) (mcp.Result, error) {
	if _, err := extCancel(ctx, s, c, p); err != nil {
		return nil, err
	}
	return &ack{ResultType: "complete"}, nil
}

func (extWire) result(context.Context, *Server, *mcp.ServerSession, caller, *taskIDParams) (mcp.Result, error) {
	return nil, removedByExtension("tasks/result")
}

func (extWire) list(context.Context, *Server, caller, *listTasksParams) (mcp.Result, error) {
	return nil, removedByExtension("tasks/list")
}

// update answers pending input requests of a task: each key of inputResponses
// answers the request with that key. Keys that are unknown or already answered are
// ignored; a subset answers just those.
func (extWire) update(ctx context.Context, s *Server, c caller, p *updateParams) (mcp.Result, error) {
	if p == nil || p.TaskID == "" {
		return nil, invalidParams("taskId is required")
	}
	if p.InputResponses == nil {
		return nil, invalidParams("inputResponses is required: an object mapping input request keys to their results")
	}
	if _, err := s.tasks.Get(ctx, c.owner, p.TaskID); err != nil {
		return nil, taskError(err, p.TaskID)
	}
	for key, res := range p.InputResponses {
		s.tasks.Answer(c.owner, p.TaskID, key, tasks.Reply{Result: res})
	}
	return &ack{ResultType: "complete"}, nil
}

// extSessionWire is the Tasks extension on a 2025-11-25 session: one whose client
// chose it at initialize (extensionSession), or one request of a 2025-11-25 Tasks
// session that declared it for itself in _meta (optIn), whose session keeps
// tasks/result, tasks/list and execution.taskSupport in tools/list.
type extSessionWire struct {
	extWire
	optIn bool
}

func (extSessionWire) stateless() bool { return false }

// inputRequired carries the content a 2025-11-25 CallToolResult requires.
func (extSessionWire) inputRequired(reqs mcp.InputRequestMap, state string) *inputRequiredResult {
	return &inputRequiredResult{ResultType: "input_required", InputRequests: reqs, RequestState: state, Content: &[]mcp.Content{}}
}

func (w extSessionWire) listTools(r *mcp.ListToolsResult, catalog *plugins.Catalog) mcp.Result {
	if w.optIn {
		return wire2025{}.listTools(r, catalog)
	}
	return r
}

// get adds the ttl 2025-11-25's GetTaskResult requires.
func (extSessionWire) get(ctx context.Context, s *Server, c caller, p *taskIDParams) (mcp.Result, error) {
	d, err := extGet(ctx, s, c, p)
	if err != nil {
		return nil, err
	}
	d.TTL = &d.TTLMs
	return d, nil
}

// cancel's acknowledgement also carries what 2025-11-25's schema requires of a
// tasks/cancel result (CancelTaskResult: the task), so that the session's own SDKs
// and validators accept it.
func (extSessionWire) cancel(ctx context.Context, s *Server, c caller, p *taskIDParams) (mcp.Result, error) {
	t, err := extCancel(ctx, s, c, p)
	if err != nil {
		return nil, err
	}
	return &legacyAck{ResultType: "complete", wireTask: toWire(t)}, nil
}

func (w extSessionWire) result(ctx context.Context, s *Server, ss *mcp.ServerSession, c caller, p *taskIDParams) (mcp.Result, error) {
	if w.optIn {
		return wire2025{}.result(ctx, s, ss, c, p)
	}
	return w.extWire.result(ctx, s, ss, c, p)
}

func (w extSessionWire) list(ctx context.Context, s *Server, c caller, p *listTasksParams) (mcp.Result, error) {
	if w.optIn {
		return wire2025{}.list(ctx, s, c, p)
	}
	return w.extWire.list(ctx, s, c, p)
}

// extGet is the task as tasks/get answers it on the extension's wires.
func extGet(ctx context.Context, s *Server, c caller, p *taskIDParams) (*extTask, error) {
	id, err := taskIDOf(p)
	if err != nil {
		return nil, err
	}
	t, inputs, _, err := s.tasks.Watch(ctx, c.owner, id)
	if err != nil {
		return nil, taskError(err, id)
	}
	return detailed(t, inputs), nil
}

// extCancel cancels the task and returns it. Cancelling a finished task changes
// nothing and is acknowledged all the same.
func extCancel(ctx context.Context, s *Server, c caller, p *taskIDParams) (tasks.Task, error) {
	id, err := taskIDOf(p)
	if err != nil {
		return tasks.Task{}, err
	}
	t, err := s.tasks.Cancel(ctx, c.owner, id)
	if errors.Is(err, tasks.ErrTerminal) {
		t, err = s.tasks.Get(ctx, c.owner, id)
	}
	if err != nil {
		return tasks.Task{}, taskError(err, id)
	}
	return t, nil
}

// extTask is a task on the extension's wire: CreateTaskResult (resultType "task") and
// tasks/get's DetailedTask (resultType "complete", with result, error or
// inputRequests by status).
type extTask struct {
	mcp.ResultBase
	ResultType     string                  `json:"resultType"`
	TaskID         string                  `json:"taskId"`
	Status         string                  `json:"status"`
	StatusMessage  string                  `json:"statusMessage,omitempty"`
	CreatedAt      string                  `json:"createdAt"`
	LastUpdatedAt  string                  `json:"lastUpdatedAt"`
	TTLMs          int64                   `json:"ttlMs"`
	TTL            *int64                  `json:"ttl,omitempty"` // on a 2025-11-25 session (extSessionWire)
	PollIntervalMs int64                   `json:"pollIntervalMs,omitempty"`
	Result         json.RawMessage         `json:"result,omitempty"`
	Error          *tasks.Error            `json:"error,omitempty"`
	InputRequests  map[string]inputRequest `json:"inputRequests,omitempty"`
}

// inputRequest is a pending request for input as the extension shows it.
type inputRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

func toExt(t tasks.Task, resultType string) *extTask {
	return &extTask{
		ResultBase: mcp.ResultBase{Meta: logMeta(t.ID)},
		ResultType: resultType, TaskID: t.ID, Status: string(t.Status), StatusMessage: t.StatusMessage,
		CreatedAt: t.CreatedAt.Format(time.RFC3339Nano), LastUpdatedAt: t.LastUpdatedAt.Format(time.RFC3339Nano),
		TTLMs: t.TTL.Milliseconds(), PollIntervalMs: t.PollInterval.Milliseconds(),
	}
}

// detailed is t as tasks/get answers it on the extension's wire. The task model keeps
// one outcome for both lines; only its name differs: a tool result with isError is
// "failed" on 2025-11-25 and "completed" here (the request did complete).
func detailed(t tasks.Task, inputs []*tasks.Input) *extTask {
	d := toExt(t, "complete")
	switch {
	case t.Status == tasks.Failed && t.Error == nil && t.Result != nil:
		d.Status, d.StatusMessage, d.Result = string(tasks.Completed), "", completeRaw(t.Result)
	case t.Status == tasks.Completed:
		d.Result = completeRaw(t.Result)
	case t.Status == tasks.Failed && t.Error != nil:
		d.Error = t.Error
	case t.Status == tasks.Failed: // lost to a restart or shutdown
		d.Error = &tasks.Error{Code: jsonrpc.CodeInternalError, Message: t.StatusMessage}
	case t.Status == tasks.InputRequired && len(inputs) > 0:
		d.InputRequests = make(map[string]inputRequest, len(inputs))
		for _, in := range inputs {
			d.InputRequests[in.Key] = inputRequest{Method: in.Method, Params: in.Params}
		}
	}
	return d
}

// completeRaw is a stored result as the extension inlines it: with resultType
// "complete", as the request would have answered it.
func completeRaw(raw json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return raw
	}
	if _, ok := m["resultType"]; ok {
		return raw
	}
	m["resultType"] = json.RawMessage(`"complete"`)
	b, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return b
}

// ack is the empty answer of tasks/update and tasks/cancel on the extension's wire.
type ack struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
}

// legacyAck is the extension's tasks/cancel acknowledgement on a 2025-11-25 session.
type legacyAck struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
	wireTask
}
