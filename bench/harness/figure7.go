package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The plugins of the load figure: the bundled ones with their bundled grants, and
// admission limits written out so that the memory bound can be computed from them.
var (
	loadTextkit = Plugin{Name: "textkit", Path: "plugins/textkit/textkit.wasm", MemoryMiB: 16, Timeout: "5s",
		MaxConcurrent: 32}
	loadAsker   = Plugin{Name: "asker", Path: "testdata/wasm/asker.wasm", MemoryMiB: 16, Timeout: "30s", MaxConcurrent: 32}
	loadToolbox = Plugin{Name: "toolbox", Path: "plugins/toolbox/toolbox.wasm", MemoryMiB: 64, Timeout: "30s",
		MaxConcurrent: 16, Dirs: "[[plugins.dirs]]\nhost = {{docs}}\nguest = \"/docs\"\n\n[[plugins.dirs]]\nhost = {{notes}}\nguest = \"/notes\"\nwritable = true\n"}
)

// loadJob is one kind of task the load runs; jobs are dealt round-robin.
type loadJob struct {
	name string
	tool string
	args func(n int64) map[string]any
	ext  bool // run on a session that declared the Tasks extension, answering input with tasks/update
	// answer is the reply to the guest's request for input; nil: the guest asks nothing.
	answer json.RawMessage
}

var loadJobs = []loadJob{
	{name: "C ping", tool: "textkit_ping", args: func(int64) map[string]any { return map[string]any{} }},
	{name: "Go slow_count (progress)", tool: "toolbox_slow_count",
		args: func(int64) map[string]any { return map[string]any{"to": 5, "delay_ms": 20} }},
	{name: "Go slow_count on the Tasks extension", tool: "toolbox_slow_count", ext: true,
		args: func(int64) map[string]any { return map[string]any{"to": 2, "delay_ms": 5} }},
	{name: "Go write_note (answered input, writable grant)", tool: "toolbox_write_note", ext: true,
		args: func(n int64) map[string]any {
			return map[string]any{"name": fmt.Sprintf("load-%d.txt", n%64), "text": "x"}
		},
		answer: json.RawMessage(`{"action":"accept","content":{"confirm":true}}`)},
	{name: "C ask (answered input)", tool: "asker_ask", ext: true,
		args:   func(int64) map[string]any { return map[string]any{} },
		answer: json.RawMessage(`{"action":"accept","content":{"confirm":true}}`)},
}

// loadOutcome counts how the tasks of a load run ended.
type loadOutcome struct {
	completed, refused, failed, lost atomic.Int64
	mu                               sync.Mutex
	getLatency                       []time.Duration
	failures                         []string // the first few, for the report
}

func (o *loadOutcome) fail(format string, args ...any) {
	o.failed.Add(1)
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.failures) < 5 {
		o.failures = append(o.failures, fmt.Sprintf(format, args...))
	}
}

func (o *loadOutcome) observe(d time.Duration) {
	o.mu.Lock()
	o.getLatency = append(o.getLatency, d)
	o.mu.Unlock()
}

// admissionRefusal reports whether a message is the admission control's refusal ("plugin
// X is at its limit of N concurrent calls ..."): a task refused up front, by design.
func admissionRefusal(msg string) bool { return strings.Contains(msg, "is at its limit of") }

