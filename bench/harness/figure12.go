package harness

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks/sqlstore"
)

// crossStores are the shared stores of figure 12: two server processes on one
// config.toml, so on one SQLite file or one PostgreSQL database.
var crossStores = []Variant{
	{Name: "SQLite store (default), 2 local instances on one file", Store: "sqlite", Replicas: 2},
	{Name: "PostgreSQL store, 2 replicas", Store: "postgres", Replicas: 2},
}

// Figure12 is the cross-instance cancel delay: a task runs its guest on instance B,
// its tasks/cancel is sent to instance A, and the delay is the time until B reports
// the task cancelled, which it does once it has received the cancel and cancelled its
// guest's call; beside it, the same cancel sent to B itself.
func (e *Env) Figure12(ctx context.Context) (*Figure, error) {
	n := pick(e, 100, 4)
	f := &Figure{N: 12, Title: "Cross-instance cancel delay: SQLite (two local instances on one file) and PostgreSQL (two replicas)",
		What: fmt.Sprintf("two processes of the binary on one config.toml (worker processes), A and B, each with its stdio session; %d times per repetition: "+
			"a task of `toolbox_slow_count` (Go guest sleeping 10 ms between steps) is created on B, runs 50-100 ms (a random moment of "+
			"SQLite's poll period), and `tasks/cancel` is sent to A. The delay is from sending it to the moment B's session reads B's "+
			"`notifications/tasks/status` `cancelled`, which B sends when it has received the cancel and cancelled its guest's call "+
			"(the guest's own stop then takes what figure 6 measures); p50 and p99 of each repetition. B's `tasks/get` then reads cancelled. "+
			"Also the time A took to answer the `tasks/cancel` (it stores the cancel and the signal for B, and does not wait for B).", n),
		Baseline: fmt.Sprintf("the same cancel sent to B itself (%d times): the runner's own cancel path, no signal between instances. "+
			"Documented (docs/STORE.md): on SQLite the runner polls for signals every %s (tasks.SignalPoll); on PostgreSQL the signal's "+
			"transaction sends a NOTIFY the runner LISTENs for, with a poll every %s (tasks.WakePoll) in case one is lost. Beside these, "+
			"the lease a server holds is %s, renewed every %s (sqlstore.Lease, RenewEvery): a killed server's tasks are reported "+
			"failed within %s, a hung one's within %s of its last renewal (PostgreSQL).",
			max(n/4, 2), tasks.SignalPoll, tasks.WakePoll, sqlstore.Lease, sqlstore.RenewEvery, sqlstore.RenewEvery, sqlstore.Lease+sqlstore.RenewEvery),
		Reproduce: "go run ./bench/cmd/benchall -figures 12"}
	args := map[string]any{"to": 1000, "delay_ms": 10}
	for rep := range e.Reps {
		e.logf("figure 12, repetition %d", rep+1)
		for _, v := range crossStores {
			s, err := e.Ours(v, "", toolbox)
			if err != nil {
				return nil, err
			}
			rs, cs, err := e.openReplicas(ctx, s, Stdio, 0, Caps{})
			if err != nil {
				return nil, err
			}
			a, b := cs[0], cs[1]
			fail := func(err error) (*Figure, error) {
				e.closeReplicas(rs, cs)
				return nil, fmt.Errorf("%s: %w\n%s", v.Name, err, rs.Stderr())
			}
			// The warm-up (a Go guest's first instance in each worker) is not measured.
			if _, _, err := cancelAcross(ctx, a, b, args); err != nil {
				return fail(err)
			}
			var delay, answer, local []time.Duration
			for range n {
				d, ans, err := cancelAcross(ctx, a, b, args)
				if err != nil {
					return fail(err)
				}
				delay, answer = append(delay, d), append(answer, ans)
			}
			for range max(n/4, 2) {
				d, _, err := cancelAcross(ctx, b, b, args)
				if err != nil {
					return fail(fmt.Errorf("cancel on the runner: %w", err))
				}
				local = append(local, d)
			}
			e.closeReplicas(rs, cs)
			f.add(v.Name+", cancel sent to A until B reports cancelled, p50", "ms", percentile(delay, .5)/1e3)
			f.add(v.Name+", cancel sent to A until B reports cancelled, p99", "ms", percentile(delay, .99)/1e3)
			f.add(v.Name+", tasks/cancel answered by A, p50", "ms", percentile(answer, .5)/1e3)
			f.add(v.Name+", cancel sent to B itself until B reports cancelled (baseline), p50", "ms", percentile(local, .5)/1e3)
		}
	}
	f.Notes = append(f.Notes, fmt.Sprintf("SQLite's delay follows its %s poll (about half of it on average, plus the commits); PostgreSQL's "+
		"is the cancel's and the signal's commits (fsync on), the NOTIFY and the runner's receipt, so it hardly depends on a poll period. "+
		"Client, both servers, their workers and PostgreSQL share the 2 cores. The same delay in process, from the start of "+
		"tasks.Manager.Cancel to the end of the guest's context: `go test ./tasks/sqlstore -run 'TestContract/.*/CancelDelay' -v`.", tasks.SignalPoll))
	return f, nil
}

// cancelAcross creates a task of toolbox_slow_count on runner, lets it run 50-100
// ms, sends its tasks/cancel to via, and returns the time until runner's session
// read the task's cancelled status, and the time via took to answer the cancel.
//
// A task can die before its cancel when its worker is killed under it: the previous
// task's guest, cancelled, may still be stopping in the same worker, and one that
// misses the kill grace (worker.DefaultKillGrace, 50 ms, on a loaded machine) is killed with
// its worker. Such a task is not a sample: it is started again, up to 3 times.
func cancelAcross(ctx context.Context, via, runner *Client, args map[string]any) (delay, answer time.Duration, err error) {
	var id string
	for attempt := 1; ; attempt++ {
		if id, err = createTask(ctx, runner, "toolbox_slow_count", args); err != nil {
			return 0, 0, err
		}
		time.Sleep(50*time.Millisecond + rand.N(50*time.Millisecond))
		t, err := getTask(ctx, runner, id)
		if err != nil {
			return 0, 0, err
		}
		if t.Status == "working" {
			break
		}
		if attempt == 3 || !strings.Contains(t.StatusMessage, "worker process running this call stopped") {
			return 0, 0, fmt.Errorf("task %s is %s (%s) before the cancel, want working", id, t.Status, t.StatusMessage)
		}
	}
	seen, stop := runner.ExpectStatus(id, "cancelled")
	defer stop()
	t0 := time.Now()
	raw, err := via.Call(ctx, "tasks/cancel", map[string]any{"taskId": id})
	answer = time.Since(t0)
	if err != nil {
		return 0, 0, err
	}
	if t, err := rawTask(raw); err != nil || t.Status != "cancelled" {
		return 0, 0, fmt.Errorf("tasks/cancel %s answered %.200s, want cancelled", id, raw)
	}
	select {
	case at := <-seen:
		delay = at.Sub(t0)
	case <-time.After(30 * time.Second):
		return 0, 0, fmt.Errorf("task %s: the runner reported no cancelled status within 30 s of the cancel", id)
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	}
	if t, err := getTask(ctx, runner, id); err != nil || t.Status != "cancelled" {
		return 0, 0, fmt.Errorf("tasks/get on the runner after the cancel = %v, %v; want cancelled", t.Status, err)
	}
	return delay, answer, nil
}
