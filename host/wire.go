package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
)

// wire is how one request speaks Tasks: which tasks/* methods exist for it, how its
// tools/call is routed (in the request or as a task), how tasks and answers are
// rendered, and how a guest's requests for input reach the client. callerOf picks
// one per request (caller.wire); from then on nothing asks which wire it is, the
// wire answers (as net/http picks HTTP/2 once per connection). One implementation
// per line, each in its own file, over the one task model (tasks.Manager):
//
//   - wire2025 (wire_2025.go): MCP 2025-11-25 Tasks on a session;
//   - extWire (wire_ext.go): the Tasks extension on MCP 2026-07-28, stateless;
//   - extSessionWire (wire_ext.go): the extension on a 2025-11-25 session, chosen at
//     initialize or by one request for itself;
//   - noTasks (wire_none.go): MCP 2026-07-28 without the extension.
//
// The golden transcripts in testdata/wire/<wire>/ show each on the wire.
type wire interface {
	// stateless reports MCP 2026-07-28 or later: no session, and the server cannot
	// send the client requests.
	stateless() bool
	// taskParam vets a tools/call's params.task as taskRequest lifted it (tp, or
	// err for a malformed one) and returns what the call should use.
	taskParam(tp *taskParams, err error) (*taskParams, error)
	// callTool answers a tools/call of catalog tool t, in the request (next, the
	// SDK's handler, which runs toolHandler) or as a task.
	callTool(ctx context.Context, s *Server, req *mcp.CallToolRequest, t *plugins.Tool, c caller, tp *taskParams, next mcp.MethodHandler) (mcp.Result, error)
	// created renders the answer of a tools/call that started task t.
	created(t tasks.Task) mcp.Result
	// roundTrips reports that a synchronous call gets input by multi round trip
	// (the round ends with inputRequired) instead of requests sent on the session.
	roundTrips() bool
	// inputRequired renders a synchronous round that needs input first.
	inputRequired(reqs mcp.InputRequestMap, state string) *inputRequiredResult
	// pushesInput reports that a task's requests for input are sent to the client
	// as they are made, beside being shown by the task methods.
	pushesInput() bool
	// listTools renders the SDK's tools/list result.
	listTools(r *mcp.ListToolsResult, catalog *plugins.Catalog) mcp.Result

	// The tasks/* methods; p may be nil (a request without params).
	get(ctx context.Context, s *Server, c caller, p *taskIDParams) (mcp.Result, error)
	cancel(ctx context.Context, s *Server, c caller, p *taskIDParams) (mcp.Result, error)
	result(ctx context.Context, s *Server, ss *mcp.ServerSession, c caller, p *taskIDParams) (mcp.Result, error)
	list(ctx context.Context, s *Server, c caller, p *listTasksParams) (mcp.Result, error)
	update(ctx context.Context, s *Server, c caller, p *updateParams) (mcp.Result, error)
}

var (
	_ wire = wire2025{}
	_ wire = extWire{}
	_ wire = extSessionWire{}
	_ wire = noTasks{}
)

// MCP error codes of SEP-2575 / SEP-2243 (go-sdk constants, repeated for reading).
const (
	codeHeaderMismatch      = mcp.CodeHeaderMismatch                    // -32020
	codeMissingCapabilities = mcp.CodeMissingRequiredClientCapabilities // -32021
)

type taskIDParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
}

type listTasksParams struct {
	mcp.ParamsBase
	Cursor string `json:"cursor,omitempty"`
}

type updateParams struct {
	mcp.ParamsBase
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
}

// taskIDOf is the task a tasks/* request names, or -32602.
func taskIDOf(p *taskIDParams) (string, error) {
	if p == nil || p.TaskID == "" {
		return "", invalidParams("taskId is required")
	}
	return p.TaskID, nil
}

// methodNotFound is a -32601 error that keeps its message: the go-sdk replaces the
// message of any error that is a *jsonrpc.Error with that code by a generic one.
func methodNotFound(format string, args ...any) error {
	return &codedError{code: jsonrpc.CodeMethodNotFound, msg: fmt.Sprintf(format, args...)}
}

type codedError struct {
	code int64
	msg  string
}

func (e *codedError) Error() string { return e.msg }

// As lets the SDK find the code (errors.As) without treating the error as its own
// method-not-found sentinel (errors.Is).
func (e *codedError) As(target any) bool {
	if p, ok := target.(**jsonrpc.Error); ok {
		*p = &jsonrpc.Error{Code: e.code, Message: e.msg}
		return true
	}
	return false
}

func invalidParams(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// removedByExtension answers, on the extension's line, a 2025-11-25 method that the
// Tasks extension removed.
func removedByExtension(method string) error {
	return methodNotFound("%s is not part of the Tasks extension (%s): tasks/get inlines the result", method, extensionID)
}

// missingExtension answers a request that needs the Tasks extension from a client
// that did not declare it.
func missingExtension(format string, args ...any) error {
	return &jsonrpc.Error{Code: codeMissingCapabilities, Message: fmt.Sprintf(format, args...),
		Data: json.RawMessage(`{"requiredCapabilities":{"extensions":{"` + extensionID + `":{}}}}`)}
}

// extensionMethod answers a method of the Tasks extension from a client that did not
// declare it.
func extensionMethod(method string) error {
	return missingExtension("%s belongs to the Tasks extension; declare %q in the client capabilities", method, extensionID)
}

// taskError maps the task model's errors onto the spec's codes.
func taskError(err error, id string) error {
	switch {
	case errors.Is(err, tasks.ErrNotFound):
		return invalidParams("task %q not found (it may have expired)", id)
	case errors.Is(err, tasks.ErrTerminal):
		return invalidParams("cannot cancel task %q: %v", id, err)
	case errors.Is(err, tasks.ErrBadCursor):
		return invalidParams("invalid cursor")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

// complete shapes a synchronous answer on the lines of 2026-07-28 (the extension's
// wires and noTasks): a result says resultType "complete", a request for input is
// the InputRequiredResult of c's wire.
func (c caller) complete(res mcp.Result, err error) (mcp.Result, error) {
	if err != nil {
		return nil, err
	}
	if r, ok := res.(*mcp.CallToolResult); ok {
		if r.NeedsInput() || r.InputRequests != nil {
			return c.wire.inputRequired(r.InputRequests, r.RequestState), nil
		}
		return &completeResult{r}, nil
	}
	return res, nil
}

// completeResult adds resultType "complete" to a tool result the server answers
// itself on 2026-07-28 (the SDK adds it to those of its own tools/call).
type completeResult struct {
	mcp.Result
}

func (r *completeResult) MarshalJSON() ([]byte, error) {
	return patchJSON(r.Result, func(m map[string]json.RawMessage) error {
		if _, ok := m["resultType"]; !ok {
			m["resultType"] = json.RawMessage(`"complete"`)
		}
		return nil
	})
}

// inputRequiredResult is a tools/call answer that asks for input first (SEP-2322
// multi round-trip): the client answers inputRequests and repeats the call with
// inputResponses and requestState.
type inputRequiredResult struct {
	mcp.ResultBase
	ResultType    string              `json:"resultType"`
	InputRequests mcp.InputRequestMap `json:"inputRequests"`
	RequestState  string              `json:"requestState"`
	Content       *[]mcp.Content      `json:"content,omitempty"` // on a 2025-11-25 session, whose CallToolResult requires it
}
