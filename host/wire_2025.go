package host

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
)

// wire2025 is MCP 2025-11-25 Tasks, on a session (stdio or stateful Streamable HTTP):
// the client asks for a task with params.task, within what the tool's
// execution.taskSupport allows; a task's requests for input are pushed to the client
// (and carried by a waiting tasks/result); tasks/get, tasks/result, tasks/list and
// tasks/cancel answer for it; tasks/update is the extension's (-32021).
type wire2025 struct{}

// statusFlushWait bounds how long tasks/result waits for the task's last status
// notification to be written before it answers.
const statusFlushWait = time.Second

// relatedTaskKey is the _meta key that ties a message to its task (MCP 2025-11-25).
const relatedTaskKey = "io.modelcontextprotocol/related-task"

func (wire2025) stateless() bool   { return false }
func (wire2025) roundTrips() bool  { return false }
func (wire2025) pushesInput() bool { return true }

func (wire2025) taskParam(tp *taskParams, err error) (*taskParams, error) {
	if err != nil {
		return nil, invalidParams("%v", err)
	}
	return tp, nil
}

// callTool runs the call in the request, or as a task when params.task asks for
// one, by the tool's execution.taskSupport.
func (w wire2025) callTool(ctx context.Context, s *Server, req *mcp.CallToolRequest, t *plugins.Tool, c caller, tp *taskParams, next mcp.MethodHandler) (mcp.Result, error) {
	switch {
	case tp != nil && t.TaskSupport == plugins.TaskForbidden:
		return nil, methodNotFound("tool %q does not support task execution; call it without params.task", t.Name)
	case tp == nil && t.TaskSupport == plugins.TaskRequired:
		return nil, methodNotFound("tool %q must be called as a task (execution.taskSupport is required); add params.task", t.Name)
	case tp == nil:
		return next(ctx, "tools/call", req)
	}
	if err := s.checkArguments(ctx, t, req.Params.Arguments); err != nil {
		return nil, invalidParams("%v", err)
	}
	var ttl time.Duration
	if tp.TTL != nil {
		// Saturate instead of overflowing; the manager clamps to max_ttl.
		ttl = time.Duration(min(*tp.TTL, math.MaxInt64/int64(time.Millisecond))) * time.Millisecond
	}
	task, err := s.startTask(ctx, req, t, c, ttl, nil)
	if err != nil {
		return nil, err
	}
	return w.created(task), nil
}

func (wire2025) created(t tasks.Task) mcp.Result {
	return &createTaskResult{ResultBase: mcp.ResultBase{Meta: logMeta(t.ID)}, Task: toWire(t)}
}

// inputRequired is never asked of this wire (roundTrips is false); it renders as
// a 2025-11-25 session would.
func (wire2025) inputRequired(reqs mcp.InputRequestMap, state string) *inputRequiredResult {
	return &inputRequiredResult{ResultType: "input_required", InputRequests: reqs, RequestState: state, Content: &[]mcp.Content{}}
}

// listTools adds execution.taskSupport to each tool.
func (wire2025) listTools(r *mcp.ListToolsResult, catalog *plugins.Catalog) mcp.Result {
	return &listToolsResult{r, catalog}
}

func (wire2025) get(ctx context.Context, s *Server, c caller, p *taskIDParams) (mcp.Result, error) {
	id, err := taskIDOf(p)
	if err != nil {
		return nil, err
	}
	t, err := s.tasks.Get(ctx, c.owner, id)
	if err != nil {
		return nil, taskError(err, id)
	}
	return &taskResult{ResultBase: mcp.ResultBase{Meta: logMeta(t.ID)}, wireTask: toWire(t)}, nil
}

func (wire2025) cancel(ctx context.Context, s *Server, c caller, p *taskIDParams) (mcp.Result, error) {
	id, err := taskIDOf(p)
	if err != nil {
		return nil, err
	}
	t, err := s.tasks.Cancel(ctx, c.owner, id)
	if err != nil {
		return nil, taskError(err, id)
	}
	return &taskResult{ResultBase: mcp.ResultBase{Meta: logMeta(t.ID)}, wireTask: toWire(t)}, nil
}

