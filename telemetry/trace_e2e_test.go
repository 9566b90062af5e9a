package telemetry_test

import (
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	tracev1 "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// collector is an OTLP/HTTP collector: it decodes every export (protobuf; an
// ExportTraceServiceRequest has TracesData's one field) and keeps the spans.
type collector struct {
	*httptest.Server
	mu    sync.Mutex
	spans []*tracev1.Span
	bad   []string
}

func newCollector(t *testing.T) *collector {
	c := &collector{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var td tracev1.TracesData
		c.mu.Lock()
		defer c.mu.Unlock()
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(body, &td) != nil {
			c.bad = append(c.bad, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		for _, rs := range td.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				c.spans = append(c.spans, ss.Spans...)
			}
		}
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *collector) all() []*tracev1.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*tracev1.Span(nil), c.spans...)
}

func id(b []byte) string { return hex.EncodeToString(b) }

// TestSpanTreeOfATask: a task whose guest asks for input and then calls a local HTTP
// server, in a worker and trusted. Its whole tree is under the client's traceparent:
// the tools/call server span, argument validation, the task's run (linked to its
// creation) with the guest's instantiate and run and each host call, a store
// operation; tasks/result links the creation and the run; the upstream got a
// traceparent of this trace, from the http host call's span.
func TestSpanTreeOfATask(t *testing.T) {
	for i, mode := range []struct{ name, extra string }{{"worker", ""}, {"trusted", "trusted = true"}} {
		t.Run(mode.name, func(t *testing.T) {
			up := newUpstream(t)
			col := newCollector(t)
			file := config(t, fmt.Sprintf("\n[server.tracing]\nendpoint = %q\nheaders = { X-Collector-Key = \"k\" }", col.URL), up.URL,
				plugin{"jobs", "plugins/jobs/jobs.wasm", fmt.Sprintf("env = { JOBS_URL = %q }\n%s", up.URL, mode.extra)})
			c, _, _ := serve(t, file, func(r *jsonrpc.Request) (any, error) {
				if r.Method != "elicitation/create" {
					return nil, fmt.Errorf("unexpected %s", r.Method)
				}
				return map[string]any{"action": "accept", "content": map[string]any{"approve": true}}, nil
			})
			traceID := fmt.Sprintf("4bf92f3577b34da6a3ce929d0e0e47%02x", i)
			clientSpan := "00f067aa0ba902b7"
			task := c.CreateTask("jobs_deploy", map[string]any{"service": "api", "version": "1"}, map[string]any{},
				map[string]any{"traceparent": "00-" + traceID + "-" + clientSpan + "-01"})
			eventually(t, "the task completes", func() bool { return c.Get(task.TaskID).Status == "completed" })
			if _, err := c.Call(t.Context(), "tasks/result", map[string]any{"taskId": task.TaskID}); err != nil {
				t.Fatal(err)
			}
			c.Conn.Close() // the server stops and sends what it still holds
			eventually(t, "the tasks/result span arrives", func() bool { return find(col.all(), "tasks/result", "") != nil })
			spans := col.all()
			byID := map[string]*tracev1.Span{}
			for _, s := range spans {
				byID[id(s.SpanId)] = s
			}
			inTrace := func(s *tracev1.Span) bool { return id(s.TraceId) == traceID }
			parentOf := func(s *tracev1.Span) *tracev1.Span { return byID[id(s.ParentSpanId)] }
			// under reports whether s descends from ancestor.
			under := func(s, ancestor *tracev1.Span) bool {
				for p := parentOf(s); p != nil; p = parentOf(p) {
					if p == ancestor {
						return true
					}
				}
				return false
			}

			call := find(spans, "tools/call jobs_deploy", traceID)
			if call == nil {
				t.Fatalf("no tools/call jobs_deploy span in trace %s; spans: %s", traceID, names(spans))
			}
			if id(call.ParentSpanId) != clientSpan || call.Kind != tracev1.Span_SPAN_KIND_SERVER {
				t.Errorf("tools/call span: parent %s kind %v, want the client's %s, server", id(call.ParentSpanId), call.Kind, clientSpan)
			}
			for k, want := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "jobs_deploy", "mcp.protocol.version": "2025-11-25"} {
				if got := attr(call, k); got != want {
					t.Errorf("tools/call span %s = %q, want %q", k, got, want)
				}
			}
			if v := find(spans, "validate arguments", traceID); v == nil || parentOf(v) != call {
				t.Errorf("validate arguments is not a child of the tools/call span")
			}
			run := find(spans, "task run jobs_deploy", traceID)
			if run == nil || parentOf(run) != call {
				t.Fatalf("the task's run span is not a child of the tools/call span; spans: %s", names(spans))
			}
			if !linksTo(run, call) {
				t.Errorf("the task's run span does not link its creation")
			}
			guestRun := find(spans, "run", traceID)
			for _, name := range []string{"instantiate", "run"} {
				if s := find(spans, name, traceID); s == nil || parentOf(s) != run {
					t.Errorf("%s is not a child of the task's run span", name)
				}
			}
			for _, name := range []string{"host call elicit", "host call http"} {
				if s := find(spans, name, traceID); s == nil || parentOf(s) != guestRun {
					t.Errorf("%s is not a child of the guest's run span", name)
				}
			}
			store := false
			for _, s := range spans {
				store = store || inTrace(s) && strings.HasPrefix(s.Name, "task store ") && under(s, call)
			}
			if !store {
				t.Errorf("no task store span under the tools/call span; spans: %s", names(spans))
			}
			result := find(spans, "tasks/result", "")
			if !linksTo(result, call) || !linksTo(result, run) {
				t.Errorf("tasks/result does not link the task's creation and run")
			}
			httpSpan := find(spans, "host call http", traceID)
			want := "/jobs 00-" + traceID + "-" + id(httpSpan.SpanId) + "-01"
			if got := up.requests(); len(got) != 1 || got[0] != want {
				t.Errorf("the upstream got %q, want %q", got, want)
			}
			col.mu.Lock()
			if len(col.bad) > 0 {
				t.Errorf("bad exports: %q", col.bad)
			}
			col.mu.Unlock()
			t.Logf("spans: %s", names(spans))
		})
	}
}

func find(spans []*tracev1.Span, name, traceID string) *tracev1.Span {
	for _, s := range spans {
		if s.Name == name && (traceID == "" || id(s.TraceId) == traceID) {
			return s
		}
	}
	return nil
}

func names(spans []*tracev1.Span) string {
	var out []string
	for _, s := range spans {
		out = append(out, fmt.Sprintf("%s(%s/%s<-%s)", s.Name, id(s.TraceId)[:6], id(s.SpanId)[:6], id(s.ParentSpanId)))
	}
	return strings.Join(out, " ")
}

func attr(s *tracev1.Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value.GetStringValue()
		}
	}
	return ""
}

func linksTo(s, target *tracev1.Span) bool {
	if s == nil || target == nil {
		return false
	}
	for _, l := range s.Links {
		if id(l.SpanId) == id(target.SpanId) && id(l.TraceId) == id(target.TraceId) {
			return true
		}
	}
	return false
}
