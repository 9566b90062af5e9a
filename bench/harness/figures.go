package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Figures are the six figures of issue #8, the load test of issue #13, the
// observability overhead of issue #20, the task journal of issue #22, the side-by-side
// of issue #21 and the cross-instance cancel delay of issue #15, by number (8 is not one
// of this package's).
var Figures = map[int]func(*Env, context.Context) (*Figure, error){
	1: (*Env).Figure1, 2: (*Env).Figure2, 3: (*Env).Figure3, 4: (*Env).Figure4, 5: (*Env).Figure5, 6: (*Env).Figure6, 7: (*Env).Figure7,
	9: (*Env).Figure9, 10: (*Env).Figure10, 11: (*Env).Figure11, 12: (*Env).Figure12,
}

// pick returns the full-run value or, in smoke mode, the smoke value.
func pick[T any](e *Env, full, smoke T) T {
	if e.Smoke {
		return smoke
	}
	return full
}

// guest is a tool measured in figure 1, with the module it runs in.
type guest struct {
	label, plugin, path, tool, args string
	n                               int // calls per repetition
}

// Figure1 is the sync tools/call round trip for a C and a Go guest, over stdio and
// HTTP to the real binary, beside bare wazero instantiating and calling the same module
// in this process, and beside the native peers' trivial tool.
func (e *Env) Figure1(ctx context.Context) (*Figure, error) {
	f := &Figure{N: 1, Title: "Sync tools/call round trip, C and Go guest, vs bare wazero",
		What: "p50 of sequential `tools/call` round trips from the raw client to the real binary (one session), " +
			"for `textkit_ping` (C guest) and `stateful_remember` (Go guest).",
		Baseline: "bare wazero instantiating the same .wasm and calling `mcpwh_call` in the harness process (the floor: no MCP, no limits, no checks); " +
			"the native peers' trivial `ping` over the same client.",
		Reproduce: "go run ./bench/cmd/benchall -figures 1 (and `go test ./bench -run '^$' -bench Figure1`)"}
	guests := []guest{
		{"C guest", "textkit", textkit.Path, "ping", `{}`, pick(e, 2000, 50)},
		{"Go guest", "stateful", stateful.Path, "remember", `{"value":"x"}`, pick(e, 300, 5)},
	}
	for rep := range e.Reps {
		e.logf("figure 1, repetition %d", rep+1)
		for _, g := range guests {
			b, err := NewBare(ctx, e.cache, filepath.Join(e.Root, g.path), g.tool, g.args)
			if err != nil {
				return nil, err
			}
			if _, err := roundTrips(ctx, g.n/10+1, b.Call); err != nil { // warm-up
				return nil, err
			}
			lat, err := roundTrips(ctx, g.n, b.Call)
			b.Close(ctx)
			if err != nil {
				return nil, fmt.Errorf("bare wazero %s: %w", g.label, err)
			}
			f.add("bare wazero, "+g.label, "us p50", percentile(lat, .5))
		}
		var servers []Server
		for _, v := range Variants {
			if v.in(1) {
				s, err := e.Ours(v, "", textkit, stateful)
				if err != nil {
					return nil, err
				}
				servers = append(servers, s)
			}
		}
		for _, s := range servers {
			for _, tr := range []string{Stdio, HTTP} {
				p, cs, err := e.open(ctx, s, tr, 1, Caps{})
				if err != nil {
					return nil, err
				}
				for _, g := range guests {
					call := func(ctx context.Context) error { return callTool(ctx, cs[0], g.plugin+"_"+g.tool, rawJSON(g.args)) }
					if _, err = roundTrips(ctx, g.n/10+1, call); err == nil {
						var lat []time.Duration
						if lat, err = roundTrips(ctx, g.n, call); err == nil {
							f.add(fmt.Sprintf("%s, %s, %s", s.Name, tr, g.label), "us p50", percentile(lat, .5))
						}
					}
					if err != nil {
						e.closeAll(p, cs)
						return nil, fmt.Errorf("%s over %s: %w\n%s", s.Name, tr, err, p.Stderr())
					}
				}
				e.closeAll(p, cs)
			}
		}
		for _, s := range e.Peers() {
			for _, tr := range []string{Stdio, HTTP} {
				p, cs, err := e.open(ctx, s, tr, 1, Caps{})
				if err != nil {
					return nil, err
				}
				call := func(ctx context.Context) error { return callTool(ctx, cs[0], s.Tool, map[string]any{}) }
				var lat []time.Duration
				if _, err = roundTrips(ctx, pick(e, 200, 5), call); err == nil {
					lat, err = roundTrips(ctx, pick(e, 2000, 50), call)
				}
				e.closeAll(p, cs)
				if err != nil {
					return nil, fmt.Errorf("%s over %s: %w", s.Name, tr, err)
				}
				f.add(fmt.Sprintf("%s, %s, ping", s.Name, tr), "us p50", percentile(lat, .5))
			}
		}
	}
	for _, s := range variantNames(1) {
		for _, tr := range []string{Stdio, HTTP} {
			for _, g := range guests {
				f.ratio(fmt.Sprintf("%s, %s, %s / bare wazero", s, tr, g.label), fmt.Sprintf("%s, %s, %s", s, tr, g.label), "bare wazero, "+g.label)
			}
		}
	}
	for _, main := range modes() {
		if r := f.find(main + ", stdio, Go guest / bare wazero"); r != nil {
			m := r.Median()
			f.Targets = append(f.Targets, Target{Variant: main, Goal: "Go-guest call overhead <= 1.2x bare wazero (stdio round trip / bare)",
				Got: format(m) + "x", Met: m <= 1.2,
				Why: "a Go guest's instantiation (Go runtime init, 20-37 k data segments) is nearly the whole call, so this ratio is mostly noise: " +
					"the bare and the server rows are measured at different moments on a loaded machine (see their spread); " +
					"`go test ./bench -run '^$' -bench Figure1` alternates the two call by call for a tighter ratio"})
		}
		if r := f.find(main + ", stdio, C guest"); r != nil {
			m := r.Median()
			f.Targets = append(f.Targets, Target{Variant: main, Goal: "C-guest round trip < 0.3 ms p50 (stdio)", Got: format(m) + " us", Met: m < 300,
				Why: "the sandbox part is the bare-wazero row (under a tenth). A CPU profile of the server (--cpu-profile, sync calls over stdio) puts " +
					"half of its CPU under the go-sdk, about 15% in the garbage collector's mark workers and 23% in allocation, driven by the " +
					"go-sdk's JSON decoder taking a 32 KiB buffer per decode (docs/upstream/go-sdk-json-decoder.md). Client and server share the 2 cores"})
		}
	}
	return f, nil
}