// result blocks until the task is terminal and answers exactly what the call would
// have. While it waits on Streamable HTTP, it carries the task's pending input
// requests on its own response stream, for clients that only listen there.
func (wire2025) result(ctx context.Context, s *Server, ss *mcp.ServerSession, c caller, p *taskIDParams) (mcp.Result, error) {
	id, err := taskIDOf(p)
	if err != nil {
		return nil, err
	}
	sent := map[string]bool{}
	for {
		t, inputs, changed, err := s.tasks.Watch(ctx, c.owner, id)
		if err != nil {
			return nil, taskError(err, id)
		}
		if changed == nil {
			r, err := finalResult(t)
			if err != nil {
				return nil, err
			}
			// The task's last notifications/tasks/status goes out before its result.
			s.statuses.flushed(ctx, statusFlushWait)
			return r, nil
		}
		// On stdio the first delivery already went down the same pipe, unless the
		// task's work did not push it (a resumed task, or one another instance runs).
		for _, in := range inputs {
			if c.owner != localOwner || !in.Pushed {
				if !sent[in.Key] {
					sent[in.Key] = true
					go s.deliverInput(ctx, ss, c.owner, id, in)
				}
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (wire2025) list(ctx context.Context, s *Server, c caller, p *listTasksParams) (mcp.Result, error) {
	cursor := ""
	if p != nil {
		cursor = p.Cursor
	}
	page, next, err := s.tasks.List(ctx, c.owner, cursor)
	if err != nil {
		return nil, taskError(err, "")
	}
	res := &listTasksResult{Tasks: make([]wireTask, len(page)), NextCursor: next}
	for i, t := range page {
		res.Tasks[i] = toWire(t)
	}
	return res, nil
}

// update is the extension's; a request on a 2025-11-25 session may still declare
// the extension for itself (callerOf) and then gets extSessionWire.
func (wire2025) update(context.Context, *Server, caller, *updateParams) (mcp.Result, error) {
	return nil, extensionMethod("tasks/update")
}

// wireTask is a Task on the 2025-11-25 wire.
type wireTask struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	TTL           int64  `json:"ttl"`
	PollInterval  int64  `json:"pollInterval,omitempty"`
}

func toWire(t tasks.Task) wireTask {
	return wireTask{
		TaskID: t.ID, Status: string(t.Status), StatusMessage: t.StatusMessage,
		CreatedAt: t.CreatedAt.Format(time.RFC3339Nano), LastUpdatedAt: t.LastUpdatedAt.Format(time.RFC3339Nano),
		TTL: t.TTL.Milliseconds(), PollInterval: t.PollInterval.Milliseconds(),
	}
}

type createTaskResult struct {
	mcp.ResultBase
	Task wireTask `json:"task"`
}

type taskResult struct { // tasks/get, tasks/cancel
	mcp.ResultBase
	wireTask
}

type listTasksResult struct {
	mcp.ResultBase
	Tasks      []wireTask `json:"tasks"`
	NextCursor string     `json:"nextCursor,omitempty"`
}

// rawResult is a stored tool result, answered by tasks/result with the related-task
// _meta added.
type rawResult struct {
	mcp.ResultBase
	raw    json.RawMessage
	taskID string
}

func (r *rawResult) MarshalJSON() ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r.raw, &m); err != nil {
		return nil, err
	}
	meta := map[string]any{}
	if old, ok := m["_meta"]; ok {
		if err := json.Unmarshal(old, &meta); err != nil {
			return nil, err
		}
	}
	meta[relatedTaskKey] = map[string]string{"taskId": r.taskID}
	b, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	m["_meta"] = b
	return json.Marshal(m)
}

func finalResult(t tasks.Task) (*rawResult, error) {
	switch {
	case t.Error != nil:
		return nil, &jsonrpc.Error{Code: t.Error.Code, Message: t.Error.Message, Data: t.Error.Data}
	case t.Status == tasks.Cancelled:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("task %q was cancelled; it has no result", t.ID)}
	case t.Result == nil: // failed without running to an outcome: a restart or shutdown
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("task %q has no result: %s", t.ID, t.StatusMessage)}
	}
	return &rawResult{raw: t.Result, taskID: t.ID}, nil
}