// Figure7 is the load test of issue #13: thousands of tasks from 50 HTTP sessions,
// C and Go guests with grants, progress and answered input, under admission control.
func (e *Env) Figure7(ctx context.Context) (*Figure, error) {
	total, sessions, inflight := pick(e, 5000, 200), 50, pick(e, 200, 50)
	plugins := []Plugin{loadTextkit, loadAsker, loadToolbox}
	budget := 0
	for _, p := range plugins {
		budget += p.MaxConcurrent * p.MemoryMiB
	}
	f := &Figure{N: 7, Title: fmt.Sprintf("Load: %d tasks from %d HTTP sessions, C and Go guests, admission control", total, sessions),
		What: fmt.Sprintf("%d tasks over Streamable HTTP from %d sessions (half on 2025-11-25 Tasks, half declaring the Tasks extension), "+
			"%d in flight at once, dealt round-robin over: %s. Each task is polled with tasks/get at the interval the server suggests "+
			"(pollInterval; poll_interval = %q here) until it ends; the "+
			"input requests of the extension's tasks are answered with tasks/update. Plugins run in worker processes with "+
			"max_concurrent textkit %d, asker %d, toolbox %d. Peak RSS is of the server and its workers, sampled every 100 ms.",
			total, sessions, inflight, jobNames(), PollInterval, loadTextkit.MaxConcurrent, loadAsker.MaxConcurrent, loadToolbox.MaxConcurrent),
		Baseline: fmt.Sprintf("the memory bound of issue #13: 1.5 x the sum of max_concurrent x memory_mib (%d MiB) plus the "+
			"server and workers at rest, measured before the load in the same run", budget),
		Reproduce: "go run ./bench/cmd/benchall -figures 7"}
	v := Variants[0]
	dir, err := e.TempDir()
	if err != nil {
		return nil, err
	}
	for _, sub := range []string{"docs", "notes"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "docs", "readme.txt"), []byte("load\n"), 0o644); err != nil {
		return nil, err
	}
	toolbox := loadToolbox
	toolbox.Dirs = strings.NewReplacer("{{docs}}", fmt.Sprintf("%q", filepath.Join(dir, "docs")),
		"{{notes}}", fmt.Sprintf("%q", filepath.Join(dir, "notes"))).Replace(toolbox.Dirs)
	for rep := range pick(e, 1, 1) {
		e.logf("figure 7, repetition %d", rep+1)
		s, err := e.Ours(v, "", loadTextkit, loadAsker, toolbox)
		if err != nil {
			return nil, err
		}
		p, err := s.Start(ctx, HTTP)
		if err != nil {
			return nil, err
		}
		var cs []*Client
		for i := range sessions {
			c, err := p.Dial(ctx, e.hc, Caps{Elicitation: true, TasksExtension: i%2 == 1})
			if err != nil {
				e.closeAll(p, cs)
				return nil, err
			}
			cs = append(cs, c)
		}
		rest, err := settledRSS(p)
		if err != nil {
			e.closeAll(p, cs)
			return nil, err
		}
		o, peak, took, err := runLoad(ctx, p, cs, total, inflight)
		e.closeAll(p, cs)
		if err != nil {
			return nil, fmt.Errorf("%w\n%s", err, p.Stderr())
		}
		f.add("tasks completed", "tasks", float64(o.completed.Load()))
		f.add("tasks refused up front (admission control)", "tasks", float64(o.refused.Load()))
		f.add("tasks failed otherwise (crashed, timed out, lost worker)", "tasks", float64(o.failed.Load()))
		f.add("tasks lost (not found, or never ended)", "tasks", float64(o.lost.Load()))
		f.add("throughput", "tasks/s", float64(o.completed.Load())/took.Seconds())
		f.add("tasks/get p50 during the load", "ms", percentile(o.getLatency, 0.50)/1e3)
		f.add("tasks/get p99 during the load", "ms", percentile(o.getLatency, 0.99)/1e3)
		f.add("server + workers at rest before the load", "MiB", float64(rest)/(1<<20))
		f.add("server + workers peak RSS during the load", "MiB", float64(peak)/(1<<20))
		bound := 1.5*float64(budget) + float64(rest)/(1<<20)
		f.add("memory bound: 1.5 x sum(max_concurrent x memory_mib) + at rest", "MiB", bound)
		for _, msg := range o.failures {
			e.logf("figure 7: %s", msg)
		}
	}
	main := v.Name
	med := func(label string) float64 {
		if r := f.find(label); r != nil {
			return r.Median()
		}
		return -1
	}
	failed, lost := med("tasks failed otherwise (crashed, timed out, lost worker)"), med("tasks lost (not found, or never ended)")
	f.Targets = append(f.Targets,
		Target{Variant: main, Goal: "every task completes or is refused up front; 0 failed, 0 lost",
			Got: fmt.Sprintf("%s failed, %s lost", format(failed), format(lost)), Met: failed == 0 && lost == 0},
		Target{Variant: main, Goal: "tasks/get p99 < 50 ms during the load",
			Got: format(med("tasks/get p99 during the load")) + " ms", Met: med("tasks/get p99 during the load") < 50,
			Why: "the load generator (200 task loops over 50 sessions), the server and its workers share the 2 cores; " +
				"workers run at nice 10, which took p50 from 11-26 ms to about 3 ms, but the server still competes with the " +
				"generator for the cores, and every tasks/get is a go-sdk Streamable HTTP request (a 32 KiB decode buffer per " +
				"message, an SSE-framed answer: issue #21). No per-stage profile of the tail yet"},
		Target{Variant: main, Goal: "peak RSS <= 1.5 x sum(max_concurrent x memory_mib) + the server at rest",
			Got: format(med("server + workers peak RSS during the load")) + " MiB of " +
				format(med("memory bound: 1.5 x sum(max_concurrent x memory_mib) + at rest")) + " MiB",
			Met: med("server + workers peak RSS during the load") <= med("memory bound: 1.5 x sum(max_concurrent x memory_mib) + at rest")})
	return f, nil
}

func jobNames() string {
	var names []string
	for _, j := range loadJobs {
		names = append(names, j.name)
	}
	return strings.Join(names, "; ")
}