// modes are the variants measured in every figure (the ways of running plugins);
// targets and ratios to the peers are given for each of them.
func modes() []string {
	var out []string
	for _, v := range Variants {
		if v.Figures == nil {
			out = append(out, v.Name)
		}
	}
	return out
}

// variantNames are the names of the variants measured in figure n.
func variantNames(n int) []string {
	var out []string
	for _, v := range Variants {
		if v.in(n) {
			out = append(out, v.Name)
		}
	}
	return out
}

type rawJSON string

func (r rawJSON) MarshalJSON() ([]byte, error) { return []byte(r), nil }

// concurrencies of figure 2.
var concurrencies = []int{1, 16, 256}

// Figure2 is task create -> completed throughput for the trivial tool at concurrency
// 1, 16 and 256, here and in the native peers.
func (e *Env) Figure2(ctx context.Context) (*Figure, error) {
	d := pick(e, 3*time.Second, 300*time.Millisecond)
	f := &Figure{N: 2, Title: "Task create -> completed throughput, trivial tool, concurrency 1 / 16 / 256",
		What: fmt.Sprintf("c workers each loop: `tools/call` with `task` (the trivial tool), then `tasks/get` with no wait until `completed`; "+
			"tasks completed per second over %s, and the CPU time per task of the server process and its worker processes (utime + stime from /proc/PID/stat over the run: less sensitive to the machine's load than the rate). Over stdio all workers share the one connection; over HTTP they share 16 sessions "+
			"(one per worker at c=1). mcp-wasmhost serves `textkit_ping` (C guest, a fresh instance per call). "+
			"A variant of N replicas is N processes of the binary on one config.toml, so on one PostgreSQL database: over stdio each has its "+
			"one connection and worker w uses replica w %% N; over HTTP the 16 sessions are spread in turn (6, 5, 5 for 3), and c=1 runs on the first only. "+
			"Each worker creates and polls its tasks on one session, so on one replica (2025-11-25 sessions are sticky); its rate is the "+
			"aggregate over the replicas and its CPU per task the sum over all of them and their worker processes. "+
			"On PostgreSQL the CPU per task of the PostgreSQL server (postmaster and backends, which serve every replica) is given apart.", d),
		Baseline:  "the same trivial tool (`ping` -> \"pong\", taskSupport optional) served natively by mcp-go v1.2.1 and by the TypeScript SDK 1.32.2, driven by the same client.",
		Reproduce: "go run ./bench/cmd/benchall -figures 2"}
	var servers []Server
	onPostgres := map[string]bool{} // the servers whose PostgreSQL's CPU is measured too
	for _, v := range Variants {
		if v.in(2) {
			s, err := e.Ours(v, "", textkit)
			if err != nil {
				return nil, err
			}
			servers = append(servers, s)
			onPostgres[s.Name] = v.Store == "postgres"
		}
	}
	servers = append(servers, e.Peers()...)
	for rep := range e.Reps {
		e.logf("figure 2, repetition %d", rep+1)
		for _, s := range servers {
			for _, tr := range []string{Stdio, HTTP} {
				rs, cs, err := e.openReplicas(ctx, s, tr, 16, Caps{})
				if err != nil {
					return nil, err
				}
				if _, err = runTasks(ctx, cs, s.Tool, 4, pick(e, 300*time.Millisecond, 50*time.Millisecond)); err != nil { // warm-up
					e.closeReplicas(rs, cs)
					return nil, fmt.Errorf("%s over %s: %w\n%s", s.Name, tr, err, rs.Stderr())
				}
				for _, c := range concurrencies {
					use := cs
					if c == 1 {
						use = cs[:1]
					}
					var pg cpuMeter = noCPU{}
					if onPostgres[s.Name] {
						pg = postgresCPU{e}
					}
					// The load, metered on the replicas and, around that, on PostgreSQL.
					var l load
					var cpu, pgCPU float64
					_, pgCPU, err = measure(pg, func() (load, error) {
						l, cpu, err = measure(rs, func() (load, error) { return runTasks(ctx, use, s.Tool, c, d) })
						return l, err
					})
					if err != nil {
						e.closeReplicas(rs, cs)
						return nil, fmt.Errorf("%s over %s at c=%d: %w\n%s", s.Name, tr, c, err, rs.Stderr())
					}
					f.add(fmt.Sprintf("%s, %s, c=%d", s.Name, tr, c), "tasks/s", l.Rate)
					f.add(fmt.Sprintf("%s, %s, c=%d, server CPU per task", s.Name, tr, c), "us CPU", cpu)
					if onPostgres[s.Name] {
						f.add(fmt.Sprintf("%s, %s, c=%d, PostgreSQL CPU per task", s.Name, tr, c), "us CPU", pgCPU)
					}
				}
				e.closeReplicas(rs, cs)
			}
		}
	}
	replicaRatios(f)
	for _, main := range modes() {
		peers := e.Peers()
		var slower []string
		for _, tr := range []string{Stdio, HTTP} {
			for _, c := range concurrencies {
				for _, peer := range peers {
					label := fmt.Sprintf("%s / %s, %s, c=%d", main, peer.Name, tr, c)
					f.ratio(label, fmt.Sprintf("%s, %s, c=%d", main, tr, c), fmt.Sprintf("%s, %s, c=%d", peer.Name, tr, c))
					f.ratio(fmt.Sprintf("server CPU per task, %s / %s, %s, c=%d", main, peer.Name, tr, c),
						fmt.Sprintf("%s, %s, c=%d, server CPU per task", main, tr, c), fmt.Sprintf("%s, %s, c=%d, server CPU per task", peer.Name, tr, c))
					if r := f.find(label); r != nil && r.Median() < 1 {
						slower = append(slower, fmt.Sprintf("%s c=%d vs %s (%sx)", tr, c, strings.Fields(peer.Name)[0], format(r.Median())))
					}
				}
			}
		}
		best, bestLabel := 0.0, ""
		for _, tr := range []string{Stdio, HTTP} {
			for _, c := range concurrencies {
				if r := f.find(fmt.Sprintf("%s, %s, c=%d", main, tr, c)); r != nil && r.Median() > best {
					best, bestLabel = r.Median(), fmt.Sprintf("%s c=%d", tr, c)
				}
			}
		}
		why := "each task is at least two requests (create, then polls) through the go-sdk (JSON decoding with a 32 KiB buffer per message, GC), " +
			"a guest instance per task (kept and restored for textkit) and the task manager; client and server share the 2 cores"
		if r := f.find(fmt.Sprintf("%s, %s, server CPU per task", main, bestLabel2(bestLabel))); r != nil && r.Median() > 0 {
			why = fmt.Sprintf("the server alone spends %s us of CPU per task there, so even with both cores to itself it would stop near %s/s; ",
				format(r.Median()), format(2e6/r.Median())) + why
		}
		f.Targets = append(f.Targets, Target{Variant: main, Goal: ">= 5,000 tasks/s create -> completed, C guest, 2 cores (best configuration)",
			Got: format(best) + "/s (" + bestLabel + ")", Met: best >= 5000, Why: why})
		t := Target{Variant: main, Goal: "no slower than either native peer (every transport and concurrency)", Met: len(slower) == 0}
		if t.Met {
			t.Got = "faster or equal everywhere"
		} else {
			t.Got = "slower at " + strings.Join(slower, "; ")
			t.Why = "the native peers run no sandbox, no schema checks and no JSON Schema validation of results; compare the server-CPU-per-task ratios: " +
				"where ours uses more CPU per task than a peer, the go-sdk's per-message costs and the guest instance are the difference"
		}
		f.Targets = append(f.Targets, t)
		f.Targets = append(f.Targets, atLeastPeer(f, main, "task create -> completed", "stdio, c=16")...)
	}
	return f, nil
}

