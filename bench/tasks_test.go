package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/host"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/mcptest"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
)

// buildBinary builds the real server once per benchmark run.
var buildBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "bench-bin")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "mcp-wasmhost")
	out, err := exec.Command("go", "build", "-o", bin, testenv.Path("cmd/mcp-wasmhost")).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// stdioServer starts the real binary serving textkit, with its tasks in store ("sqlite",
// "bolt" or "memory"), and returns a raw client on its stdio.
func stdioServer(b *testing.B, store string) *mcptest.Client {
	return stdioServerOf(b, store, testenv.Spec(b, "textkit", "plugins/textkit/textkit.wasm"))
}

// stdioServerOf starts the real binary serving plugins, with its tasks in store, and
// returns a raw client on its stdio.
func stdioServerOf(b *testing.B, store string, plugins ...plugins.Spec) *mcptest.Client {
	bin, err := buildBinary()
	if err != nil {
		b.Fatal(err)
	}
	cfg := filepath.Join(b.TempDir(), "config.toml")
	body := fmt.Sprintf("[server]\ncache_dir = %q\nlog_level = \"warn\"\n[tasks]\nmax_per_client = 100000\ndefault_ttl = \"10s\"\n"+
		"store = %q\ndata_dir = %q\n", testenv.CacheDir(), store, b.TempDir())
	for _, p := range plugins {
		body += fmt.Sprintf("[[plugins]]\nname = %q\npath = %q\nsha256 = %q\n", p.Name, p.Path, p.SHA256)
	}
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		b.Fatal(err)
	}
	return mcptest.Dial(b, &mcp.CommandTransport{Command: exec.Command(bin, "--config", cfg)}, nil)
}

// BenchmarkTaskCreate is the time from a task-augmented tools/call to its
// CreateTaskResult, over stdio to the real binary, for a C guest.
func BenchmarkTaskCreate(b *testing.B) {
	for _, store := range []string{"memory", "sqlite", "bolt"} {
		b.Run(store, func(b *testing.B) { benchTaskCreate(b, store) })
	}
}

func benchTaskCreate(b *testing.B, store string) {
	roundTrips(b, stdioServer(b, store), "tools/call", map[string]any{"name": "textkit_ping", "arguments": map[string]any{}, "task": map[string]any{}})
}

// BenchmarkTaskThroughput is tasks created and completed per second over stdio: each
// worker creates a task and waits for its result with tasks/result.
func BenchmarkTaskThroughput(b *testing.B) {
	for _, store := range []string{"memory", "sqlite", "bolt"} {
		for _, workers := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/c=%d", store, workers), func(b *testing.B) { benchTaskThroughput(b, store, workers) })
		}
	}
}

