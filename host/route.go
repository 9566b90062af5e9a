package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/audit"
)

// middleware adds Tasks to the methods the SDK serves: capabilities in initialize,
// execution.taskSupport in tools/list, tools/call directly or as a task, and the
// caller (see callerOf) in the context of every method.
func (s *Server) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, _ := req.GetSession().(*mcp.ServerSession)
		if ss == nil {
			return next(ctx, method, req)
		}
		meta := requestMeta(req)
		c := callerOf(ss, meta, req.GetExtra())
		if err := checkLogLevel(c, meta); err != nil {
			return nil, err
		}
		if c.owner == anonymousOwner {
			c.source = s.anonymousSource(req.GetExtra())
		}
		var start time.Time
		if s.audit != nil && (method == "tools/call" || method == "resources/read" || method == "prompts/get") {
			start, c.rec = time.Now(), &callRecord{}
		}
		ctx = withCaller(ctx, c)
		if s.metrics == nil && s.tracer == nil {
			return s.route(ctx, method, req, c, ss, start, next)
		}
		return s.observed(ctx, method, req, c, ss, func(ctx context.Context) (mcp.Result, error) {
			return s.route(ctx, method, req, c, ss, start, next)
		})
	}
}

// route serves one request of a caller: the methods the host extends, and the
// SDK's for the others. start is when an audited request began (zero: not audited).
func (s *Server) route(ctx context.Context, method string, req mcp.Request, c caller, ss *mcp.ServerSession, start time.Time, next mcp.MethodHandler) (mcp.Result, error) {
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
		if r, ok := res.(*mcp.ListToolsResult); ok && err == nil {
			return c.wire.listTools(s.visibleTools(r, req.GetExtra()), s.catalog), nil
		}
		return res, err
	case "resources/list", "resources/templates/list", "prompts/list":
		res, err := next(ctx, method, req)
		if err != nil {
			return res, err
		}
		return s.visibleFeatures(res, req.GetExtra()), nil
	case "prompts/get", "resources/read":
		res, err := next(ctx, method, req)
		if err == nil && c.wire.stateless() {
			switch r := res.(type) {
			case *mcp.GetPromptResult:
				if r.InputRequests != nil {
					res = c.wire.inputRequired(r.InputRequests, r.RequestState)
				}
			case *mcp.ReadResourceResult:
				if r.InputRequests != nil {
					res = c.wire.inputRequired(r.InputRequests, r.RequestState)
				}
			}
		}
		if c.rec != nil {
			s.auditRequest(start, method, ss, req.GetExtra(), c, featureFields(req), res, err)
		}
		return res, err
	case "subscriptions/listen":
		if r, ok := req.(*mcp.SubscriptionsListenRequest); ok {
			return s.listen(ctx, r, c, next)
		}
	case "tools/call":
		if r, ok := req.(*mcp.CallToolRequest); ok {
			var res mcp.Result
			var err error
			if r.Params != nil && s.known(r.Params.Name) && !s.authorized(req.GetExtra(), r.Params.Name) {
				// Over HTTP with OAuth, liftHTTP has answered most of these with a
				// 403 scope challenge already; the rest get the error alone.
				err, _ = s.notGranted(req.GetExtra().TokenInfo, r.Params.Name)
			} else {
				res, err = s.admitCall(ctx, r, c, next)
				s.answeredQuota(req.GetExtra(), err)
			}
			if c.rec != nil {
				s.auditRequest(start, method, ss, req.GetExtra(), c, toolFields(r.Params), res, err)
			}
			return res, err
		}
	}
	return next(ctx, method, req)
}

// logLevelMetaKey is where a 2026-07-28 request asks for the log lines of its own
// processing, at or above a level.
const logLevelMetaKey = "io.modelcontextprotocol/logLevel"

