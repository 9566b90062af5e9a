package trace

import (
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	tracev1 "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// collect starts a Tracer exporting to an in-test OTLP/HTTP collector; flush
// returns the spans received so far.
func collect(t *testing.T, ratio float64) (*Tracer, func() []*tracev1.Span) {
	t.Helper()
	var mu sync.Mutex
	var spans []*tracev1.Span
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var td tracev1.TracesData
		if r.URL.Path != "/v1/traces" || r.Header.Get("X-Key") != "k" || proto.Unmarshal(body, &td) != nil {
			http.Error(w, "bad", 400)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, rs := range td.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				spans = append(spans, ss.Spans...)
			}
		}
	}))
	t.Cleanup(srv.Close)
	tr, err := New(Options{Endpoint: srv.URL + "/", SampleRatio: ratio, Headers: map[string]string{"X-Key": "k"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Shutdown(context.Background()) })
	return tr, func() []*tracev1.Span {
		tr.flush(context.Background())
		mu.Lock()
		defer mu.Unlock()
		return append([]*tracev1.Span(nil), spans...)
	}
}

func TestParentFromMetaThenHeader(t *testing.T) {
	tr, flush := collect(t, 1)
	const (
		metaTP   = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
		headerTP = "00-11111111111111111111111111111111-2222222222222222-01"
	)
	hdr := http.Header{"Traceparent": {headerTP}}
	for _, r := range []Request{
		{Method: "tools/call", Tool: "a", Meta: map[string]any{"traceparent": metaTP}, Header: hdr}, // _meta first
		{Method: "tools/call", Tool: "b", Header: hdr},
		{Method: "ping"},
	} {
		_, span := tr.StartRequest(context.Background(), &r)
		End(span, "", nil)
	}
	got := map[string]string{}
	for _, s := range flush() {
		got[s.Name] = hex.EncodeToString(s.TraceId) + "/" + hex.EncodeToString(s.ParentSpanId)
	}
	want := map[string]string{
		"tools/call a": "0af7651916cd43dd8448eb211c80319c/b7ad6b7169203331",
		"tools/call b": "11111111111111111111111111111111/2222222222222222",
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("span %q: trace/parent %q, want %q", name, got[name], w)
		}
	}
	if p, ok := got["ping"]; !ok || p[33:] != "" {
		t.Errorf("ping: %q, want a root span", p)
	}
}

func TestUnsampledParentRecordsNothing(t *testing.T) {
	tr, flush := collect(t, 1)
	r := Request{Method: "tools/call", Tool: "a", Meta: map[string]any{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"}}
	ctx, span := tr.StartRequest(context.Background(), &r)
	if _, child := tr.Start(ctx, "validate arguments"); child != nil {
		t.Error("a child of an unsampled span was started")
	}
	tr.Record(ctx, "run", time.Now(), time.Now(), nil)
	End(span, "", nil)
	if s := flush(); len(s) != 0 {
		t.Errorf("exported %d spans of an unsampled trace", len(s))
	}
	// Yet the trace context goes on to an upstream, marked not sampled.
	h := http.Header{}
	tr.Inject(ctx, h)
	if got := h.Get("Traceparent"); got[:36] != "00-0af7651916cd43dd8448eb211c80319c-" || got[52:] != "-00" {
		t.Errorf("traceparent = %q", got)
	}
}

func TestInjectNoBaggage(t *testing.T) {
	tr, _ := collect(t, 1)
	r := Request{Method: "tools/call", Tool: "a", Meta: map[string]any{
		"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "tracestate": "vendor=x", "baggage": "user=alice"}}
	ctx, span := tr.StartRequest(context.Background(), &r)
	defer End(span, "", nil)
	h := http.Header{}
	tr.Inject(ctx, h)
	sid := span.SpanContext().SpanID()
	if got, want := h.Get("Traceparent"), "00-0af7651916cd43dd8448eb211c80319c-"+hex.EncodeToString(sid[:])+"-01"; got != want {
		t.Errorf("traceparent = %q, want %q", got, want)
	}
	if h.Get("Tracestate") != "vendor=x" || h.Get("Baggage") != "" {
		t.Errorf("headers = %v, want tracestate and no baggage", h)
	}
	var nilTracer *Tracer
	h2 := http.Header{}
	nilTracer.Inject(ctx, h2)
	if len(h2) != 0 {
		t.Errorf("a nil Tracer injected %v", h2)
	}
}

func TestTaskLinks(t *testing.T) {
	tr, flush := collect(t, 1)
	ctx, create := tr.StartRequest(context.Background(), &Request{Method: "tools/call", Tool: "slow"})
	tr.TaskCreated(ctx, "t1")
	_, run := tr.StartTaskRun(context.Background(), create.SpanContext(), "t1", "slow")
	End(run, "", nil)
	End(create, "", nil)
	_, get := tr.StartRequest(context.Background(), &Request{Method: "tasks/get"})
	tr.LinkTask(get, "t1")
	End(get, "", nil)
	spans := map[string]*tracev1.Span{}
	for _, s := range flush() {
		spans[s.Name] = s
	}
	links := func(name string) []string {
		var out []string
		for _, l := range spans[name].GetLinks() {
			out = append(out, hex.EncodeToString(l.SpanId))
		}
		return out
	}
	id := func(name string) string { return hex.EncodeToString(spans[name].GetSpanId()) }
	if l := links("task run slow"); len(l) != 1 || l[0] != id("tools/call slow") {
		t.Errorf("task run links %v, want its creation %s", l, id("tools/call slow"))
	}
	if l := links("tasks/get"); len(l) != 2 || l[0] != id("tools/call slow") || l[1] != id("task run slow") {
		t.Errorf("tasks/get links %v, want creation and run", l)
	}
	if hex.EncodeToString(spans["task run slow"].GetParentSpanId()) != id("tools/call slow") {
		t.Errorf("task run is not a child of its creation")
	}
}
