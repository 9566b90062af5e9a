package metrics

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
	"github.com/mcp-wasmhost/mcp-wasmhost/worker"
)

const ns = "mcpwh"

// Outcomes of a tool call, the outcome label of ToolCall.
const (
	OutcomeOK      = "ok"       // a result without isError
	OutcomeIsError = "is_error" // a result with isError: the tool failed (the guest said so, or crashed)
	OutcomeError   = "error"    // a JSON-RPC error: refused, busy, a protocol error
)

// Decisions on an egress request, the decision label of Egress.
const (
	EgressAllowed = "allowed" // sent, whatever the upstream answered
	EgressRefused = "refused" // the policy refused it; nothing was sent
	EgressFailed  = "failed"  // allowed, but it failed on the way (connect, timeout, too large)
)

// Kinds of refusal, the kind label of Refused.
const (
	RefusedRateLimit = "rate_limit" // [server.auth] rate limit: HTTP 429
	RefusedAdmission = "admission"  // a plugin's max_concurrent + max_queued: busy
	RefusedSessions  = "sessions"   // [server] max_sessions: HTTP 503
)

// Live is what the live-instance gauges read when scraped: each plugin's
// instances now.
type Live interface {
	Live() map[string]Instances
}

// Instances are a plugin's live guest instances (running or parked) and the bytes
// of linear memory they hold.
type Instances struct {
	Count, MemoryBytes int64
}

// Metrics is the server's metrics. Its methods are safe for concurrent use, and
// do nothing on a nil *Metrics.
type Metrics struct {
	reg *prometheus.Registry

	requests     *prometheus.CounterVec
	requestTime  *prometheus.HistogramVec
	toolCalls    *prometheus.HistogramVec
	queue        *prometheus.HistogramVec
	instantiate  *prometheus.HistogramVec
	run          *prometheus.HistogramVec
	cpu          *prometheus.HistogramVec
	memory       *prometheus.HistogramVec
	hostCalls    *prometheus.CounterVec
	workerStarts *prometheus.CounterVec
	workerKills  *prometheus.CounterVec
	restarts     *prometheus.CounterVec
	transitions  *prometheus.CounterVec
	parked       prometheus.Gauge
	storeOps     *prometheus.HistogramVec
	egress       *prometheus.CounterVec
	authFailures *prometheus.CounterVec
	refused      *prometheus.CounterVec

	mu        sync.Mutex
	parkedIDs map[string]struct{} // tasks in input_required now

	series series // the per-call series, resolved once per label values
}

// durations are the buckets of every duration histogram, in seconds: 50 µs to 60 s.
var durations = []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// New returns the metrics in a registry of their own, with the Go runtime's and
// the process's collectors. live, if not nil, feeds the live-instance gauge.
func New(live Live) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), parkedIDs: map[string]struct{}{}}
	hist := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: name, Help: help, Buckets: buckets}, labels)
	}
	count := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help}, labels)
	}
	m.requests = count("requests_total", "MCP requests and notifications received, by method (unknown methods: other), Tasks wire and transport.", "method", "wire", "transport")
	m.requestTime = hist("request_duration_seconds", "Time to answer an MCP request, by method.", durations, "method")
	m.toolCalls = hist("tool_call_duration_seconds", "A plugin tool's run, from the guest call to its result (after the arguments' check; a task's run when it ends), by outcome (ok, is_error, error).", durations, "plugin", "tool", "outcome")
	m.queue = hist("guest_queue_seconds", "Time a call waited for one of its plugin's slots (max_concurrent).", durations, "plugin")
	m.instantiate = hist("guest_instantiate_seconds", "Time to make a call's guest instance ready: a fresh one, or a kept one restored.", durations, "plugin")
	m.run = hist("guest_run_seconds", "Time a guest ran, waits for answers included.", durations, "plugin")
	m.cpu = hist("guest_cpu_seconds", "CPU time of a call, measured in a worker for calls that ran alone in it.", durations, "plugin")
	m.memory = hist("guest_memory_bytes", "Peak linear memory of a call's instance, when the call ended (mcpwh_live_memory_bytes: what live instances hold now).", prometheus.ExponentialBuckets(64<<10, 4, 10), "plugin")
	m.hostCalls = count("guest_host_calls_total", "Host calls guests made, by kind (log, progress, input, http, other).", "plugin", "kind")
	m.workerStarts = count("worker_starts_total", "Worker processes started and ready.", "plugin")
	m.workerKills = count("worker_kills_total", "Worker processes the server killed, by reason.", "plugin", "reason")
	m.restarts = count("worker_restarts_total", "Worker processes restarted after they stopped, by why they stopped.", "plugin", "reason")
	m.transitions = count("task_transitions_total", "Task status changes, by the state entered.", "state")
	m.parked = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "tasks_input_required", Help: "Tasks of this server parked in input_required now."})
	m.storeOps = hist("task_store_operation_seconds", "Task store operations, by operation and outcome (ok, error).", durations, "op", "outcome")
	m.egress = count("egress_requests_total", "Guest HTTP requests, by plugin, the configured origin that allowed them (none when no rule matched) and decision (allowed, refused, failed).", "plugin", "origin", "decision")
	m.authFailures = count("auth_failures_total", "HTTP requests refused by [server.auth], by reason (missing_token, invalid_token, insufficient_scope).", "reason")
	m.refused = count("refusals_total", "Requests refused for load, by kind (rate_limit, admission, sessions).", "kind")
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.requests, m.requestTime, m.toolCalls, m.queue, m.instantiate, m.run, m.cpu, m.memory, m.hostCalls,
		m.workerStarts, m.workerKills, m.restarts, m.transitions, m.parked, m.storeOps, m.egress,
		m.authFailures, m.refused)
	if live != nil {
		m.reg.MustRegister(liveCollector{live})
	}
	for _, s := range []tasks.Status{tasks.Working, tasks.InputRequired, tasks.Completed, tasks.Failed, tasks.Cancelled} {
		m.transitions.WithLabelValues(string(s))
	}
	for _, k := range []string{RefusedRateLimit, RefusedAdmission, RefusedSessions} {
		m.refused.WithLabelValues(k)
	}
	return m
}

