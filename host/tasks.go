package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
)

// relatedTaskKey is the _meta key that ties a message to its task (MCP 2025-11-25).
const relatedTaskKey = "io.modelcontextprotocol/related-task"

// localOwner owns every task created over a stream transport (stdio): the local user.
const localOwner = "local"

// owner is who a session's tasks belong to: the local user on stdio, the session on
// Streamable HTTP (no authentication is configured; an identity would take its place).
func owner(ss *mcp.ServerSession) string {
	if id := ss.ID(); id != "" {
		return "session:" + id
	}
	return localOwner
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

type taskIDParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
}

type listTasksParams struct {
	mcp.ParamsBase
	Cursor string `json:"cursor,omitempty"`
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

// registerTaskMethods adds the tasks/* methods: those of MCP 2025-11-25, and of the
// Tasks extension (ext.go), which shares tasks/get and tasks/cancel and branches on
// the caller.
func (s *Server) registerTaskMethods() error {
	return errors.Join(
		mcp.AddReceivingCustomMethod(s.mcp, "tasks/get", s.tasksGet),
		mcp.AddReceivingCustomMethod(s.mcp, "tasks/result", func(ctx context.Context, ss *mcp.ServerSession, p *taskIDParams) (mcp.Result, error) {
			if err := legacyOnly(callerFrom(ctx, ss), "tasks/result"); err != nil {
				return nil, err
			}
			return s.taskResult(ctx, ss, p)
		}),
		mcp.AddReceivingCustomMethod(s.mcp, "tasks/list", func(ctx context.Context, ss *mcp.ServerSession, p *listTasksParams) (mcp.Result, error) {
			c := callerFrom(ctx, ss)
			if err := legacyOnly(c, "tasks/list"); err != nil {
				return nil, err
			}
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
		}),
		mcp.AddReceivingCustomMethod(s.mcp, "tasks/cancel", s.tasksCancel),
		s.registerExtMethods(),
	)
}

// legacyOnly refuses, on the extension's line (2026-07-28, or a session that chose the
// extension), a 2025-11-25 method that the Tasks extension removed.
func legacyOnly(c caller, method string) error {
	if c.extLine {
		return methodNotFound("%s is not part of the Tasks extension (%s): tasks/get inlines the result", method, extensionID)
	}
	return nil
}

// extGate answers the wire a tasks/get or tasks/cancel comes in on: the extension's
// (true), the 2025-11-25 one (false), or an error for a request on the extension's
// line that did not declare the extension.
func extGate(c caller, method string) (bool, error) {
	switch {
	case c.ext:
		return true, nil
	case c.extLine:
		return false, missingExtension("%s belongs to the Tasks extension; declare %q in the client capabilities", method, extensionID)
	}
	return false, nil
}

func (s *Server) tasksGet(ctx context.Context, ss *mcp.ServerSession, p *taskIDParams) (mcp.Result, error) {
	c := callerFrom(ctx, ss)
	ext, err := extGate(c, "tasks/get")
	if err != nil {
		return nil, err
	}
	if p == nil || p.TaskID == "" {
		return nil, invalidParams("taskId is required")
	}
	if ext {
		return s.extGet(ctx, c, p.TaskID)
	}
	t, err := s.tasks.Get(ctx, c.owner, p.TaskID)
	if err != nil {
		return nil, taskError(err, p.TaskID)
	}
	return &taskResult{wireTask: toWire(t)}, nil
}

func (s *Server) tasksCancel(ctx context.Context, ss *mcp.ServerSession, p *taskIDParams) (mcp.Result, error) {
	c := callerFrom(ctx, ss)
	ext, err := extGate(c, "tasks/cancel")
	if err != nil {
		return nil, err
	}
	if p == nil || p.TaskID == "" {
		return nil, invalidParams("taskId is required")
	}
	if ext {
		return s.extCancel(ctx, c, p.TaskID)
	}
	t, err := s.tasks.Cancel(ctx, c.owner, p.TaskID)
	if err != nil {
		return nil, taskError(err, p.TaskID)
	}
	return &taskResult{wireTask: toWire(t)}, nil
}

// taskResult blocks until the task is terminal and answers exactly what the call would
// have. While it waits on Streamable HTTP, it carries the task's pending input requests
// on its own response stream, for clients that only listen there.
func (s *Server) taskResult(ctx context.Context, ss *mcp.ServerSession, p *taskIDParams) (*rawResult, error) {
	if p == nil || p.TaskID == "" {
		return nil, invalidParams("taskId is required")
	}
	own := callerFrom(ctx, ss).owner
	sent := map[string]bool{}
	for {
		t, inputs, changed, err := s.tasks.Watch(ctx, own, p.TaskID)
		if err != nil {
			return nil, taskError(err, p.TaskID)
		}
		if changed == nil {
			return finalResult(t)
		}
		// On stdio the first delivery already went down the same pipe.
		if own != localOwner {
			for _, in := range inputs {
				if !sent[in.Key] {
					sent[in.Key] = true
					go s.deliverInput(ctx, ss, own, p.TaskID, in)
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

// deliverInput sends a pending request (elicitation or sampling) to the client with ctx's routing (the
// stream of the request ctx belongs to, or the session's standalone stream for a
// detached ctx) and records the answer. A transport failure leaves the request pending
// for another delivery; an answer, even an error from the client, settles it.
func (s *Server) deliverInput(ctx context.Context, ss *mcp.ServerSession, own, taskID string, in *tasks.Input) {
	var send func() (any, error)
	switch in.Method {
	case "elicitation/create":
		var p mcp.ElicitParams
		if err := json.Unmarshal(in.Params, &p); err != nil {
			s.tasks.Answer(own, taskID, in.Key, tasks.Reply{Err: err})
			return
		}
		send = func() (any, error) { return ss.Elicit(ctx, &p) }
	case "sampling/createMessage":
		var p mcp.CreateMessageParams
		if err := json.Unmarshal(in.Params, &p); err != nil {
			s.tasks.Answer(own, taskID, in.Key, tasks.Reply{Err: err})
			return
		}
		send = func() (any, error) { return ss.CreateMessage(ctx, &p) }
	default:
		s.tasks.Answer(own, taskID, in.Key, tasks.Reply{Err: fmt.Errorf("no way to deliver %s", in.Method)})
		return
	}
	res, err := send()
	var wire *jsonrpc.Error
	switch {
	case err == nil:
		b, merr := json.Marshal(res)
		s.tasks.Answer(own, taskID, in.Key, tasks.Reply{Result: b, Err: merr})
	case own != localOwner && (!errors.As(err, &wire) || wire.Code == codeRejectedByTransport):
		s.logger.Debug("input request not delivered; waiting for tasks/result", "task", taskID, "key", in.Key, "err", err)
	default:
		s.tasks.Answer(own, taskID, in.Key, tasks.Reply{Err: err})
	}
}

// codeLimit answers a task the server will not take on now (too many unfinished tasks
// for this client, or a full store), or a call its plugin cannot admit now: a server
// error in JSON-RPC's reserved range.
const codeLimit = -32000

// busyError is the JSON-RPC error for a call its plugin refused at its admission limit
// (plugins.BusyError), or nil for any other error. Nothing of the call ran: it is the
// server's refusal, not the tool's failure, so it is an error (in a task, the task's
// failure with this error) rather than a result with isError.
func busyError(ctx context.Context, s *Server, err error) *jsonrpc.Error {
	var be *plugins.BusyError
	if !errors.As(err, &be) {
		return nil
	}
	s.logger.WarnContext(ctx, "call refused", "plugin", be.Plugin, "err", be)
	return &jsonrpc.Error{Code: codeLimit, Message: be.Error()}
}

// codeRejectedByTransport is the go-sdk's code for a message its Streamable HTTP
// transport could not deliver (no stream open for it); the request stays pending.
const codeRejectedByTransport = -32005

// taskParams is what a client sent as params.task.
type taskParams struct {
	TTL *int64 `json:"ttl"`
}

// taskRequest extracts the lifted params.task from a tools/call, removing it from
// _meta so that nothing downstream sees it.
func taskRequest(p *mcp.CallToolParamsRaw) (*taskParams, error) {
	raw, ok := p.Meta[taskMetaKey]
	if !ok {
		return nil, nil
	}
	delete(p.Meta, taskMetaKey)
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	var tp taskParams
	if err := json.Unmarshal(b, &tp); err != nil {
		return nil, fmt.Errorf(`params.task must be an object such as {"ttl": 60000} (ttl in whole milliseconds, optional): %s`, b)
	}
	if tp.TTL != nil && *tp.TTL < 0 {
		return nil, errors.New("params.task.ttl must not be negative")
	}
	return &tp, nil
}

// middleware adds Tasks to the methods the SDK serves: capabilities in initialize,
// execution.taskSupport in tools/list, tools/call directly or as a task, and the
// caller (see callerOf) in the context of every method.
func (s *Server) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, _ := req.GetSession().(*mcp.ServerSession)
		if ss == nil {
			return next(ctx, method, req)
		}
		c := callerOf(ss, requestMeta(req), req.GetExtra())
		if c.owner == anonymousOwner {
			c.source = s.anonymousSource(req.GetExtra())
		}
		ctx = withCaller(ctx, c)
		switch method {
		case "initialize":
			res, err := next(ctx, method, req)
			if r, ok := res.(*mcp.InitializeResult); ok && err == nil {
				ip, _ := req.GetParams().(*mcp.InitializeParams)
				return &initializeResult{r, ip != nil && extensionSession(ip)}, nil
			}
			return res, err
		case "tools/list":
			res, err := next(ctx, method, req)
			if r, ok := res.(*mcp.ListToolsResult); ok && err == nil && !c.extLine {
				return &listToolsResult{r, s.catalog}, nil
			}
			return res, err
		case "tools/call":
			if r, ok := req.(*mcp.CallToolRequest); ok {
				return s.callTool(ctx, r, c, next)
			}
		}
		return next(ctx, method, req)
	}
}

// requestMeta returns a request's params._meta, if any.
func requestMeta(req mcp.Request) map[string]any {
	p, ok := req.GetParams().(interface{ GetMeta() map[string]any })
	if !ok || p == nil {
		return nil
	}
	if v := reflect.ValueOf(p); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil // a typed nil: the request had no params
	}
	return p.GetMeta()
}

func hasExtension(caps *mcp.ClientCapabilities) bool {
	if caps == nil {
		return false
	}
	_, ok := caps.Extensions[extensionID]
	return ok
}

// callTool routes a tools/call: directly or as a task, by the rules of the caller's
// wire.
func (s *Server) callTool(ctx context.Context, req *mcp.CallToolRequest, c caller, next mcp.MethodHandler) (mcp.Result, error) {
	tp, err := taskRequest(req.Params)
	if err != nil && !c.ext && !c.extLine {
		return nil, invalidParams("%v", err)
	}
	t, ok := s.catalog.Lookup(req.Params.Name)
	if !ok {
		return next(ctx, "tools/call", req) // the SDK answers for unknown tools
	}
	if c.ext || c.extLine {
		return s.callToolExt(ctx, req, t, c, next)
	}
	switch {
	case tp != nil && t.TaskSupport == plugins.TaskForbidden:
		return nil, methodNotFound("tool %q does not support task execution; call it without params.task", t.Name)
	case tp == nil && t.TaskSupport == plugins.TaskRequired:
		return nil, methodNotFound("tool %q must be called as a task (execution.taskSupport is required); add params.task", t.Name)
	case tp == nil:
		return next(ctx, "tools/call", req)
	}
	if err := t.CheckArguments(ctx, req.Params.Arguments); err != nil {
		return nil, invalidParams("%v", err)
	}
	var ttl time.Duration
	if tp.TTL != nil {
		// Saturate instead of overflowing; the manager clamps to max_ttl.
		ttl = time.Duration(min(*tp.TTL, math.MaxInt64/int64(time.Millisecond))) * time.Millisecond
	}
	task, err := s.startTask(req, t, c, ttl, nil)
	if err != nil {
		return nil, err
	}
	return &createTaskResult{Task: toWire(task)}, nil
}

func firstText(res *mcp.CallToolResult, n int) string {
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			s := strings.TrimSpace(tc.Text)
			if len(s) > n {
				s = s[:n] + "…"
			}
			return s
		}
	}
	return "(no text)"
}

// initializeResult shows the session's Tasks in the SDK's InitializeResult: the
// extension (as server/discover does) for a session that chose it
// (extensionSession), else 2025-11-25's capabilities.tasks in its place. Never both
// on one session.
type initializeResult struct {
	*mcp.InitializeResult
	ext bool // the session chose the extension (extensionSession)
}

var tasksCapability = json.RawMessage(`{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`)

func (r *initializeResult) MarshalJSON() ([]byte, error) {
	return patchJSON(r.InitializeResult, func(m map[string]json.RawMessage) error {
		var caps map[string]json.RawMessage
		if err := json.Unmarshal(m["capabilities"], &caps); err != nil {
			return err
		}
		if caps == nil {
			caps = map[string]json.RawMessage{}
		}
		if r.ext {
			b, err := json.Marshal(caps)
			m["capabilities"] = b
			return err
		}
		caps["tasks"] = tasksCapability
		var exts map[string]json.RawMessage
		if err := json.Unmarshal(caps["extensions"], &exts); err == nil && exts != nil {
			delete(exts, extensionID)
			if len(exts) == 0 {
				delete(caps, "extensions")
			} else if b, err := json.Marshal(exts); err == nil {
				caps["extensions"] = b
			}
		}
		b, err := json.Marshal(caps)
		m["capabilities"] = b
		return err
	})
}

// listToolsResult adds execution.taskSupport to each tool of the SDK's ListToolsResult.
type listToolsResult struct {
	*mcp.ListToolsResult
	catalog *plugins.Catalog
}

func (r *listToolsResult) MarshalJSON() ([]byte, error) {
	return patchJSON(r.ListToolsResult, func(m map[string]json.RawMessage) error {
		var tools []map[string]json.RawMessage
		if err := json.Unmarshal(m["tools"], &tools); err != nil {
			return err
		}
		for _, tool := range tools {
			var name string
			if err := json.Unmarshal(tool["name"], &name); err != nil {
				return err
			}
			if t, ok := r.catalog.Lookup(name); ok {
				tool["execution"] = json.RawMessage(`{"taskSupport":"` + string(t.TaskSupport) + `"}`)
			}
		}
		b, err := json.Marshal(tools)
		m["tools"] = b
		return err
	})
}

// patchJSON marshals v, lets patch edit its top-level members, and marshals it again.
func patchJSON(v any, patch func(map[string]json.RawMessage) error) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if err := patch(m); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}