// bestLabel2 turns "stdio c=256" into "stdio, c=256", the form of the row labels.
func bestLabel2(l string) string { return strings.Replace(l, " ", ", ", 1) }

// Figure3 is tasks/get throughput: 16 sessions, each polling its own completed task.
func (e *Env) Figure3(ctx context.Context) (*Figure, error) {
	d := pick(e, 3*time.Second, 300*time.Millisecond)
	f := &Figure{N: 3, Title: "tasks/get throughput",
		What: fmt.Sprintf("16 workers, each with its own session (over stdio: one shared connection) and its own completed task, "+
			"send `tasks/get` back to back for %s; also the CPU time per get of the server and its worker processes.", d),
		Baseline:  "the native peers answering `tasks/get` for their own tasks, same client.",
		Reproduce: "go run ./bench/cmd/benchall -figures 3"}
	var servers []Server
	for _, v := range Variants {
		if v.in(3) {
			s, err := e.Ours(v, "", textkit)
			if err != nil {
				return nil, err
			}
			servers = append(servers, s)
		}
	}
	servers = append(servers, e.Peers()...)
	for rep := range e.Reps {
		e.logf("figure 3, repetition %d", rep+1)
		for _, s := range servers {
			for _, tr := range []string{HTTP, Stdio} {
				p, cs, err := e.open(ctx, s, tr, 16, Caps{})
				if err != nil {
					return nil, err
				}
				ids := make([]string, 16)
				for i := range ids {
					c := cs[i%len(cs)]
					if ids[i], err = createTask(ctx, c, s.Tool, map[string]any{}); err == nil {
						err = awaitStatus(ctx, c, ids[i], "completed")
					}
					if err != nil {
						e.closeAll(p, cs)
						return nil, fmt.Errorf("%s over %s: %w", s.Name, tr, err)
					}
				}
				l, cpu, err := measure(p, func() (load, error) {
					return loadFor(ctx, 16, d, func(ctx context.Context, w int) error {
						t, err := getTask(ctx, cs[w%len(cs)], ids[w])
						if err == nil && t.Status != "completed" {
							err = fmt.Errorf("tasks/get %s = %s", ids[w], t.Status)
						}
						return err
					})
				})
				e.closeAll(p, cs)
				if err != nil {
					return nil, fmt.Errorf("%s over %s: %w", s.Name, tr, err)
				}
				f.add(fmt.Sprintf("%s, %s", s.Name, tr), "gets/s", l.Rate)
				f.add(fmt.Sprintf("%s, %s, server CPU per get", s.Name, tr), "us CPU", cpu)
			}
		}
	}
	for _, main := range modes() {
		for _, tr := range []string{HTTP, Stdio} {
			for _, peer := range e.Peers() {
				f.ratio(fmt.Sprintf("%s / %s, %s", main, peer.Name, tr), fmt.Sprintf("%s, %s", main, tr), fmt.Sprintf("%s, %s", peer.Name, tr))
				f.ratio(fmt.Sprintf("server CPU per get, %s / %s, %s", main, peer.Name, tr),
					fmt.Sprintf("%s, %s, server CPU per get", main, tr), fmt.Sprintf("%s, %s, server CPU per get", peer.Name, tr))
			}
		}
		if r := f.find(main + ", http"); r != nil {
			m := r.Median()
			why := "every tasks/get goes through the go-sdk's Streamable HTTP handler: session lookup, a 32 KiB JSON decode buffer per message, " +
				"an SSE-framed response; the client shares the 2 cores"
			if c := f.find(main + ", http, server CPU per get"); c != nil && c.Median() > 0 {
				why = fmt.Sprintf("the server spends %s us of CPU per get (20,000/s on 2 cores allows at most 100 us, client included): ", format(c.Median())) + why
			}
			f.Targets = append(f.Targets, Target{Variant: main, Goal: "tasks/get >= 20,000/s over HTTP", Got: format(m) + "/s", Met: m >= 20000, Why: why})
		}
		f.Targets = append(f.Targets, atLeastPeer(f, main, "tasks/get", "stdio")...)
		f.Targets = append(f.Targets, atLeastPeer(f, main, "tasks/get", "http")...)
	}
	return f, nil
}

