package host_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/host"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
	"github.com/mcp-wasmhost/mcp-wasmhost/telemetry/metrics"
	"github.com/mcp-wasmhost/mcp-wasmhost/telemetry/trace"
)

// TestTelemetryConcurrentCalls: concurrent calls over both transports with metrics,
// tracing and report_meta on (run it with -race): every result carries its report,
// the metrics count every call, and spans reach the collector.
func TestTelemetryConcurrentCalls(t *testing.T) {
	var mu sync.Mutex
	exported := 0
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		exported += len(b)
		mu.Unlock()
	}))
	defer sink.Close()
	tr, err := trace.New(trace.Options{Endpoint: sink.URL})
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New(nil)
	f := newFixtureWith(t, host.Options{Metrics: m, Tracer: tr, ReportMeta: true, Tasks: tasks.Options{Store: tasks.NewMemoryStore()}})
	stdio, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), f.stream(t),
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer stdio.Close()
	sessions := []*mcp.ClientSession{f.connect(t, nil), stdio}
	var wg sync.WaitGroup
	const per = 8
	for _, cs := range sessions {
		for range per {
			wg.Go(func() {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "textkit_ping", Arguments: map[string]any{}})
				if err != nil {
					t.Error(err)
					return
				}
				if _, ok := res.Meta[host.ReportMetaKey]; !ok {
					t.Errorf("result without its report: %v", res.Meta)
				}
			})
		}
	}
	wg.Wait()
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if exported == 0 {
		t.Error("no spans exported")
	}
	var b strings.Builder
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b.WriteString(rec.Body.String())
	if want := `mcpwh_tool_call_duration_seconds_count{outcome="ok",plugin="textkit",tool="textkit_ping"} 16`; !strings.Contains(b.String(), want) {
		t.Errorf("scrape has no %s", want)
	}
}
