package telemetry_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	tracev1 "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/mcptest"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
)

// binary is the real mcp-wasmhost, built once for the package.
var binary string

func TestMain(m *testing.M) {
	path, remove, err := testenv.BuildServer()
	if err != nil {
		panic(err)
	}
	binary = path
	if err := warmCache(); err != nil {
		remove()
		panic(err)
	}
	code := m.Run()
	remove()
	os.Exit(code)
}

// warmCache compiles the tests' Go guests into the shared compilation cache before
// any test starts a server: a cold compile of them on a loaded machine takes longer
// than a client waits for initialize.
func warmCache() error {
	var b strings.Builder
	fmt.Fprintf(&b, "[server]\ncache_dir = %q\n\n[tasks]\nstore = \"memory\"\n\n", testenv.CacheDir())
	for _, p := range []plugin{{"fetcher", "testdata/wasm/fetcher.wasm", ""}, {"jobs", "plugins/jobs/jobs.wasm", ""}, {"textkit", "plugins/textkit/textkit.wasm", ""}} {
		data, err := os.ReadFile(testenv.Path(p.wasm))
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		fmt.Fprintf(&b, "[[plugins]]\nname = %q\npath = %q\nsha256 = %q\n\n", p.name, testenv.Path(p.wasm), hex.EncodeToString(sum[:]))
	}
	dir, err := os.MkdirTemp("", "telemetry-warm")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		return err
	}
	if out, err := exec.Command(binary, "--config", file, "check").CombinedOutput(); err != nil {
		return fmt.Errorf("warm the compilation cache: %v\n%s", err, out)
	}
	return nil
}

// freeAddr is a loopback address nobody listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// plugin is one [[plugins]] table of a test config.
type plugin struct {
	name, wasm, extra string
}

// config writes a config with [server] lines srv and the plugins, each granted
// origin (a loopback URL; "" grants nothing).
func config(t *testing.T, srv, origin string, ps ...plugin) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "[server]\ncache_dir = %q\nlog_level = \"debug\"\n%s\n\n[tasks]\nstore = \"memory\"\npoll_interval = \"10ms\"\n\n", testenv.CacheDir(), srv)
	for _, p := range ps {
		path := testenv.Path(p.wasm)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		fmt.Fprintf(&b, "[[plugins]]\nname = %q\npath = %q\nsha256 = %q\ntimeout = \"20s\"\n%s\n\n", p.name, path, hex.EncodeToString(sum[:]), p.extra)
		if origin != "" {
			fmt.Fprintf(&b, "[[plugins.net]]\norigins = [%q]\nallow_addresses = [\"127.0.0.1/32\"]\npath_prefixes = [\"/ok\", \"/jobs\"]\n\n", origin)
		}
	}
	file := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// serve starts the binary on config file over stdio; onRequest answers the
// server's requests.
func serve(t *testing.T, file string, onRequest func(*jsonrpc.Request) (any, error)) (*mcptest.Client, *exec.Cmd, *testenv.SyncBuffer) {
	t.Helper()
	cmd := exec.Command(binary, "--config", file)
	stderr := &testenv.SyncBuffer{}
	cmd.Stderr = stderr
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", stderr)
		}
	})
	if onRequest == nil {
		onRequest = func(*jsonrpc.Request) (any, error) { return nil, errors.New("no") }
	}
	return mcptest.Dial(t, &mcp.CommandTransport{Command: cmd}, onRequest), cmd, stderr
}

// upstream is a local HTTP server standing for an API a guest calls: it records
// each request's path and traceparent, and answers POST /jobs as a job service.
type upstream struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string // "path traceparent"
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.seen = append(u.seen, r.URL.Path+" "+r.Header.Get("Traceparent"))
		u.mu.Unlock()
		if r.Method == http.MethodPost && r.URL.Path == "/jobs" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			fmt.Fprint(w, `{"id":"j1","status":"running"}`)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) requests() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.seen...)
}

func callTool(t *testing.T, c *mcptest.Client, tool string, args any, meta map[string]any) string {
	t.Helper()
	params := map[string]any{"name": tool, "arguments": args}
	if meta != nil {
		params["_meta"] = meta
	}
	raw, err := c.Call(context.Background(), "tools/call", params)
	if err != nil {
		t.Fatalf("tools/call %s: %v", tool, err)
	}
	return string(raw)
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still not true after 30s: %s", what)
		}
	}
}

