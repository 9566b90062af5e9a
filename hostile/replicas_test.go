package hostile_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/mcptest"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/pgtest"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
	"github.com/mcp-wasmhost/mcp-wasmhost/plugins/jobs/fakejobs"
)

// replica is one server process of TestReplicasOnPostgres.
type replica struct {
	url  string
	cmd  *exec.Cmd
	log  *testenv.SyncBuffer
	dead atomic.Bool
}

// startReplica runs the binary over HTTP on a loopback port with cfg.
func startReplica(t *testing.T, cfg string) *replica {
	t.Helper()
	r := &replica{log: &testenv.SyncBuffer{}}
	r.cmd = exec.Command(binary, "--config", cfg, "--http", "127.0.0.1:0")
	stderr, err := r.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.cmd.Process.Kill(); r.cmd.Wait() })
	found := make(chan string, 1)
	go func() {
		urlRE := regexp.MustCompile(`url=(http://\S+/mcp)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			fmt.Fprintln(r.log, sc.Text())
			if m := urlRE.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case r.url = <-found:
	case <-time.After(time.Minute):
		t.Fatalf("the replica did not report its URL; its log:\n%s", r.log)
	}
	return r
}

// replicaTask is a task as tasks/get answers it on the Tasks extension's wire.
type replicaTask struct {
	ResultType    string                     `json:"resultType"`
	TaskID        string                     `json:"taskId"`
	Status        string                     `json:"status"`
	StatusMessage string                     `json:"statusMessage"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	Result        json.RawMessage            `json:"result"`
	Error         *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func (x replicaTask) terminal() bool {
	return x.Status == "completed" || x.Status == "failed" || x.Status == "cancelled"
}

// TestReplicasOnPostgres: three replicas of the real binary share one PostgreSQL
// database and one state.key. A load of 1,000 tasks over HTTP: stateless 2026-07-28
// requests go round-robin (each task is created on one replica and polled on
// another), 2025-11-25 sessions stay on one replica. An answer sent to replica 1
// reaches the guest replica 0 runs (the job service sees its submission), and a
// cancel sent to replica 2 does too (the service sees the guest's DELETE). Halfway,
// replica 2 is SIGKILLed: its running tasks are reported failed with the reason by
// the others, every task ends terminal, and every completed result is served again
// unchanged.
func TestReplicasOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("three replicas and 1,000 tasks: not under -short")
	}
	pg := pgtest.Start(t)
	dsn := pg.NewDatabase(t)
	svc := fakejobs.New(time.Minute)
	jobs := httptest.NewServer(svc)
	t.Cleanup(jobs.Close)
	plugin := func(name string) string {
		wasm := testenv.Path("plugins/" + name + "/" + name + ".wasm")
		b, err := os.ReadFile(wasm)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("[[plugins]]\nname = %q\npath = %q\nsha256 = %q\ntimeout = \"30s\"\n", name, wasm, digest(b))
	}
	cfg := fmt.Sprintf(`[server]
cache_dir = %q

[tasks]
store = %q
data_dir = %q
max_per_client = 1000
max_anonymous = 10000

%s
%senv = { JOBS_URL = %q }

[[plugins.net]]
origins = [%q]
allow_addresses = ["127.0.0.1/32"]
`, testenv.CacheDir(), dsn, t.TempDir(), plugin("textkit"), plugin("jobs"), jobs.URL, jobs.URL)
	cfgPath := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	var reps []*replica
	for range 3 {
		reps = append(reps, startReplica(t, cfgPath))
	}
	clients := make([]*mcptest.Stateless, 3)
	for i, r := range reps {
		clients[i] = &mcptest.Stateless{URL: r.url, Caps: mcptest.TasksExtension()}
	}
	call := func(i int, method string, params map[string]any) (replicaTask, error) {
		resp, err := clients[i].Call(method, params, nil)
		if err != nil {
			return replicaTask{}, err
		}
		if resp.Error != nil {
			return replicaTask{}, fmt.Errorf("%s on replica %d: %s", method, i, resp.Error.Message)
		}
		var x replicaTask
		err = json.Unmarshal(resp.Result, &x)
		return x, err
	}
	// poll gets task id from replica i until cond, for at most limit.
	poll := func(i int, id string, limit time.Duration, cond func(replicaTask) bool) replicaTask {
		t.Helper()
		deadline := time.Now().Add(limit)
		for {
			x, err := call(i, "tasks/get", map[string]any{"taskId": id})
			if err == nil && cond(x) {
				return x
			}
			if time.Now().After(deadline) {
				t.Fatalf("task %s on replica %d: %+v, %v after %v", id, i, x, err, limit)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	create := func(i int, tool string, args map[string]any) string {
		t.Helper()
		x, err := call(i, "tools/call", map[string]any{"name": tool, "arguments": args})
		if err != nil || x.ResultType != "task" {
			t.Fatalf("tools/call(%s) on replica %d = %+v, %v; want a task", tool, i, x, err)
		}
		return x.TaskID
	}

	// An answer sent to replica 1 reaches the guest on replica 0: only then does
	// the guest submit the deploy.
	deploy := create(0, "jobs_deploy", map[string]any{"service": "api", "version": "1.2.3"})
	asked := poll(1, deploy, 30*time.Second, func(x replicaTask) bool { return len(x.InputRequests) == 1 })
	var key string
	for k := range asked.InputRequests {
		key = k
	}
	answered := time.Now()
	if _, err := call(1, "tasks/update", map[string]any{"taskId": deploy, "inputResponses": map[string]any{
		key: map[string]any{"action": "accept", "content": map[string]any{"approve": true}}}}); err != nil {
		t.Fatal(err)
	}
	done := poll(2, deploy, 30*time.Second, func(x replicaTask) bool { return x.terminal() })
	if done.Status != "completed" || !strings.Contains(string(done.Result), "Approved: submitted job") || !sawEvent(svc, "POST /jobs") {
		t.Fatalf("deploy answered through replica 1 = %+v; service saw %q; want completed and submitted", done, svc.Events())
	}
	t.Logf("answer sent to replica 1 completed replica 0's task in %v", time.Since(answered).Round(time.Millisecond))

	// A cancel sent to replica 2 stops the guest on replica 0: its on-cancel DELETE
	// reaches the job service.
	id := nextJob(svc)
	long := create(0, "jobs_run_job", map[string]any{"kind": "echo", "input": "long"})
	if !eventually(func() bool { return sawEvent(svc, "GET /jobs/"+id) }) {
		t.Fatalf("the job was never polled: %q", svc.Events())
	}
	cancelled := time.Now()
	if _, err := call(2, "tasks/cancel", map[string]any{"taskId": long}); err != nil {
		t.Fatalf("tasks/cancel on replica 2 = %v", err)
	}
	if x := poll(1, long, 10*time.Second, replicaTask.terminal); x.Status != "cancelled" {
		t.Errorf("cancelled task = %+v, want cancelled", x)
	}
	if !eventuallyWithin(10*time.Second, func() bool { return sawEvent(svc, "DELETE /jobs/"+id) }) {
		t.Fatalf("no DELETE /jobs/%s within 10 s of the cancel on replica 2: %q", id, svc.Events())
	}
	t.Logf("cancel sent to replica 2 stopped replica 0's guest (its DELETE arrived) in %v", time.Since(cancelled).Round(time.Millisecond))

	// Tasks replica 2 runs when it is killed.
	var doomed []string
	for range 4 {
		doomed = append(doomed, create(2, "jobs_run_job", map[string]any{"kind": "echo", "input": "long"}))
	}

	// The load: 1,000 ping tasks. Four in five are stateless, created on replica
	// n%3 and polled on the next live one; one in five go through a 2025-11-25
	// session that stays on replica 0 or 1. Replica 2 is killed halfway.
	sessions := []*mcptest.Client{
		mcptest.Dial(t, &mcp.StreamableClientTransport{Endpoint: reps[0].url}, nil),
		mcptest.Dial(t, &mcp.StreamableClientTransport{Endpoint: reps[1].url}, nil),
	}
	const total = 1000
	var (
		mu       sync.Mutex
		outcomes []oneTask
		next     atomic.Int64
		killedAt time.Time
		reported time.Duration // from the kill until its running tasks were seen failed
		kill     sync.Once
	)
	live := func(i int) int { // replica i, or the next one alive
		for reps[i%3].dead.Load() {
			i++
		}
		return i % 3
	}
	errs := make(chan error, total)
	var wg sync.WaitGroup
	loadStart := time.Now()
	for range 12 {
		wg.Go(func() {
			for {
				n := int(next.Add(1)) - 1
				if n >= total {
					return
				}
				if n == total/2 {
					kill.Do(func() {
						reps[2].dead.Store(true)
						reps[2].cmd.Process.Kill()
						killedAt = time.Now()
						// How soon the survivors report its running tasks failed.
						wg.Go(func() {
							for _, id := range doomed {
								for time.Since(killedAt) < 60*time.Second {
									if x, err := call(0, "tasks/get", map[string]any{"taskId": id}); err == nil && x.terminal() {
										break
									}
									time.Sleep(20 * time.Millisecond)
								}
							}
							reported = time.Since(killedAt)
						})
					})
				}
				o, err := runOne(n, sessions, live, call)
				if err != nil {
					errs <- err
					continue
				}
				mu.Lock()
				outcomes = append(outcomes, o)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	took := time.Since(loadStart)
	for err := range errs {
		t.Error(err)
	}
	completed := 0
	for _, o := range outcomes {
		if o.status == "completed" {
			completed++
		}
	}
	t.Logf("load: %d of %d tasks ended (%d completed) in %v: %.0f tasks/s over 3 replicas, one killed halfway",
		len(outcomes), total, completed, took.Round(time.Millisecond), float64(len(outcomes))/took.Seconds())
	if len(outcomes) != total {
		t.Errorf("%d of %d tasks ended terminal", len(outcomes), total)
	}

	// Replica 2's running tasks are failed, with the reason, by the survivors.
	for _, id := range doomed {
		x := poll(0, id, 30*time.Second, func(x replicaTask) bool { return x.terminal() })
		if x.Status != "failed" || x.Error == nil || !strings.Contains(x.Error.Message+x.StatusMessage, "server running this task stopped") {
			t.Errorf("task %s of the killed replica = %+v, want failed with the reason", id, x)
		}
	}
	t.Logf("the killed replica's running tasks were reported failed %v after the kill", reported.Round(time.Millisecond))

	// Every completed result is served again, unchanged, by a survivor.
	for k, o := range outcomes {
		if o.status != "completed" {
			continue
		}
		var again string
		if o.session >= 0 {
			raw, err := sessions[o.session].Call(context.Background(), "tasks/result", map[string]any{"taskId": o.id})
			if err != nil {
				t.Errorf("tasks/result of %s again: %v", o.id, err)
				continue
			}
			again = string(raw)
		} else {
			x, err := call(k%2, "tasks/get", map[string]any{"taskId": o.id})
			if err != nil {
				t.Errorf("tasks/get of %s again on replica %d: %v", o.id, k%2, err)
				continue
			}
			again = string(x.Result)
		}
		if again != o.result {
			t.Errorf("result of %s served again = %s, want %s", o.id, again, o.result)
		}
	}
}

// oneTask is how one task of the load ended.
type oneTask struct {
	id      string
	session int // the 2025-11-25 session's index; -1: stateless
	status  string
	result  string
}

// runOne runs load task n to its end: through a 2025-11-25 session (tasks/result
// waits for it), or created on one live replica and polled on the next.
func runOne(n int, sessions []*mcptest.Client, live func(int) int,
	call func(int, string, map[string]any) (replicaTask, error)) (oneTask, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if n%5 == 4 {
		s := (n / 5) % 2
		raw, err := sessions[s].Call(ctx, "tools/call", map[string]any{"name": "textkit_ping", "arguments": map[string]any{}, "task": map[string]any{}})
		if err != nil {
			return oneTask{}, fmt.Errorf("task %d: tools/call on session %d: %v", n, s, err)
		}
		var created struct {
			Task struct {
				TaskID string `json:"taskId"`
			} `json:"task"`
		}
		json.Unmarshal(raw, &created)
		res, err := sessions[s].Call(ctx, "tasks/result", map[string]any{"taskId": created.Task.TaskID})
		if err != nil {
			return oneTask{}, fmt.Errorf("task %d: tasks/result on session %d: %v", n, s, err)
		}
		return oneTask{created.Task.TaskID, s, "completed", string(res)}, nil
	}
	var id string
	for try := 0; id == ""; try++ {
		r := live(n + try)
		x, err := call(r, "tools/call", map[string]any{"name": "textkit_ping", "arguments": map[string]any{}})
		switch {
		case err == nil && x.ResultType == "task":
			id = x.TaskID
		case err == nil:
			return oneTask{}, fmt.Errorf("task %d: tools/call on replica %d = %+v, want a task", n, r, x)
		case try > 5 || !isDown(err):
			return oneTask{}, fmt.Errorf("task %d: tools/call on replica %d: %v", n, r, err)
		}
	}
	for try := 1; ctx.Err() == nil; try++ {
		r := live(n + try)
		x, err := call(r, "tasks/get", map[string]any{"taskId": id})
		if err == nil && x.terminal() {
			return oneTask{id, -1, x.Status, string(x.Result)}, nil
		}
		if err != nil && !isDown(err) {
			return oneTask{}, fmt.Errorf("task %d (%s): tasks/get on replica %d: %v", n, id, r, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return oneTask{}, fmt.Errorf("task %d (%s) not terminal after 60 s", n, id)
}

// isDown reports an error of a request to a replica that was killed.
func isDown(err error) bool {
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		return false
	}
	return slices.ContainsFunc([]string{"connection refused", "connection reset", "EOF"}, func(s string) bool {
		return strings.Contains(err.Error(), s)
	})
}