// checkLogLevel refuses (-32602) a 2026-07-28 request whose _meta asks for log lines
// at a level MCP does not define; the SDK would take it as "everything".
func checkLogLevel(c caller, meta map[string]any) error {
	raw, ok := meta[logLevelMetaKey]
	if !ok || !c.wire.stateless() {
		return nil
	}
	switch raw {
	case "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency":
		return nil
	}
	return invalidParams("_meta[%q] must be one of debug, info, notice, warning, error, critical, alert, emergency, not %v", logLevelMetaKey, raw)
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

// callTool routes a tools/call of a catalog tool to the caller's wire, which answers
// it in the request or as a task. params.task is taken out of _meta on every wire
// (nothing downstream may see it); the wire says what it means.
func (s *Server) callTool(ctx context.Context, req *mcp.CallToolRequest, c caller, next mcp.MethodHandler) (mcp.Result, error) {
	tp, err := c.wire.taskParam(taskRequest(req.Params))
	if err != nil {
		return nil, err
	}
	t, ok := s.catalog.Lookup(req.Params.Name)
	if !ok {
		return next(ctx, "tools/call", req) // the SDK answers for unknown tools
	}
	return c.wire.callTool(ctx, s, req, t, c, tp, next)
}

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

// registerTaskMethods adds the tasks/* methods of both lines (2025-11-25's get,
// result, list and cancel; the extension's get, update and cancel), each answered by
// the caller's wire, which refuses those it does not have.
func (s *Server) registerTaskMethods() error {
	return errors.Join(
		mcp.AddReceivingCustomMethod(s.mcp, "tasks/get", s.taskGet),
		mcp.AddReceivingCustomMethod(s.mcp, "tasks/result", func(ctx context.Context, ss *mcp.ServerSession, p *taskIDParams) (mcp.Result, error) {
			c := callerFrom(ctx, ss)
			return c.wire.result(ctx, s, ss, c, p)
		}),
		mcp.AddReceivingCustomMethod(s.mcp, "tasks/list", s.taskList),
		mcp.AddReceivingCustomMethod(s.mcp, "tasks/cancel", s.taskCancel),
		mcp.AddReceivingCustomMethod(s.mcp, "tasks/update", func(ctx context.Context, ss *mcp.ServerSession, p *updateParams) (mcp.Result, error) {
			c := callerFrom(ctx, ss)
			return c.wire.update(ctx, s, c, p)
		}),
	)
}

// taskGet, taskList and taskCancel answer those methods through the caller's wire.
func (s *Server) taskGet(ctx context.Context, ss *mcp.ServerSession, p *taskIDParams) (mcp.Result, error) {
	c := callerFrom(ctx, ss)
	return c.wire.get(ctx, s, c, p)
}

func (s *Server) taskList(ctx context.Context, ss *mcp.ServerSession, p *listTasksParams) (mcp.Result, error) {
	c := callerFrom(ctx, ss)
	return c.wire.list(ctx, s, c, p)
}

func (s *Server) taskCancel(ctx context.Context, ss *mcp.ServerSession, p *taskIDParams) (mcp.Result, error) {
	c := callerFrom(ctx, ss)
	return c.wire.cancel(ctx, s, c, p)
}

// toolFields fills a tools/call's audit line: the tool and its arguments' digest.
func toolFields(p *mcp.CallToolParamsRaw) func(*audit.Record) {
	return func(r *audit.Record) {
		if p == nil {
			return
		}
		r.Tool = p.Name
		r.ArgsSHA256, _ = argsDigest(p.Arguments) // unreadable arguments: no digest
	}
}

// featureFields fills a resources/read or prompts/get audit line: the URI, or the
// prompt's name and its arguments' digest.
func featureFields(req mcp.Request) func(*audit.Record) {
	return func(r *audit.Record) {
		switch p := req.GetParams().(type) {
		case *mcp.ReadResourceParams:
			if p != nil {
				r.Resource = p.URI
			}
		case *mcp.GetPromptParams:
			if p != nil {
				r.Prompt = p.Name
				if b, err := json.Marshal(p.Arguments); err == nil {
					r.ArgsSHA256, _ = argsDigest(b)
				}
			}
		}
	}
}