// Figure4 is the memory one task costs while parked at input_required: the server
// process's RSS before and after parking n tasks whose guests wait for user input.
func (e *Env) Figure4(ctx context.Context) (*Figure, error) {
	f := &Figure{N: 4, Title: "Memory per parked input_required task",
		What: fmt.Sprintf("over stdio: VmRSS of the server process and its worker processes (/proc/PID/status) before and after parking "+
			"%d tasks (C) / %d tasks (Go) whose guests are blocked in their request for user input (the client never answers); "+
			"the delta divided by the number of tasks, after one warm-up task (parked and cancelled); each reading waits for the RSS "+
			"to settle. RSS also holds garbage the collector has not reclaimed yet (the server runs at gc_percent 200), so a sample "+
			"moves with the timing of collections: read the median of %d repetitions, and the native peers beside it.", pick(e, 200, 10), pick(e, 200, 5), pick(e, 5, 1)),
		Baseline: "the native peers parking the same number of tasks of a native `ask` tool that requests user input " +
			"(mcp-go keeps such a task `working`, so there the harness waits for the elicitation requests instead); " +
			"and the server's own RSS at rest, same process (what the per-task figure is added to).",
		Reproduce: "go run ./bench/cmd/benchall -figures 4"}
	type parked struct {
		label, tool string
		args        map[string]any
		warm, n     int
	}
	kinds := []parked{
		{"C guest (asker_ask)", "asker_ask", map[string]any{}, 1, pick(e, 200, 10)},
		{"Go guest (toolbox_write_note)", "toolbox_write_note", map[string]any{"name": "parked.txt", "text": "x"}, 1, pick(e, 200, 5)},
	}
	// Every parked task holds one of its plugin's slots (max_concurrent): room for all.
	parkAsker, parkToolbox := asker, toolbox
	parkAsker.MaxConcurrent, parkToolbox.MaxConcurrent = 256, 256
	for rep := range max(e.Reps, pick(e, 5, 1)) {
		e.logf("figure 4, repetition %d", rep+1)
		for _, v := range Variants {
			if !v.in(4) {
				continue
			}
			for _, k := range kinds {
				s, err := e.Ours(v, "", parkAsker, parkToolbox)
				if err != nil {
					return nil, err
				}
				p, cs, err := e.open(ctx, s, Stdio, 1, Caps{Elicitation: true})
				if err != nil {
					return nil, err
				}
				perTask, rest, err := parkTasks(ctx, p, cs[0], k.tool, k.args, k.warm, k.n, "input_required")
				e.closeAll(p, cs)
				if err != nil {
					return nil, fmt.Errorf("%s, %s: %w\n%s", v.Name, k.label, err, p.Stderr())
				}
				f.add(fmt.Sprintf("%s, %s", v.Name, k.label), "KiB/task", perTask/1024)
				f.add(fmt.Sprintf("%s, server at rest (%s run)", v.Name, strings.Fields(k.label)[0]), "MiB", rest/(1<<20))
			}
		}
		for _, s := range e.Peers() {
			p, cs, err := e.open(ctx, s, Stdio, 1, Caps{Elicitation: true})
			if err != nil {
				return nil, err
			}
			perTask, rest, err := parkTasks(ctx, p, cs[0], s.Ask, map[string]any{}, kinds[0].warm, kinds[0].n, s.AskStatus)
			e.closeAll(p, cs)
			if err != nil {
				return nil, fmt.Errorf("%s: %w\n%s", s.Name, err, p.Stderr())
			}
			f.add(fmt.Sprintf("%s, ask", s.Name), "KiB/task", perTask/1024)
			f.add(fmt.Sprintf("%s, server at rest", s.Name), "MiB", rest/(1<<20))
		}
	}
	for _, main := range modes() {
		for _, peer := range e.Peers() {
			f.ratio(fmt.Sprintf("%s C guest / %s", main, peer.Name), main+", "+kinds[0].label, peer.Name+", ask")
		}
		for _, t := range []struct {
			label, goal string
			limit       float64
			why         string
		}{
			{"C guest (asker_ask)", "parked C task <= 100 KiB", 100, "a C instance is one 64 KiB page of linear memory plus the task's bookkeeping; RSS also holds garbage not yet collected (gc_percent 200), so samples swing with collections"},
			{"Go guest (toolbox_write_note)", "parked Go task <= 6 MiB", 6 * 1024, "a Go guest's instance is its linear memory (3.25 MiB at start, with the Go runtime's heap inside) plus wazero's per-instance state, and RSS also holds garbage not yet collected (gc_percent 200); " +
				"the live heap alone, after a forced collection, is smaller: `go test ./bench -run '^$' -bench ParkedTask` reports it"},
		} {
			if r := f.find(main + ", " + t.label); r != nil {
				m := r.Median()
				f.Targets = append(f.Targets, Target{Variant: main, Goal: t.goal, Got: format(m) + " KiB", Met: m <= t.limit, Why: t.why})
			}
		}
	}
	return f, nil
}