func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /metrics = %d, %v", resp.StatusCode, err)
	}
	return string(b)
}

// sample is the value of the metric line name{labels} in a scrape, or -1.
func sample(scrape, series string) float64 {
	for _, line := range strings.Split(scrape, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			var v float64
			fmt.Sscan(rest, &v)
			return v
		}
	}
	return -1
}

// TestMetricsAfterKnownWorkload runs a known workload against the real binary and
// checks the scrape: promtool accepts it, and the counters say what happened.
func TestMetricsAfterKnownWorkload(t *testing.T) {
	up := newUpstream(t)
	addr := freeAddr(t)
	block := make(chan struct{})
	defer close(block)
	file := config(t, fmt.Sprintf("metrics = %q", addr), up.URL,
		plugin{"fw", "testdata/wasm/fetcher.wasm", ""},
		plugin{"ft", "testdata/wasm/fetcher.wasm", "trusted = true"},
		plugin{"jobs", "plugins/jobs/jobs.wasm", fmt.Sprintf("env = { JOBS_URL = %q }", up.URL)},
		plugin{"textkit", "plugins/textkit/textkit.wasm", ""},
		// One call at a time, one more may wait a millisecond: the admission refusal.
		plugin{"loop", "testdata/wasm/loop.wasm", "trusted = true\nmax_concurrent = 1\nmax_queued = 1\nqueue_timeout = \"1ms\""})
	c, cmd, log := serve(t, file, func(r *jsonrpc.Request) (any, error) {
		<-block // the parked task's question is never answered during the test
		return nil, errors.New("no")
	})

	secret := "/ok/secret-path-4417?token=hunter2"
	for _, tool := range []string{"fw_fetch", "ft_fetch"} {
		callTool(t, c, tool, map[string]any{"requests": []map[string]any{
			{"url": up.URL + secret},                              // allowed
			{"url": up.URL + "/forbidden-path-9931"},              // refused: not under the prefixes
			{"url": "http://127.0.0.2:1/not-configured-origin-7"}, // refused: no rule
		}}, nil)
	}
	callTool(t, c, "textkit_ping", map[string]any{}, nil)
	task := c.CreateTask("jobs_deploy", map[string]any{"service": "api", "version": "1"}, map[string]any{}, nil)
	c.WaitStatus(task.TaskID, "input_required")

	// A worker killed from outside: the supervisor restarts it. Every worker must
	// run first: one killed while it still starts is a failed start, which the
	// supervisor retries (a start, not a restart). fw, jobs and textkit run in two
	// workers each.
	eventually(t, "every worker started", func() bool {
		return sumOf(scrape(t, addr), "mcpwh_worker_starts_total{") >= 6
	})
	// One of textkit's: a jobs worker holds the parked task, which the checks below
	// count.
	var textkitPID int
	started := regexp.MustCompile(`msg="worker started" plugin=textkit pid=(\d+)`)
	for _, m := range started.FindAllStringSubmatch(log.String(), -1) {
		pid, _ := strconv.Atoi(m[1])
		if slices.Contains(testenv.Children(cmd.Process.Pid), pid) {
			textkitPID = pid
		}
	}
	if textkitPID == 0 {
		t.Fatalf("no live textkit worker process found in the log:\n%s", log)
	}
	// The parked task's instance holds its linear memory; its worker says so within
	// a second.
	eventually(t, "the parked jobs call's memory in the gauge", func() bool {
		return sample(scrape(t, addr), `mcpwh_live_memory_bytes{plugin="jobs"}`) >= 65536
	})
	before := scrape(t, addr)
	if err := syscall.Kill(textkitPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var m string
	eventually(t, "a worker restart and its start counted", func() bool {
		m = scrape(t, addr)
		return sumOf(m, "mcpwh_worker_restarts_total{") > 0 && sumOf(m, "mcpwh_worker_starts_total{") > sumOf(before, "mcpwh_worker_starts_total{")
	})

	// promtool accepts the scrape.
	check := exec.Command("promtool", "check", "metrics")
	check.Stdin = strings.NewReader(m)
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}

	origin := "http://" + strings.TrimPrefix(up.URL, "http://")
	for _, tc := range []struct {
		series string
		want   float64
	}{
		{`mcpwh_egress_requests_total{decision="allowed",origin="` + origin + `",plugin="fw"}`, 1},
		{`mcpwh_egress_requests_total{decision="refused",origin="` + origin + `",plugin="fw"}`, 1},
		{`mcpwh_egress_requests_total{decision="refused",origin="none",plugin="fw"}`, 1},
		{`mcpwh_egress_requests_total{decision="allowed",origin="` + origin + `",plugin="ft"}`, 1},
		{`mcpwh_egress_requests_total{decision="refused",origin="` + origin + `",plugin="ft"}`, 1},
		{`mcpwh_egress_requests_total{decision="refused",origin="none",plugin="ft"}`, 1},
		{`mcpwh_tool_call_duration_seconds_count{outcome="ok",plugin="textkit",tool="textkit_ping"}`, 1},
		{`mcpwh_tool_call_duration_seconds_count{outcome="ok",plugin="fw",tool="fw_fetch"}`, 1},
		{`mcpwh_guest_host_calls_total{kind="http",plugin="fw"}`, 3},
		{`mcpwh_guest_host_calls_total{kind="http",plugin="ft"}`, 3},
		{`mcpwh_guest_host_calls_total{kind="input",plugin="jobs"}`, 0}, // counted when the call ends
		{`mcpwh_tasks_input_required`, 1},
		{`mcpwh_task_transitions_total{state="input_required"}`, 1},
		{`mcpwh_requests_total{method="tools/call",transport="stdio",wire="2025-11-25"}`, 4},
		{`mcpwh_live_instances{plugin="jobs"}`, 1},
		{`mcpwh_live_instances{plugin="textkit"}`, 0},
		{`mcpwh_live_memory_bytes{plugin="textkit"}`, 0},
		{`mcpwh_live_memory_bytes{plugin="ft"}`, 0},
		{`mcpwh_live_memory_bytes{plugin="fw"}`, 0},
		{`mcpwh_refusals_total{kind="admission"}`, 0},
	} {
		got := sample(m, tc.series)
		if tc.want == 0 && got == -1 {
			continue // a series at zero need not be shown
		}
		if got != tc.want {
			t.Errorf("%s = %v, want %v", tc.series, got, tc.want)
		}
	}
	if sumOf(m, `mcpwh_worker_restarts_total{plugin=`) < 1 || !strings.Contains(grep(m, "mcpwh_worker_restarts_total{"), `reason="exited"`) {
		t.Errorf("the killed worker's restart is not counted as exited:\n%s", grep(m, "worker_"))
	}
	if sumOf(m, `mcpwh_task_store_operation_seconds_count{op="put"`) < 2 {
		t.Errorf("store put operations not counted:\n%s", grep(m, "task_store"))
	}
	if sumOf(m, `mcpwh_guest_cpu_seconds_count{plugin="textkit"}`) != 1 {
		t.Errorf("the lone textkit call in its worker has no CPU time:\n%s", grep(m, "guest_cpu"))
	}
	if sumOf(m, "process_cpu_seconds_total") <= 0 || sumOf(m, "go_goroutines") <= 0 {
		t.Errorf("no process or Go collector in the scrape")
	}
	for _, leak := range []string{"secret-path", "hunter2", "forbidden-path", "not-configured-origin", "127.0.0.2"} {
		if strings.Contains(m, leak) {
			t.Errorf("the scrape shows %q, part of a URL", leak)
		}
	}

	// Then: a running call (trusted, in this process) holds memory too; a second call
	// of its plugin finds the one slot taken and the queue's wait over, and is refused;
	// once the running and the parked call are cancelled, the gauges are back to 0.
	spin := c.CreateTask("loop_spin", map[string]any{}, map[string]any{}, nil)
	eventually(t, "the spinning call's instance and memory in the gauges", func() bool {
		m := scrape(t, addr)
		return sample(m, `mcpwh_live_instances{plugin="loop"}`) == 1 && sample(m, `mcpwh_live_memory_bytes{plugin="loop"}`) >= 65536
	})
	if err := c.CallErr0("tools/call", map[string]any{"name": "loop_spin", "arguments": map[string]any{}}); err == nil || err.Code != -32000 {
		t.Errorf("a second loop_spin = %v, want the admission refusal (-32000)", err)
	}
	for _, id := range []string{spin.TaskID, task.TaskID} {
		if _, err := c.Call(context.Background(), "tasks/cancel", map[string]any{"taskId": id}); err != nil {
			t.Fatalf("tasks/cancel %s: %v", id, err)
		}
	}
	eventually(t, "the gauges back to 0 after the calls ended", func() bool {
		m = scrape(t, addr)
		for _, p := range []string{"loop", "jobs"} {
			if sample(m, `mcpwh_live_instances{plugin="`+p+`"}`) != 0 || sample(m, `mcpwh_live_memory_bytes{plugin="`+p+`"}`) != 0 {
				return false
			}
		}
		return true
	})
	if got := sample(m, `mcpwh_refusals_total{kind="admission"}`); got != 1 {
		t.Errorf("admission refusals = %v, want 1:\n%s", got, grep(m, "refusals"))
	}
	if got := sample(m, `mcpwh_tasks_input_required`); got != 0 {
		t.Errorf("parked tasks = %v after the cancel, want 0", got)
	}

	t.Run("http", httpWorkload)
}

