package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
)

// The MCP 2026-07-28 line: Tasks as the extension io.modelcontextprotocol/tasks
// (SEP-2663), a second wire over the same task model as the 2025-11-25 methods in
// tasks.go. Which wire a request gets is decided by its session and the request
// itself (see callerOf).

// extensionID names the Tasks extension in capabilities.extensions.
const extensionID = "io.modelcontextprotocol/tasks"

// clientCapsMetaKey is where a request carries its client's capabilities (SEP-2575);
// a request may also use it to opt into an extension for itself alone.
const clientCapsMetaKey = "io.modelcontextprotocol/clientCapabilities"

// newestLegacyVersion is the last protocol version with a connection handshake; from
// 2026-07-28 on, requests are stateless and a server cannot send requests.
const newestLegacyVersion = "2025-11-25"

// MCP error codes of SEP-2575 / SEP-2243 (go-sdk constants, repeated for reading).
const (
	codeHeaderMismatch      = mcp.CodeHeaderMismatch                    // -32020
	codeMissingCapabilities = mcp.CodeMissingRequiredClientCapabilities // -32021
)

// caller is what the server knows of who sent a request and how to answer it.
type caller struct {
	owner     string                  // who owns the tasks it creates and may see them
	source    string                  // for an anonymous requester, its address: its share of the quota
	caps      *mcp.ClientCapabilities // the client's capabilities for this request
	ext       bool                    // this request gets the Tasks extension's wire
	extLine   bool                    // its session is on the extension's line: task methods need the extension
	stateless bool                    // protocol 2026-07-28 or later: no server-to-client requests
}

type callerKey struct{}