// parkTasks parks warm tasks of tool waiting for user input and cancels them (a
// warm-up), then parks n more and returns their RSS growth per task and the RSS before
// them, in bytes; then it cancels them. A parked task shows status, or, when status is
// "", the harness waits for its elicitation request.
func parkTasks(ctx context.Context, p *Proc, c *Client, tool string, args map[string]any, warm, n int, status string) (perTask, rest float64, err error) {
	park := func(ids []string, before int64) error {
		if status == "" {
			want := before + int64(len(ids))
			ctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			for c.ServerRequests() < want {
				select {
				case <-ctx.Done():
					return fmt.Errorf("%d of %d requests for input arrived", c.ServerRequests()-before, len(ids))
				case <-time.After(time.Millisecond):
				}
			}
			return nil
		}
		for _, id := range ids {
			if err := awaitStatus(ctx, c, id, status); err != nil {
				return err
			}
		}
		return nil
	}
	create := func(k int) ([]string, error) {
		before := c.ServerRequests()
		ids := make([]string, k)
		for i := range ids {
			var err error
			if ids[i], err = createTask(ctx, c, tool, args); err != nil {
				return nil, err
			}
		}
		return ids, park(ids, before)
	}
	cancelAll := func(ids []string) error {
		for _, id := range ids {
			if _, err := c.Call(ctx, "tasks/cancel", map[string]any{"taskId": id}); err != nil {
				return err
			}
		}
		return nil
	}
	first, err := create(warm)
	if err == nil {
		err = cancelAll(first)
	}
	if err != nil {
		return 0, 0, err
	}
	rss0, err := settledRSS(p)
	if err != nil {
		return 0, 0, err
	}
	ids, err := create(n)
	if err != nil {
		return 0, 0, err
	}
	rss1, err := settledRSS(p)
	if err != nil {
		return 0, 0, err
	}
	if err := cancelAll(ids); err != nil {
		return 0, 0, err
	}
	return float64(rss1-rss0) / float64(n), float64(rss0), nil
}