// httpWorkload runs the binary over Streamable HTTP with API keys, a rate limit,
// metrics and tracing: a request with a bad token, requests past the rate limit, and
// a tools/call whose parent is the traceparent HTTP header. promtool accepts the
// scrape; the counters and the span say what happened.
func httpWorkload(t *testing.T) {
	metricsAddr, httpAddr := freeAddr(t), freeAddr(t)
	col := newCollector(t)
	sum := func(k string) string { s := sha256.Sum256([]byte(k)); return hex.EncodeToString(s[:]) }
	file := config(t, fmt.Sprintf(`metrics = %q

[server.tracing]
endpoint = %q

[server.auth]
mode = "api_keys"
rate_limit = 0.1
rate_burst = 4

[[server.auth.keys]]
name = "main"
sha256 = %q

[[server.auth.keys]]
name = "flood"
sha256 = %q

[[server.auth.grants]]
key = "main"
tools = ["textkit_*"]`, metricsAddr, col.URL, sum("key-main"), sum("key-flood")), "",
		plugin{"textkit", "plugins/textkit/textkit.wasm", "trusted = true"})
	cmd := exec.Command(binary, "--config", file, "--http", httpAddr)
	log := &testenv.SyncBuffer{}
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", log)
		}
	})
	url := "http://" + httpAddr + "/mcp"
	eventually(t, "the server serves HTTP", func() bool { return strings.Contains(log.String(), "serving Streamable HTTP") })

	post := func(key string, header map[string]string, msg map[string]any) (*http.Response, string) {
		t.Helper()
		body, _ := json.Marshal(msg)
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+key)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}

	// A bad token: 401, counted as invalid_token.
	if resp, _ := post("not-a-key", nil, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "ping"}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a bad token: HTTP %d, want 401", resp.StatusCode)
	}
	// A session, and a tools/call whose trace context is in the HTTP header.
	resp, _ := post("key-main", nil, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize",
		"params": map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "raw", "version": "1"}}})
	session := map[string]string{"Mcp-Session-Id": resp.Header.Get("Mcp-Session-Id"), "MCP-Protocol-Version": "2025-11-25"}
	if resp.StatusCode != http.StatusOK || session["Mcp-Session-Id"] == "" {
		t.Fatalf("initialize: HTTP %d, session %q", resp.StatusCode, session["Mcp-Session-Id"])
	}
	post("key-main", session, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	const traceID, clientSpan = "4bf92f3577b34da6a3ce929d0e0e47ff", "00f067aa0ba902b7"
	session["Traceparent"] = "00-" + traceID + "-" + clientSpan + "-01"
	if resp, body := post("key-main", session, map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call",
		"params": map[string]any{"name": "textkit_ping", "arguments": map[string]any{}}}); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"result"`) {
		t.Fatalf("tools/call textkit_ping: HTTP %d %s", resp.StatusCode, body)
	}
	// Past the rate limit (a burst of 4, then one request in 10 s): 429.
	limited := false
	for range 8 {
		if resp, _ := post("key-flood", nil, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "ping"}); resp.StatusCode == http.StatusTooManyRequests {
			limited = true
			break
		}
	}
	if !limited {
		t.Errorf("8 requests at once past a burst of 4 were never refused with 429")
	}

	m := scrape(t, metricsAddr)
	check := exec.Command("promtool", "check", "metrics")
	check.Stdin = strings.NewReader(m)
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		series string
		want   float64
	}{
		{`mcpwh_auth_failures_total{reason="invalid_token"}`, 1},
		{`mcpwh_refusals_total{kind="rate_limit"}`, 1},
		{`mcpwh_requests_total{method="tools/call",transport="http",wire="2025-11-25"}`, 1},
		{`mcpwh_tool_call_duration_seconds_count{outcome="ok",plugin="textkit",tool="textkit_ping"}`, 1},
	} {
		if got := sample(m, tc.series); got != tc.want {
			t.Errorf("%s = %v, want %v", tc.series, got, tc.want)
		}
	}

	// The call's server span is the header's child (spans leave within a second).
	var call *tracev1.Span
	eventually(t, "the tools/call span arrives", func() bool {
		call = find(col.all(), "tools/call textkit_ping", traceID)
		return call != nil
	})
	if id(call.ParentSpanId) != clientSpan || call.Kind != tracev1.Span_SPAN_KIND_SERVER || attr(call, "network.transport") != "tcp" ||
		attr(call, "mcp.session.id") != session["Mcp-Session-Id"] {
		t.Errorf("tools/call span: parent %s kind %v transport %q session %q; want the header's %s, server, tcp, the session",
			id(call.ParentSpanId), call.Kind, attr(call, "network.transport"), attr(call, "mcp.session.id"), clientSpan)
	}
}

// sumOf adds the values of every line that starts with prefix.
func sumOf(scrape, prefix string) float64 {
	var total float64
	for _, line := range strings.Split(scrape, "\n") {
		if strings.HasPrefix(line, prefix) {
			var v float64
			fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v)
			total += v
		}
	}
	return total
}

func grep(s, sub string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// TestReportMeta: with report_meta the result's _meta holds the call's report, in a
// worker (CPU measured: the call ran alone) and trusted; without it, nothing. The
// debug log has the report line either way.
func TestReportMeta(t *testing.T) {
	for _, tc := range []struct {
		name, server, extra string
		meta, cpu           bool
	}{
		{"worker", "report_meta = true", "", true, true},
		{"trusted", "report_meta = true", "trusted = true", true, false},
		{"off", "", "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := config(t, tc.server, "", plugin{"textkit", "plugins/textkit/textkit.wasm", tc.extra})
			c, _, stderr := serve(t, file, nil)
			var res struct {
				Meta map[string]struct {
					QueueMs, InstantiateMs, RunMs float64
					CPUMs                         *float64
					MemoryBytes                   uint64
					HostCalls                     map[string]int
				} `json:"_meta"`
			}
			raw := callTool(t, c, "textkit_ping", map[string]any{}, nil)
			if err := json.Unmarshal([]byte(raw), &res); err != nil {
				t.Fatal(err)
			}
			rep, ok := res.Meta["io.github.mcp-wasmhost/report"]
			if ok != tc.meta {
				t.Fatalf("report in _meta = %v, want %v: %s", ok, tc.meta, raw)
			}
			// InstantiateMs may be 0: a kept instance is ready in under a microsecond
			// (sandbox/kept.go), and the report counts whole microseconds.
			if ok && (rep.RunMs <= 0 || rep.InstantiateMs < 0 || rep.MemoryBytes < 65536 || (rep.CPUMs != nil) != tc.cpu) {
				t.Errorf("report = %+v (cpu %v), want positive times, memory, cpu measured %v", rep, rep.CPUMs, tc.cpu)
			}
			eventually(t, "the call report debug line", func() bool { return strings.Contains(stderr.String(), `msg="call report" tool=textkit_ping`) })
		})
	}
}
