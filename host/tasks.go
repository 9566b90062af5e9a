package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/telemetry/metrics"
	"github.com/mcp-wasmhost/mcp-wasmhost/telemetry/trace"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
)

// What every wire shares of tasks: starting one, recording its outcome, delivering
// its requests for input, and showing Tasks in initialize and tools/list.

// startTask starts a task running tool t for c. With run nil the task runs the tool;
// otherwise run is its work (a call already under way that the guest moved into a
// task).
func (s *Server) startTask(ctx context.Context, req *mcp.CallToolRequest, t *plugins.Tool, c caller, ttl time.Duration, run func(ctx context.Context, b *bridge) (*mcp.CallToolResult, error)) (tasks.Task, error) {
	ss := req.Session
	args, progressToken := req.Params.Arguments, req.Params.GetProgressToken()
	moved := run != nil
	if run == nil {
		run = func(ctx context.Context, b *bridge) (*mcp.CallToolResult, error) {
			return s.runTool(ctx, t, args, b)
		}
	}
	// The task takes over the call's running-call quota: it holds it until its run
	// ends (quota.go).
	sl := c.slot.takeOver()
	// The run's host calls go in its own audit line; a call moved into a task
	// goes on collecting in the call's record.
	rec := c.rec
	if s.audit != nil && !moved {
		rec = &callRecord{}
	}
	// The task runs detached from the request: its context carries none of the
	// request's values, so that what it sends later is routed to the session, not to a
	// response stream that has closed.
	// Only the request's span goes with it (a task's first store write and its run
	// are in the request's trace), none of its values.
	created := oteltrace.SpanContextFromContext(ctx)
	sctx := context.Background()
	if created.IsValid() {
		sctx = oteltrace.ContextWithSpanContext(sctx, created)
	}
	task, err := s.tasks.Start(sctx, tasks.Requester{Owner: c.owner, Source: c.source}, ttl, func(ctx context.Context, h *tasks.Handle) (json.RawMessage, string, *tasks.Error) {
		defer sl.release()
		start := time.Now()
		b := &bridge{session: ss, tool: t, logger: s.logger, progressToken: progressToken, srv: s, caps: c.caps,
			task: h, owner: c.owner, push: c.wire.pushesInput(), rec: rec}
		if t.Resumable {
			s.recordRecipe(ctx, h, t, args, c.caps)
		}
		ctx, span := s.tracer.StartTaskRun(ctx, created, h.ID(), t.Name)
		res, err := run(ctx, b)
		if span != nil {
			trace.End(span, errorType(res, err), err)
		}
		s.auditRun(start, h.ID(), c.owner, t.Name, rec, res, err)
		return taskOutcome(res, err)
	})
	if err == nil {
		s.tracer.TaskCreated(ctx, task.ID)
	}
	if err != nil {
		sl.handBack()
		if qe := s.tooManyTasks(err); qe != nil {
			return tasks.Task{}, qe
		}
		if errors.Is(err, tasks.ErrStoreFull) {
			return tasks.Task{}, &jsonrpc.Error{Code: codeLimit, Message: err.Error()}
		}
		return tasks.Task{}, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	c.rec.startedTask(task.ID)
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
	case "roots/list":
		var p mcp.ListRootsParams
		if err := json.Unmarshal(in.Params, &p); err != nil {
			s.tasks.Answer(own, taskID, in.Key, tasks.Reply{Err: err})
			return
		}
		send = func() (any, error) { return ss.ListRoots(ctx, &p) }
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
	s.metrics.Refused(metrics.RefusedAdmission)
	return &jsonrpc.Error{Code: codeLimit, Message: be.Error()}
}

// codeRejectedByTransport is the go-sdk's code for a message its Streamable HTTP
// transport could not deliver (no stream open for it); the request stays pending.
const codeRejectedByTransport = -32005

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