// settledRSS reads the RSS of p every 100 ms until two readings differ by under 1%
// (at most 3 s) and returns the last.
func settledRSS(p *Proc) (int64, error) {
	last, err := p.RSS()
	for i := 0; err == nil && i < 30; i++ {
		time.Sleep(100 * time.Millisecond)
		var now int64
		if now, err = p.RSS(); err == nil {
			if d := now - last; d*100 < last && -d*100 < last {
				return now, nil
			}
			last = now
		}
	}
	return last, err
}

// Figure5 is the time from starting the server to the answer of its first
// tools/list, with 10 Go plugins (distinct modules: copies of toolbox.wasm each with
// its own custom section), on an empty and on a warm compilation cache.
func (e *Env) Figure5(ctx context.Context) (*Figure, error) {
	n := pick(e, 10, 2)
	f := &Figure{N: 5, Title: fmt.Sprintf("Start-up to first tools/list, %d Go plugins, cold and warm compilation cache", n),
		What: fmt.Sprintf("from exec of the binary to the answer of `tools/list` (after `initialize`) over stdio, with %d Go plugins: copies of "+
			"plugins/toolbox/toolbox.wasm under different names, each with its own custom section so that each is a distinct module "+
			"to compile and cache. Cold: an empty cache directory; warm: the next start on the same directory.", n),
		Baseline: "the same binary with one of the Go plugins, and with only the C plugin textkit (warm): the process's own start; " +
			"the native peers' start to `tools/list`. Each start is also given as the CPU time the server process and its worker processes used until the answer " +
			"(utime + stime from /proc/PID/stat, 10 ms ticks), which depends far less on the machine's load than the wall time.",
		Reproduce: "go run ./bench/cmd/benchall -figures 5"}
	dir, err := e.TempDir()
	if err != nil {
		return nil, err
	}
	var copies []Plugin
	for i := range n {
		path := filepath.Join(dir, fmt.Sprintf("toolbox%02d.wasm", i+1))
		if err := copyWithSection(filepath.Join(e.Root, toolbox.Path), path, fmt.Sprintf("copy %d", i+1)); err != nil {
			return nil, err
		}
		copies = append(copies, Plugin{Name: fmt.Sprintf("toolbox%02d", i+1), Path: path, MemoryMiB: 64, Timeout: "30s"})
	}
	// start returns the wall time to the tools/list answer and the CPU time the
	// server used until then, in ms.
	start := func(s Server) (wall, cpu float64, err error) {
		t0 := time.Now()
		p, cs, err := e.open(ctx, s, Stdio, 1, Caps{})
		if err != nil {
			return 0, 0, err
		}
		defer e.closeAll(p, cs)
		var res struct {
			Tools []struct{ Name string } `json:"tools"`
		}
		if err := cs[0].CallInto(ctx, "tools/list", map[string]any{}, &res); err != nil {
			return 0, 0, err
		}
		wall = float64(time.Since(t0).Microseconds()) / 1e3
		used, err := p.CPU()
		if err != nil {
			return 0, 0, err
		}
		if len(res.Tools) == 0 {
			return 0, 0, fmt.Errorf("%s: tools/list is empty\n%s", s.Name, p.Stderr())
		}
		return wall, float64(used.Milliseconds()), nil
	}
	add := func(label string, wall, cpu float64) {
		f.add(label, "ms", wall)
		f.add(label+", CPU time of the server", "ms CPU", cpu)
	}
	for rep := range e.Reps {
		e.logf("figure 5, repetition %d", rep+1)
		for _, v := range Variants {
			if !v.in(5) {
				continue
			}
			cold, err := e.TempDir()
			if err != nil {
				return nil, err
			}
			s, err := e.Ours(v, cold, copies...)
			if err != nil {
				return nil, err
			}
			for _, phase := range []string{"cold", "warm"} {
				wall, cpu, err := start(s)
				if err != nil {
					return nil, err
				}
				add(fmt.Sprintf("%s, %d Go plugins, %s cache", v.Name, n, phase), wall, cpu)
			}
			one, err := e.Ours(v, cold, copies[0]) // warm: the cold start compiled it
			if err != nil {
				return nil, err
			}
			wall, cpu, err := start(one)
			if err != nil {
				return nil, err
			}
			add(v.Name+", 1 Go plugin, warm cache", wall, cpu)
			base, err := e.Ours(v, "", textkit)
			if err != nil {
				return nil, err
			}
			if wall, cpu, err = start(base); err != nil {
				return nil, err
			}
			add(v.Name+", textkit only (C), warm cache", wall, cpu)
		}
		for _, s := range e.Peers() {
			wall, cpu, err := start(s)
			if err != nil {
				return nil, err
			}
			add(s.Name, wall, cpu)
		}
	}
	for _, main := range modes() {
		if r := f.find(fmt.Sprintf("%s, %d Go plugins, warm cache", main, n)); r != nil {
			m := r.Median()
			got := format(m) + " ms"
			if c := f.find(fmt.Sprintf("%s, %d Go plugins, warm cache, CPU time of the server", main, n)); c != nil {
				got += " (" + format(c.Median()) + " ms CPU)"
			}
			f.Targets = append(f.Targets, Target{Variant: main, Goal: fmt.Sprintf("start-up < 0.5 s with a warm cache (%d Go plugins)", n), Got: got, Met: m < 500,
				Why: "plugins load in parallel and run no guest code on a warm start (their describes are cached, plugins/manifests; " +
					"a plugin's other workers start after the load), but each Go plugin still costs about 0.15 s of CPU in the process " +
					"that compiles it (`go test ./bench -bench PluginLoad` with a CPU profile): wazero's CompileModule decodes and validates " +
					"every function of the 3.9 MB module (about half) before it reads its cache, and reads about 15 MB of cached machine " +
					"code; 10 plugins are over 1 s of CPU on 2 cores"})
		}
	}
	return f, nil
}