// withCaller puts c in ctx, for the custom method handlers, which get no request.
func withCaller(ctx context.Context, c caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// callerFrom returns the caller the middleware stored, or one derived from the
// session alone.
func callerFrom(ctx context.Context, ss *mcp.ServerSession) caller {
	if c, ok := ctx.Value(callerKey{}).(caller); ok {
		return c
	}
	return callerOf(ss, nil, nil)
}

// callerOf describes the sender of one request: its session, the request's _meta and
// its HTTP extras (nil off HTTP).
//
// Which Tasks a request gets:
//   - 2026-07-28 (stateless): the extension's wire if the request declares the
//     extension (capabilities are per request there); if not, -32021 for task
//     methods and required-task tools, and optional tools run synchronously.
//   - a stateful (2025-11-25 or older) session chooses at initialize, once
//     (extensionSession): the extension if its client declared it in
//     capabilities.extensions, did not declare 2025-11-25's capabilities.tasks and is
//     not the MCP Inspector (which declares it there without speaking it); its
//     requests are then answered as on 2026-07-28, with what the 2025-11-25 schema
//     requires of the messages both share. Otherwise 2025-11-25 Tasks, where a
//     request may still declare the extension for itself in _meta (SEP-2575's
//     per-request capabilities) and is then answered on the extension's wire.
//
// The task model is one: a task is its owner's whichever wire created it, and each
// request reads it in its own wire's form.
//
// The owner of tasks is the requester as far as the server can tell it apart: the
// local user on stdio, the session on stateful HTTP (2025-11-25 and older), and on
// stateless HTTP (2026-07-28) the authenticated user if the request carries a
// verified token, else one shared "anonymous" requester, since nothing else in a
// stateless request identifies its sender (clientInfo is whatever the client says).
// For anonymous requesters the unguessable task ID (192 random bits) is the capability,
// and this line has no tasks/list that could reveal IDs. Tasks of one owner are never
// visible to another, whichever wire created or asks for them.
//
// Anonymous requesters share an owner but not a quota: each network source (an IPv4
// address, an IPv6 /64; see sourceOf) may have max_per_client unfinished tasks, and
// all anonymous requesters together max_anonymous (tasks.Requester). One client then
// cannot use up the others' quota, and all of them cannot take the server from
// authenticated users. The middleware fills in the source (anonymousSource).
func callerOf(ss *mcp.ServerSession, meta mcp.Meta, extra *mcp.RequestExtra) caller {
	c := caller{owner: owner(ss)}
	init := ss.InitializeParams()
	if init == nil {
		return c
	}
	c.caps = init.Capabilities
	c.stateless = init.ProtocolVersion > newestLegacyVersion
	if c.stateless && ss.ID() == "" && extra != nil && extra.Header != nil {
		c.owner = anonymousOwner
		if ti := extra.TokenInfo; ti != nil && ti.UserID != "" {
			c.owner = "user:" + ti.UserID
		}
	}
	// The SDK puts a 2026-07-28 request's capabilities in its session; a request
	// that restates them in _meta (on stdio, say) is taken at its word too.
	optIn := false
	if raw, ok := meta[clientCapsMetaKey]; ok {
		var caps mcp.ClientCapabilities
		if b, err := json.Marshal(raw); err == nil && json.Unmarshal(b, &caps) == nil {
			c.caps = &caps
			optIn = hasExtension(&caps)
		}
	}
	switch {
	case c.stateless:
		c.extLine, c.ext = true, hasExtension(c.caps)
	case extensionSession(init):
		c.extLine, c.ext = true, true
	default: // 2025-11-25 Tasks; a request may opt into the extension
		c.ext = optIn
	}
	return c
}

// anonymousOwner owns the tasks of unauthenticated stateless HTTP requests.
const anonymousOwner = "anonymous"

// anonymousSource tells an anonymous requester apart for the quotas: the network
// source of the HTTP request that carried extra. A request the registry does not know
// (it cannot happen over HTTP) counts as one "unknown" source.
func (s *Server) anonymousSource(extra *mcp.RequestExtra) string {
	if hr := s.httpReqs.of(extra); hr != nil && hr.source.IsValid() {
		return hr.source.String()
	}
	return "unknown"
}

// missingExtension answers a request that needs the Tasks extension from a client
// that did not declare it.
func missingExtension(format string, args ...any) error {
	return &jsonrpc.Error{Code: codeMissingCapabilities, Message: fmt.Sprintf(format, args...),
		Data: json.RawMessage(`{"requiredCapabilities":{"extensions":{"` + extensionID + `":{}}}}`)}
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
	TTL            *int64                  `json:"ttl,omitempty"` // on a 2025-11-25 session (legacySchema)
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

type updateParams struct {
	mcp.ParamsBase
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
}

// registerExtMethods adds tasks/update (the extension's only new method); tasks/get
// and tasks/cancel are shared with 2025-11-25 and branch on the caller.
func (s *Server) registerExtMethods() error {
	return mcp.AddReceivingCustomMethod(s.mcp, "tasks/update", s.extUpdate)
}

func (s *Server) extGet(ctx context.Context, c caller, id string) (*extTask, error) {
	t, inputs, _, err := s.tasks.Watch(ctx, c.owner, id)
	if err != nil {
		return nil, taskError(err, id)
	}
	d := detailed(t, inputs)
	if !c.stateless {
		d.TTL = &d.TTLMs // 2025-11-25's GetTaskResult requires ttl
	}
	return d, nil
}

func (s *Server) extCancel(ctx context.Context, c caller, id string) (mcp.Result, error) {
	t, err := s.tasks.Cancel(ctx, c.owner, id)
	if errors.Is(err, tasks.ErrTerminal) {
		// Cancelling a finished task changes nothing and is acknowledged all the same.
		t, err = s.tasks.Get(ctx, c.owner, id)
	}
	if err != nil {
		return nil, taskError(err, id)
	}
	if !c.stateless {
		// On a 2025-11-25 session the acknowledgement also carries what that
		// version's schema requires of a tasks/cancel result (CancelTaskResult: the
		// task), so that the session's own SDKs and validators accept it.
		return &legacyAck{ResultType: "complete", wireTask: toWire(t)}, nil
	}
	return &ack{ResultType: "complete"}, nil
}

// legacyAck is the extension's tasks/cancel acknowledgement on a 2025-11-25 session.
type legacyAck struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
	wireTask
}

// extUpdate answers pending input requests of a task: each key of inputResponses
// answers the request with that key. Keys that are unknown or already answered are
// ignored; a subset answers just those.
func (s *Server) extUpdate(ctx context.Context, ss *mcp.ServerSession, p *updateParams) (*ack, error) {
	c := callerFrom(ctx, ss)
	if !c.ext {
		// Also on a 2025-11-25 Tasks session, where a request may still declare the
		// extension for itself (callerOf).
		return nil, missingExtension("tasks/update belongs to the Tasks extension; declare %q in the client capabilities", extensionID)
	}
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

// callToolExt routes a tools/call on the extension's wire: the server decides. A tool
// that may run as a task becomes one at once, unless the guest says itself when
// (execution.taskStart "guest"); a legacy params.task is ignored.
func (s *Server) callToolExt(ctx context.Context, req *mcp.CallToolRequest, t *plugins.Tool, c caller, next mcp.MethodHandler) (mcp.Result, error) {
	switch {
	case t.TaskSupport == plugins.TaskForbidden:
		return c.sync(next(ctx, "tools/call", req))
	case t.TaskSupport == plugins.TaskRequired && !c.ext:
		return nil, missingExtension("tool %q runs only as a task; declare the %q extension in the client capabilities", t.Name, extensionID)
	case !c.ext:
		return c.sync(next(ctx, "tools/call", req)) // optional: synchronously
	}
	if err := t.CheckArguments(ctx, req.Params.Arguments); err != nil {
		return nil, invalidParams("%v", err)
	}
	if t.GuestStartsTask {
		return c.sync(s.callSync(ctx, req, t, c, true))
	}
	task, err := s.startTask(req, t, c, 0, nil)
	if err != nil {
		return nil, err
	}
	return toExt(task, "task"), nil
}

// startTask starts a task running tool t for c. With run nil the task runs the tool;
// otherwise run is its work (a call already under way that the guest moved into a
// task).
func (s *Server) startTask(req *mcp.CallToolRequest, t *plugins.Tool, c caller, ttl time.Duration, run func(ctx context.Context, b *bridge) (*mcp.CallToolResult, error)) (tasks.Task, error) {
	ss := req.Session
	args, progressToken := req.Params.Arguments, req.Params.GetProgressToken()
	if run == nil {
		run = func(ctx context.Context, b *bridge) (*mcp.CallToolResult, error) {
			return s.runTool(ctx, t, args, b)
		}
	}
	// The task runs detached from the request: its context carries none of the
	// request's values, so that what it sends later is routed to the session, not to a
	// response stream that has closed.
	task, err := s.tasks.Start(context.Background(), tasks.Requester{Owner: c.owner, Source: c.source}, ttl, func(ctx context.Context, h *tasks.Handle) (json.RawMessage, string, *tasks.Error) {
		b := &bridge{session: ss, tool: t, logger: s.logger, progressToken: progressToken, srv: s, caps: c.caps,
			task: h, owner: c.owner, push: !c.stateless && !c.ext}
		res, err := run(ctx, b)
		return taskOutcome(res, err)
	})
	if err != nil {
		if errors.Is(err, tasks.ErrTooMany) || errors.Is(err, tasks.ErrStoreFull) {
			return tasks.Task{}, &jsonrpc.Error{Code: codeLimit, Message: err.Error()}
		}
		return tasks.Task{}, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	return task, nil
}

// taskOutcome is what a task records of a tool's result or error. A result with
// isError is stored as a failure with its result; each wire names that as its
// version of the spec says.
func taskOutcome(res *mcp.CallToolResult, err error) (json.RawMessage, string, *tasks.Error) {
	if err != nil {
		var wire *jsonrpc.Error
		if errors.As(err, &wire) {
			return nil, "", &tasks.Error{Code: wire.Code, Message: wire.Message, Data: wire.Data}
		}
		return nil, "", &tasks.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	raw, merr := json.Marshal(res)
	if merr != nil {
		return nil, "", &tasks.Error{Code: jsonrpc.CodeInternalError, Message: merr.Error()}
	}
	if res.IsError {
		return raw, "tool returned an error: " + firstText(res, 200), nil
	}
	return raw, "", nil
}

// sync shapes a synchronous answer for the extension's wire and 2026-07-28: a
// result says resultType "complete", a request for input is an InputRequiredResult.
func (c caller) sync(res mcp.Result, err error) (mcp.Result, error) {
	if err != nil {
		return nil, err
	}
	if r, ok := res.(*mcp.CallToolResult); ok {
		if r.NeedsInput() || r.InputRequests != nil {
			ir := &inputRequiredResult{ResultType: "input_required", InputRequests: r.InputRequests, RequestState: r.RequestState}
			if !c.stateless {
				ir.Content = &[]mcp.Content{}
			}
			return ir, nil
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

// extensionSession reports whether a stateful (2025-11-25 or older) session is on the
// Tasks extension's line, from its initialize: its client declared the extension in
// capabilities.extensions, did not declare 2025-11-25's capabilities.tasks (a client
// that declares both speaks 2025-11-25 Tasks, the session's own version), and is not
// one known to declare the extension without speaking it before 2026-07-28
// (extensionIgnoredBy). Every other stateful session gets 2025-11-25 Tasks.
//
// The 2025-11-25 schema has no capabilities.extensions (SEP-2133 extensions arrive with
// 2026-07-28), so on such a session the member is a non-standard capability that a
// client may mean or not: the conformance suite's stateful client means it; the MCP
// Inspector 2.x does not (see extensionIgnoredBy). Nothing else in their initialize
// tells them apart.
func extensionSession(init *mcp.InitializeParams) bool {
	if init == nil || init.ProtocolVersion > newestLegacyVersion || !hasExtension(init.Capabilities) {
		return false
	}
	if _, legacy := init.Meta[clientTasksMetaKey]; legacy {
		return false
	}
	return init.ClientInfo == nil || !slices.Contains(extensionIgnoredBy, init.ClientInfo.Name)
}

// extensionIgnoredBy names (clientInfo.name) clients that declare the Tasks extension
// in a 2025-11-25 initialize but speak 2025-11-25 Tasks there: the MCP Inspector 2.x
// (2.12.0 checked) declares every extension it knows by default, "harmless on legacy
// (extensions ignored)" in its source, and on a 2025-11-25 connection follows only
// capabilities.tasks. Served the extension, its CLI sends a required-task tool call
// without params.task, takes the extension's task handle for the tool's result and
// prints it (empty content); the task's outcome is lost. Its CLI, TUI and web client.
var extensionIgnoredBy = []string{"inspector-cli", "inspector-tui", "mcp-inspector"}