// runLoad runs total tasks, inflight at a time, over the sessions cs (even ones on
// 2025-11-25 Tasks, odd ones on the Tasks extension), sampling p's RSS meanwhile.
func runLoad(ctx context.Context, p *Proc, cs []*Client, total, inflight int) (o *loadOutcome, peak int64, took time.Duration, err error) {
	o = &loadOutcome{}
	var legacy, ext []*Client
	for i, c := range cs {
		if i%2 == 1 {
			ext = append(ext, c)
		} else {
			legacy = append(legacy, c)
		}
	}
	sampled := make(chan struct{})
	stop := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			if rss, err := p.RSS(); err == nil && rss > peak {
				peak = rss
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := range inflight {
		wg.Go(func() {
			for {
				n := next.Add(1) - 1
				if n >= int64(total) || ctx.Err() != nil {
					return
				}
				job := loadJobs[n%int64(len(loadJobs))]
				pool := legacy
				if job.ext {
					pool = ext
				}
				runLoadTask(ctx, pool[w%len(pool)], job, n, o)
			}
		})
	}
	wg.Wait()
	took = time.Since(start)
	close(stop)
	<-sampled
	if err := ctx.Err(); err != nil {
		return nil, 0, 0, err
	}
	if n := o.completed.Load() + o.refused.Load() + o.failed.Load() + o.lost.Load(); n != int64(total) {
		return nil, 0, 0, fmt.Errorf("figure 7: %d outcomes for %d tasks", n, total)
	}
	return o, peak, took, nil
}

// extTaskState is a task as tasks/get shows it on the Tasks extension's wire.
type extTaskState struct {
	taskState
	ResultType    string                     `json:"resultType"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	Error         *Error                     `json:"error"`
	Result        *struct {
		IsError bool `json:"isError"`
	} `json:"result"`
}

// runLoadTask runs one task of job to its end and records the outcome.
func runLoadTask(ctx context.Context, c *Client, job loadJob, n int64, o *loadOutcome) {
	params := map[string]any{"name": job.tool, "arguments": job.args(n)}
	if !job.ext {
		params["task"] = map[string]any{"ttl": 600000}
		params["_meta"] = map[string]any{"progressToken": n}
	}
	raw, err := c.Call(ctx, "tools/call", params)
	if err != nil {
		var rpc *Error
		if errors.As(err, &rpc) && admissionRefusal(rpc.Message) {
			o.refused.Add(1)
			return
		}
		o.fail("%s: create: %v", job.tool, err)
		return
	}
	var created struct {
		Task *struct {
			taskState
			PollInterval int64 `json:"pollInterval"`
		} `json:"task"` // 2025-11-25
		TaskID         string `json:"taskId"`
		PollIntervalMs int64  `json:"pollIntervalMs"` // the Tasks extension
	}
	if err := json.Unmarshal(raw, &created); err != nil {
		o.fail("%s: create: %v", job.tool, err)
		return
	}
	// Poll as a client should: at the interval the server suggests.
	id, poll := created.TaskID, time.Duration(created.PollIntervalMs)*time.Millisecond
	if created.Task != nil {
		id, poll = created.Task.TaskID, time.Duration(created.Task.PollInterval)*time.Millisecond
	}
	if poll <= 0 {
		poll = time.Second
	}
	if id == "" {
		o.fail("%s: no task in %.200s", job.tool, raw)
		return
	}
	deadline := time.Now().Add(5 * time.Minute)
	answered := map[string]bool{}
	for time.Now().Before(deadline) {
		t0 := time.Now()
		raw, err := c.Call(ctx, "tasks/get", map[string]any{"taskId": id})
		o.observe(time.Since(t0))
		if err != nil {
			var rpc *Error
			if errors.As(err, &rpc) && rpc.Code == -32602 {
				o.lost.Add(1) // not found: a task must be served until its ttl ends
				return
			}
			o.fail("%s: tasks/get: %v", job.tool, err)
			return
		}
		var t extTaskState
		if err := json.Unmarshal(raw, &t); err != nil {
			o.fail("%s: tasks/get: %v", job.tool, err)
			return
		}
		switch t.Status {
		case "completed":
			if t.Result != nil && t.Result.IsError {
				o.fail("%s: completed with an error result", job.tool)
				return
			}
			o.completed.Add(1)
			return
		case "failed", "cancelled":
			if admissionRefusal(t.StatusMessage) || (t.Error != nil && admissionRefusal(t.Error.Message)) {
				o.refused.Add(1)
				return
			}
			msg := t.StatusMessage
			if t.Error != nil {
				msg = t.Error.Message
			}
			o.fail("%s: %s: %s", job.tool, t.Status, msg)
			return
		case "input_required":
			if job.answer == nil || !job.ext {
				o.fail("%s: asks for input it should not", job.tool)
				return
			}
			keys := make([]string, 0, len(t.InputRequests))
			for k := range t.InputRequests {
				if !answered[k] {
					keys = append(keys, k)
				}
			}
			slices.Sort(keys)
			if len(keys) > 0 {
				responses := map[string]json.RawMessage{}
				for _, k := range keys {
					responses[k] = job.answer
					answered[k] = true
				}
				if _, err := c.Call(ctx, "tasks/update", map[string]any{"taskId": id, "inputResponses": responses}); err != nil {
					o.fail("%s: tasks/update: %v", job.tool, err)
					return
				}
				continue
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(poll):
		}
	}
	o.lost.Add(1) // never ended
}