// copyWithSection copies a .wasm file and appends a custom section named
// "benchall" holding payload, which makes it a distinct module with the same code.
func copyWithSection(from, to, payload string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	name := "benchall"
	body := append(uleb(uint32(len(name))), name...)
	body = append(body, payload...)
	b = append(b, 0)
	b = append(b, uleb(uint32(len(body)))...)
	b = append(b, body...)
	return os.WriteFile(to, b, 0o644)
}

func uleb(v uint32) []byte {
	var out []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			c |= 0x80
		}
		out = append(out, c)
		if v == 0 {
			return out
		}
	}
}

// Figure6 is cancel latency: from sending tasks/cancel to its answer (which comes once
// the task is cancelled and its instance is gone), for a cooperative guest, a guest
// waiting for input and a hostile guest spinning without calling the host.
func (e *Env) Figure6(ctx context.Context) (*Figure, error) {
	n := pick(e, 20, 2)
	f := &Figure{N: 6, Title: "Cancel latency: cooperative and hostile guests",
		What: fmt.Sprintf("over stdio, %d times per repetition: create a task, let it run (100 ms, or until `input_required`), send `tasks/cancel` and time "+
			"its answer; mcp-wasmhost answers only after the task is `cancelled` and its instance is gone (checked with `tasks/get` after). "+
			"Cooperative: `toolbox_slow_count` (Go guest sleeping 10 ms between steps); waiting: `asker_ask` (C guest blocked in its "+
			"request for input); hostile: `loop_spin` (WAT, a loop that never calls the host).", n),
		Baseline:  "a `tasks/get` round trip on the same session (the floor of any request).",
		Reproduce: "go run ./bench/cmd/benchall -figures 6"}
	kinds := []struct {
		label, tool string
		args        map[string]any
		wait        string // "" = sleep 100 ms
	}{
		{"cooperative, sleeping (toolbox_slow_count, Go)", "toolbox_slow_count", map[string]any{"to": 1000, "delay_ms": 10}, ""},
		{"cooperative, waiting for input (asker_ask, C)", "asker_ask", map[string]any{}, "input_required"},
		{"hostile (loop_spin, WAT)", "loop_spin", map[string]any{}, ""},
	}
	for rep := range e.Reps {
		e.logf("figure 6, repetition %d", rep+1)
		for _, v := range Variants {
			if !v.in(6) {
				continue
			}
			s, err := e.Ours(v, "", toolbox, asker, loop)
			if err != nil {
				return nil, err
			}
			p, cs, err := e.open(ctx, s, Stdio, 1, Caps{Elicitation: true})
			if err != nil {
				return nil, err
			}
			c := cs[0]
			fail := func(err error) (*Figure, error) {
				e.closeAll(p, cs)
				return nil, fmt.Errorf("%s: %w\n%s", v.Name, err, p.Stderr())
			}
			for _, k := range kinds {
				var lat []time.Duration
				for range n {
					id, err := createTask(ctx, c, k.tool, k.args)
					if err != nil {
						return fail(err)
					}
					if k.wait != "" {
						err = awaitStatus(ctx, c, id, k.wait)
					} else {
						time.Sleep(100 * time.Millisecond)
						var t taskState
						if t, err = getTask(ctx, c, id); err == nil && t.Status != "working" {
							err = fmt.Errorf("%s: task is %s (%s) before the cancel, want working", k.tool, t.Status, t.StatusMessage)
						}
					}
					if err != nil {
						return fail(err)
					}
					t0 := time.Now()
					raw, err := c.Call(ctx, "tasks/cancel", map[string]any{"taskId": id})
					d := time.Since(t0)
					if err != nil {
						return fail(err)
					}
					if t, err := rawTask(raw); err != nil || t.Status != "cancelled" {
						return fail(fmt.Errorf("tasks/cancel %s answered %.200s, want cancelled", k.tool, raw))
					}
					if t, err := getTask(ctx, c, id); err != nil || t.Status != "cancelled" {
						return fail(fmt.Errorf("tasks/get after cancel = %v, %v", t.Status, err))
					}
					lat = append(lat, d)
				}
				f.add(fmt.Sprintf("%s, %s, p50", v.Name, k.label), "ms", percentile(lat, .5)/1e3)
				f.add(fmt.Sprintf("%s, %s, max", v.Name, k.label), "ms", percentile(lat, 1)/1e3)
			}
			ids, err := createTask(ctx, c, "asker_ask", map[string]any{})
			if err != nil {
				return fail(err)
			}
			lat, err := roundTrips(ctx, pick(e, 200, 10), func(ctx context.Context) error { _, err := getTask(ctx, c, ids); return err })
			if err != nil {
				return fail(err)
			}
			f.add(v.Name+", tasks/get round trip (baseline), p50", "ms", percentile(lat, .5)/1e3)
			e.closeAll(p, cs)
		}
	}
	for _, main := range modes() {
		for _, t := range []struct {
			label, goal string
			limit       float64
			why         string
		}{
			{"cooperative, waiting for input (asker_ask, C)", "cancel < 1 ms, cooperative guest blocked in a host call (p50)", 1,
				"the answer waits for the instance to be gone; the floor is the tasks/get round trip beside it"},
			{"cooperative, sleeping (toolbox_slow_count, Go)", "cancel < 1 ms, cooperative guest sleeping between steps (p50)", 1,
				"a guest's WASI sleep ends with its call's context (sandbox.sleeper); what remains is the Go guest's own runtime " +
					"noticing the closed module, and in a worker the cancel frame's trip"},
			{"hostile (loop_spin, WAT)", "cancel < 100 ms, hostile guest (max)", 100, ""},
		} {
			suffix := ", p50"
			if strings.Contains(t.goal, "max") {
				suffix = ", max"
			}
			if r := f.find(main + ", " + t.label + suffix); r != nil {
				m := r.Median()
				f.Targets = append(f.Targets, Target{Variant: main, Goal: t.goal, Got: format(m) + " ms", Met: m < t.limit, Why: t.why})
			}
		}
	}
	return f, nil
}