func benchTaskThroughput(b *testing.B, store string, workers int) {
	c := stdioServer(b, store)
	ctx := context.Background()
	var n atomic.Int64
	n.Store(int64(b.N))
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for n.Add(-1) >= 0 {
				var created struct {
					Task mcptest.Task `json:"task"`
				}
				c.MustCall("tools/call", map[string]any{"name": "textkit_ping", "arguments": map[string]any{}, "task": map[string]any{}}, &created)
				if _, err := c.Call(ctx, "tasks/result", map[string]any{"taskId": created.Task.TaskID}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "tasks/s")
}

// httpServer serves one plugin in-process over Streamable HTTP.
func httpServer(b *testing.B, name, path string) (string, *host.Server) {
	return httpServerOf(b, testenv.Spec(b, name, path))
}

// httpServerOf serves the plugin of spec in-process over Streamable HTTP.
func httpServerOf(b *testing.B, spec plugins.Spec) (string, *host.Server) {
	p := testenv.Load(b, testenv.Engine(b), spec)
	catalog, err := plugins.NewCatalog([]*plugins.Plugin{p})
	if err != nil {
		b.Fatal(err)
	}
	srv, err := host.New(catalog, host.Options{Tasks: tasks.Options{MaxPerOwner: 100000}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close(context.Background()) })
	hs := httptest.NewServer(srv.HTTPHandler())
	b.Cleanup(hs.Close)
	return hs.URL + "/mcp", srv
}

// BenchmarkTasksGet is tasks/get throughput over Streamable HTTP from 16 sessions.
func BenchmarkTasksGet(b *testing.B) {
	url, _ := httpServer(b, "textkit", "plugins/textkit/textkit.wasm")
	const sessions = 16
	clients := make([]*mcptest.Client, sessions)
	ids := make([]string, sessions)
	for i := range clients {
		clients[i] = mcptest.Dial(b, &mcp.StreamableClientTransport{Endpoint: url}, nil)
		ids[i] = clients[i].CreateTask("textkit_ping", map[string]any{}, map[string]any{}, nil).TaskID
	}
	var n atomic.Int64
	n.Store(int64(b.N))
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			for n.Add(-1) >= 0 {
				if _, err := clients[i].Call(context.Background(), "tasks/get", map[string]any{"taskId": ids[i]}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "gets/s")
}

// BenchmarkParkedTask is the memory one task costs while it waits at input_required:
// the process's RSS and Go heap before and after parking 200 tasks whose guests are
// blocked in their request for user input.
func BenchmarkParkedTask(b *testing.B) {
	for _, g := range []struct{ name, plugin, path, tool string }{
		{"c", "asker", "testdata/wasm/asker.wasm", "asker_ask"},
		{"go", "toolbox", "plugins/toolbox/toolbox.wasm", "toolbox_write_note"},
	} {
		b.Run(g.name, func(b *testing.B) {
			const parked = 200
			// Every parked task holds its instance, and so one of the plugin's
			// concurrent slots: room for all of them and the warm-up.
			spec := testenv.Spec(b, g.plugin, g.path)
			spec.Admission.MaxConcurrent = parked + 1
			for b.Loop() {
				url, _ := httpServerOf(b, spec)
				release := make(chan struct{})
				c := mcptest.Dial(b, &mcp.StreamableClientTransport{Endpoint: url}, func(*jsonrpc.Request) (any, error) {
					<-release
					return map[string]any{"action": "cancel"}, nil
				})
				args := map[string]any{}
				if g.name == "go" {
					args = map[string]any{"name": "parked.txt", "text": "x"}
				}
				// Warm up: one task through its whole life, so that one-time costs
				// (code, pools) are not counted per task.
				warm := c.CreateTask(g.tool, args, map[string]any{}, nil)
				c.WaitStatus(warm.TaskID, "input_required")
				c.MustCall("tasks/cancel", map[string]any{"taskId": warm.TaskID}, nil)

				rss0, heap0 := memory()
				ids := make([]string, parked)
				for i := range ids {
					ids[i] = c.CreateTask(g.tool, args, map[string]any{}, nil).TaskID
				}
				for _, id := range ids {
					c.WaitStatus(id, "input_required")
				}
				rss1, heap1 := memory()
				b.ReportMetric(float64(rss1-rss0)/parked/1024, "rss-KiB/task")
				b.ReportMetric(float64(heap1-heap0)/parked/1024, "heap-KiB/task")
				for _, id := range ids {
					c.MustCall("tasks/cancel", map[string]any{"taskId": id}, nil)
				}
				close(release)
			}
		})
	}
}

// memory returns the process's resident set and the Go heap in use, in bytes.
func memory() (rss, heap uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b, err := os.ReadFile("/proc/self/statm")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 {
			pages, _ := strconv.ParseUint(f[1], 10, 64)
			rss = pages * uint64(os.Getpagesize())
		}
	}
	return rss, ms.HeapInuse
}

// BenchmarkTasksGetPlainHTTP is BenchmarkTasksGet with a plain net/http client (no SDK
// on the client side), to see the server's own capacity: 16 goroutines POST tasks/get
// on their sessions and read each SSE response whole.
func BenchmarkTasksGetPlainHTTP(b *testing.B) {
	url, _ := httpServer(b, "textkit", "plugins/textkit/textkit.wasm")
	const sessions = 16
	type target struct{ session, body string }
	targets := make([]target, sessions)
	for i := range targets {
		c := mcptest.Dial(b, &mcp.StreamableClientTransport{Endpoint: url}, nil)
		id := c.CreateTask("textkit_ping", map[string]any{}, map[string]any{}, nil).TaskID
		targets[i] = target{c.Conn.SessionID(), `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"` + id + `"}}`}
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: sessions}}
	var n atomic.Int64
	n.Store(int64(b.N))
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for _, tg := range targets {
		wg.Go(func() {
			for n.Add(-1) >= 0 {
				req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(tg.body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Mcp-Session-Id", tg.session)
				req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"status":"completed"`) {
					b.Errorf("tasks/get = %d %s", resp.StatusCode, body)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "gets/s")
}