// Registry is the registry the metrics are in, for a test or another handler.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Serve serves /metrics on ln until ctx ends.
func (m *Metrics) Serve(ctx context.Context, ln net.Listener) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdown); err != nil {
		hs.Close()
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Request counts one MCP message of method (Method bounds it) on a Tasks wire and
// transport ("stdio" or "http"), answered in d (0 for a notification).
func (m *Metrics) Request(method, wire, transport string, d time.Duration) {
	if m == nil {
		return
	}
	r := m.series.request(m, requestKey{Method(method), wire, transport})
	r.count.Inc()
	if d > 0 {
		r.time.Observe(d.Seconds())
	}
}

// ToolCall records a tools/call of plugin's tool that ended with outcome after d.
func (m *Metrics) ToolCall(plugin, tool, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	m.series.tool(m, toolKey{plugin, tool, outcome}).Observe(d.Seconds())
}

// Report records a call's resource report.
func (m *Metrics) Report(plugin string, r *sandbox.Report) {
	if m == nil || r == nil {
		return
	}
	p := m.series.plugin(m, plugin)
	p.queue.Observe(r.Queue.Seconds())
	if r.Run > 0 || r.Instantiate > 0 {
		p.instantiate.Observe(r.Instantiate.Seconds())
		p.run.Observe(r.Run.Seconds())
	}
	if r.CPU > 0 {
		p.cpuOf(m, plugin).Observe(r.CPU.Seconds())
	}
	if r.MemoryBytes > 0 {
		p.memory.Observe(float64(r.MemoryBytes))
	}
	for k, n := range r.HostCalls {
		if n > 0 {
			p.hostCallsOf(m, plugin, sandbox.HostCall(k)).Add(float64(n))
		}
	}
}

// Events returns the metrics as a worker.Supervisor's Events (nil: none).
func (m *Metrics) Events() worker.Events {
	if m == nil {
		return nil
	}
	return workerEvents{m}
}

type workerEvents struct{ m *Metrics }

func (w workerEvents) WorkerStarted(plugin string) { w.m.workerStarts.WithLabelValues(plugin).Inc() }
func (w workerEvents) WorkerKilled(plugin string, why worker.StopReason) {
	w.m.workerKills.WithLabelValues(plugin, why.String()).Inc()
}
func (w workerEvents) WorkerRestarted(plugin string, why worker.StopReason) {
	w.m.restarts.WithLabelValues(plugin, why.String()).Inc()
}

// TaskChanged records a task's change of status (tasks.Options.OnChange).
func (m *Metrics) TaskChanged(t tasks.Task) {
	if m == nil {
		return
	}
	m.transitions.WithLabelValues(string(t.Status)).Inc()
	m.mu.Lock()
	defer m.mu.Unlock()
	_, was := m.parkedIDs[t.ID]
	switch now := t.Status == tasks.InputRequired; {
	case now && !was:
		m.parkedIDs[t.ID] = struct{}{}
	case !now && was:
		delete(m.parkedIDs, t.ID)
	}
	m.parked.Set(float64(len(m.parkedIDs)))
}

// StoreOp records a task store operation (see tasks.Observe).
func (m *Metrics) StoreOp(op string, d time.Duration, err error) {
	if m == nil {
		return
	}
	outcome := "ok"
	if err != nil && !errors.Is(err, tasks.ErrNotFound) {
		outcome = "error"
	}
	m.storeOps.WithLabelValues(op, outcome).Observe(d.Seconds())
}

// Egress records a guest HTTP request of plugin: origin is the configured origin
// that allowed it ("" when none did), decision one of the Egress constants.
func (m *Metrics) Egress(plugin, origin, decision string) {
	if m == nil {
		return
	}
	if origin == "" {
		origin = "none"
	}
	m.egress.WithLabelValues(plugin, origin, decision).Inc()
}

// AuthFailure records a request [server.auth] refused for reason.
func (m *Metrics) AuthFailure(reason string) {
	if m == nil {
		return
	}
	m.authFailures.WithLabelValues(reason).Inc()
}

// Refused records a request refused for load (a Refused constant).
func (m *Metrics) Refused(kind string) {
	if m == nil {
		return
	}
	m.refused.WithLabelValues(kind).Inc()
}

// liveCollector reads the live instances of each plugin when scraped.
type liveCollector struct{ live Live }

var (
	liveDesc       = prometheus.NewDesc(ns+"_live_instances", "Guest instances of a plugin that exist now (running or parked).", []string{"plugin"}, nil)
	liveMemoryDesc = prometheus.NewDesc(ns+"_live_memory_bytes", "Linear memory the plugin's live guest instances hold now (running or parked; in a worker, as it last said, at most a second ago).", []string{"plugin"}, nil)
)

func (c liveCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- liveDesc
	ch <- liveMemoryDesc
}

func (c liveCollector) Collect(ch chan<- prometheus.Metric) {
	for plugin, in := range c.live.Live() {
		ch <- prometheus.MustNewConstMetric(liveDesc, prometheus.GaugeValue, float64(in.Count), plugin)
		ch <- prometheus.MustNewConstMetric(liveMemoryDesc, prometheus.GaugeValue, float64(in.MemoryBytes), plugin)
	}
}
