package host

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
	"github.com/mcp-wasmhost/mcp-wasmhost/telemetry/metrics"
	"github.com/mcp-wasmhost/mcp-wasmhost/telemetry/trace"
)

// ReportMetaKey is the _meta key of a call's resource report, with
// Options.ReportMeta.
const ReportMetaKey = "io.github.mcp-wasmhost/report"

// wireName is the label of a request's Tasks wire in metrics.
func wireName(w wire) string {
	switch w.(type) {
	case wire2025:
		return "2025-11-25"
	case extWire:
		return "extension"
	case extSessionWire:
		return "extension_session"
	case noTasks:
		return "none"
	}
	return "other"
}

// observed wraps one request in its server span and its metrics.
func (s *Server) observed(ctx context.Context, method string, req mcp.Request, c caller, ss *mcp.ServerSession,
	serve func(context.Context) (mcp.Result, error)) (mcp.Result, error) {
	start := time.Now()
	extra := req.GetExtra()
	var span *trace.Span
	if s.tracer != nil {
		r := trace.Request{Method: method, Meta: requestMeta(req), Session: ss.ID(), Transport: "pipe"}
		if extra != nil && extra.Header != nil {
			r.Header, r.Transport = extra.Header, "tcp"
		}
		if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && p != nil {
			r.Tool = p.Name
		}
		if pv, ok := req.(interface{ ProtocolVersion() string }); ok {
			r.Protocol = pv.ProtocolVersion()
		}
		ctx, span = s.tracer.StartRequest(ctx, &r)
		if p, ok := req.GetParams().(*taskIDParams); ok && p != nil {
			s.tracer.LinkTask(span, p.TaskID)
		}
		if p, ok := req.GetParams().(*updateParams); ok && p != nil {
			s.tracer.LinkTask(span, p.TaskID)
		}
	}
	res, err := serve(ctx)
	if s.metrics != nil {
		transport := "stdio"
		if extra != nil && extra.Header != nil {
			transport = "http"
		}
		s.metrics.Request(method, wireName(c.wire), transport, time.Since(start))
	}
	if span != nil {
		trace.End(span, errorType(res, err), err)
	}
	return res, err
}

// errorType is a request's error.type: its JSON-RPC code, or "tool_error" for a
// tool result with isError; "" when it succeeded.
func errorType(res mcp.Result, err error) string {
	if err != nil {
		var je *jsonrpc.Error
		if errors.As(err, &je) {
			return strconv.FormatInt(je.Code, 10)
		}
		return "error"
	}
	if r, ok := res.(*mcp.CallToolResult); ok && r.IsError {
		return "tool_error"
	}
	return ""
}

// checkArguments is t.CheckArguments in a span of its own.
func (s *Server) checkArguments(ctx context.Context, t *plugins.Tool, args json.RawMessage) error {
	if s.tracer == nil {
		return t.CheckArguments(ctx, args)
	}
	start := time.Now()
	err := t.CheckArguments(ctx, args)
	s.tracer.Record(ctx, "validate arguments", start, time.Now(), err)
	return err
}

// observing reports whether a call needs its resource report.
func (s *Server) observing(ctx context.Context) bool {
	return s.metrics != nil || s.reportMeta || oteltrace.SpanFromContext(ctx).IsRecording() ||
		s.logger.Enabled(ctx, slog.LevelDebug) // the "call report" line
}

// callObserved records a finished guest call: its report in the metrics, the
// debug log, the trace and (ReportMeta) the result's _meta, and the tool call's
// duration by outcome.
func (s *Server) callObserved(ctx context.Context, t *plugins.Tool, start time.Time, rep *sandbox.Report, run oteltrace.SpanID, res *mcp.CallToolResult, err error) {
	end := time.Now()
	plugin := t.Plugin.Name
	if s.metrics != nil {
		outcome := metrics.OutcomeOK
		switch {
		case err != nil:
			outcome = metrics.OutcomeError
		case res != nil && res.IsError:
			outcome = metrics.OutcomeIsError
		}
		s.metrics.ToolCall(plugin, t.Name, outcome, end.Sub(start))
		s.metrics.Report(plugin, rep)
	}
	if rep == nil {
		return
	}
	s.tracer.Guest(ctx, plugin, start, end, rep, run)
	if s.logger.Enabled(ctx, slog.LevelDebug) {
		s.logger.DebugContext(ctx, "call report", "tool", t.Name, "queue", rep.Queue, "instantiate", rep.Instantiate,
			"run", rep.Run, "cpu", rep.CPU, "memory_bytes", rep.MemoryBytes, "host_calls", hostCalls(rep))
	}
	if s.reportMeta && res != nil {
		if res.Meta == nil {
			res.Meta = mcp.Meta{}
		}
		res.Meta[ReportMetaKey] = reportMeta(rep)
	}
}

func hostCalls(r *sandbox.Report) map[string]uint32 {
	m := make(map[string]uint32, len(r.HostCalls))
	for k, n := range r.HostCalls {
		if n > 0 {
			m[sandbox.HostCall(k).String()] = n
		}
	}
	return m
}

// reportJSON is a call's report as _meta shows it: times in milliseconds.
type reportJSON struct {
	QueueMs       float64           `json:"queueMs"`
	InstantiateMs float64           `json:"instantiateMs"`
	RunMs         float64           `json:"runMs"`
	CPUMs         *float64          `json:"cpuMs,omitempty"` // absent: not measured
	MemoryBytes   uint64            `json:"memoryBytes"`
	HostCalls     map[string]uint32 `json:"hostCalls"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func reportMeta(r *sandbox.Report) reportJSON {
	out := reportJSON{QueueMs: ms(r.Queue), InstantiateMs: ms(r.Instantiate), RunMs: ms(r.Run),
		MemoryBytes: r.MemoryBytes, HostCalls: hostCalls(r)}
	if r.CPU > 0 {
		cpu := ms(r.CPU)
		out.CPUMs = &cpu
	}
	return out
}

// storeObserver is the metrics and traces of the task store (tasks.Observe).
type storeObserver struct {
	m *metrics.Metrics
	t *trace.Tracer
}

func (o storeObserver) StoreOp(ctx context.Context, op string, start time.Time, err error) {
	o.m.StoreOp(op, time.Since(start), err)
	o.t.StoreOp(ctx, op, start, err)
}

var _ tasks.StoreObserver = storeObserver{}
