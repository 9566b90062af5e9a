package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// open starts s over transport and opens sessions on it (over stdio always one, which
// all workers share, as clients of a stdio server do).
func (e *Env) open(ctx context.Context, s Server, transport string, sessions int, caps Caps) (*Proc, []*Client, error) {
	p, err := s.Start(ctx, transport)
	if err != nil {
		return nil, nil, err
	}
	if transport == Stdio {
		sessions = 1
	}
	var cs []*Client
	for range sessions {
		c, err := p.Dial(ctx, e.hc, caps)
		if err != nil {
			p.Stop()
			return nil, nil, err
		}
		cs = append(cs, c)
	}
	return p, cs, nil
}

// closeAll ends the sessions and the server. The HTTP client's idle connections are
// closed first: Go's http.Server.Shutdown waits up to 5 s for a connection that was
// dialed but never carried a request, which the client's pool can hold.
// A server that does not stop is recorded as an error of the run (see Env.Err).
func (e *Env) closeAll(p *Proc, cs []*Client) {
	for _, c := range cs {
		c.Close()
	}
	if p.hc != nil {
		p.hc.CloseIdleConnections()
	}
	if err := p.Stop(); err != nil {
		e.errs = append(e.errs, err)
	}
}

// Err reports the servers that did not stop when asked.
func (e *Env) Err() error { return errors.Join(e.errs...) }

// callTool runs a tool synchronously and fails on an isError result.
func callTool(ctx context.Context, c *Client, tool string, args any) error {
	var res struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := c.CallInto(ctx, "tools/call", map[string]any{"name": tool, "arguments": args}, &res); err != nil {
		return err
	}
	if res.IsError || len(res.Content) == 0 {
		return fmt.Errorf("tools/call %s: an error result: %+v", tool, res.Content)
	}
	return nil
}

// taskState is the part of a task the harness reads.
type taskState struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage"`
}

// createTask calls tool as a task (ttl 60 s) and returns the task's id.
func createTask(ctx context.Context, c *Client, tool string, args any) (string, error) {
	return createTaskMeta(ctx, c, tool, args, nil)
}

// createTaskMeta is createTask with meta as the request's _meta (a progressToken,
// say); nil sends none.
func createTaskMeta(ctx context.Context, c *Client, tool string, args any, meta map[string]any) (string, error) {
	var res struct {
		Task taskState `json:"task"`
	}
	params := map[string]any{"name": tool, "arguments": args, "task": map[string]any{"ttl": 60000}}
	if meta != nil {
		params["_meta"] = meta
	}
	if err := c.CallInto(ctx, "tools/call", params, &res); err != nil {
		return "", err
	}
	if res.Task.TaskID == "" {
		return "", fmt.Errorf("tools/call %s as a task: no task in the answer", tool)
	}
	return res.Task.TaskID, nil
}

func getTask(ctx context.Context, c *Client, id string) (taskState, error) {
	var t taskState
	err := c.CallInto(ctx, "tasks/get", map[string]any{"taskId": id}, &t)
	return t, err
}

var terminal = map[string]bool{"completed": true, "failed": true, "cancelled": true}

// awaitStatus polls tasks/get with no wait until the task is in want; another
// terminal status is an error.
func awaitStatus(ctx context.Context, c *Client, id, want string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		t, err := getTask(ctx, c, id)
		if err != nil {
			return err
		}
		if t.Status == want {
			return nil
		}
		if terminal[t.Status] {
			return fmt.Errorf("task %s ended %s (%s), want %s", id, t.Status, t.StatusMessage, want)
		}
	}
}

// runTasks runs workers that each create a task of tool and poll it to completed,
// for d.
func runTasks(ctx context.Context, cs []*Client, tool string, workers int, d time.Duration) (load, error) {
	return loadFor(ctx, workers, d, func(ctx context.Context, w int) error {
		c := cs[w%len(cs)]
		id, err := createTask(ctx, c, tool, map[string]any{})
		if err != nil {
			return err
		}
		return awaitStatus(ctx, c, id, "completed")
	})
}

// load is the outcome of a run of loadFor.
type load struct {
	Rate float64       // operations completed per second
	Ops  int64         // operations completed
	Took time.Duration // wall time, including the operations in flight at the end
}

// loadFor runs op in workers goroutines for d. The first error stops the run.
func loadFor(ctx context.Context, workers int, d time.Duration, op func(ctx context.Context, worker int) error) (load, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		done     atomic.Int64
		stop     atomic.Bool
		firstErr error
		once     sync.Once
		wg       sync.WaitGroup
	)
	start := time.Now()
	time.AfterFunc(d, func() { stop.Store(true) })
	for w := range workers {
		wg.Go(func() {
			for !stop.Load() {
				if err := op(ctx, w); err != nil {
					once.Do(func() { firstErr = err; stop.Store(true); cancel() })
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	if firstErr != nil && !errors.Is(firstErr, context.Canceled) {
		return load{}, firstErr
	}
	took := time.Since(start)
	return load{Rate: float64(done.Load()) / took.Seconds(), Ops: done.Load(), Took: took}, nil
}

// cpuMeter is a server whose CPU time is read: a Proc or its Replicas.
type cpuMeter interface {
	CPU() (time.Duration, error)
}

// measure runs a load against p and returns it with the server's CPU time per
// operation in microseconds (0 when no operation completed).
func measure(p cpuMeter, run func() (load, error)) (load, float64, error) {
	cpu0, err := p.CPU()
	if err != nil {
		return load{}, 0, err
	}
	l, err := run()
	if err != nil {
		return l, 0, err
	}
	cpu1, err := p.CPU()
	if err != nil || l.Ops == 0 {
		return l, 0, err
	}
	return l, float64((cpu1 - cpu0).Microseconds()) / float64(l.Ops), nil
}

// roundTrips times n sequential calls of op and returns their durations.
func roundTrips(ctx context.Context, n int, op func(ctx context.Context) error) ([]time.Duration, error) {
	lat := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if err := op(ctx); err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(start))
	}
	return lat, nil
}

// rawTask decodes a task returned by tasks/cancel.
func rawTask(raw json.RawMessage) (taskState, error) {
	var t taskState
	err := json.Unmarshal(raw, &t)
	return t, err
}
