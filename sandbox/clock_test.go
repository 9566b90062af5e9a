package sandbox_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// TestClock runs steps against a 5s clock in a synctest bubble and checks when (in
// bubble time) its Done closes; 0 means not within an hour.
func TestClock(t *testing.T) {
	type step struct {
		after  time.Duration // sleep first
		pause  bool          // then Pause (true) or Resume (false)
		resume bool
	}
	tests := []struct {
		name  string
		steps []step
		want  time.Duration // when Done closes
	}{
		{"runs out", nil, 5 * time.Second},
		{"a pause is not run time", []step{{after: 2 * time.Second, pause: true}, {after: 2 * time.Minute, resume: true}}, 2*time.Minute + 5*time.Second},
		{"pauses nest", []step{
			{after: time.Second, pause: true}, {after: time.Second, pause: true},
			{after: time.Minute, resume: true}, {after: time.Minute, resume: true},
		}, 2*time.Minute + 6*time.Second},
		{"a resume without a pause does nothing", []step{{after: time.Second, resume: true}}, 5 * time.Second},
		{"two waits", []step{
			{after: time.Second, pause: true}, {after: time.Hour / 4, resume: true},
			{after: 2 * time.Second, pause: true}, {after: time.Hour / 4, resume: true},
		}, time.Hour/2 + 5*time.Second},
		{"a pause after the budget ran out keeps it spent", []step{{after: 6 * time.Second, pause: true}}, 5 * time.Second},
		{"a clock paused for good never runs out", []step{{after: 4 * time.Second, pause: true}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				c := sandbox.NewClock(5 * time.Second)
				defer c.Stop()
				var got time.Duration
				done := make(chan struct{})
				go func() {
					defer close(done)
					select {
					case <-c.Done():
						got = time.Since(start)
					case <-time.After(time.Hour + time.Minute):
					}
				}()
				for _, s := range tt.steps {
					time.Sleep(s.after)
					switch {
					case s.pause:
						c.Pause()
					case s.resume:
						c.Resume()
					}
				}
				<-done
				if got != tt.want {
					t.Errorf("Done at %v, want %v", got, tt.want)
				}
			})
		})
	}
}

func TestClockUsedAndWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := sandbox.NewClock(time.Minute)
		defer c.Stop()
		time.Sleep(3 * time.Second)
		c.Pause()
		time.Sleep(time.Hour)
		if got := c.Used(); got != 3*time.Second {
			t.Errorf("Used() while paused = %v, want 3s", got)
		}
		c.Resume()
		time.Sleep(2 * time.Second)
		if got, want := c.Used(), 5*time.Second; got != want {
			t.Errorf("Used() = %v, want %v", got, want)
		}
		if got := c.Waits(); got != 1 {
			t.Errorf("Waits() = %d, want 1", got)
		}
		if got := c.Budget(); got != time.Minute {
			t.Errorf("Budget() = %v, want 1m", got)
		}
	})
}

// TestWithClock: the context of a call ends when its budget is spent, with the error of
// a deadline, and with its parent's error when the parent ends first.
func TestWithClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := sandbox.NewClock(time.Second)
		defer c.Stop()
		ctx, cancel := sandbox.WithClock(t.Context(), c)
		defer cancel()
		c.Pause()
		time.Sleep(time.Hour)
		synctest.Wait()
		if err := ctx.Err(); err != nil {
			t.Fatalf("Err() while paused = %v, want nil", err)
		}
		c.Resume()
		<-ctx.Done()
		if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Err() = %v, want context.DeadlineExceeded", err)
		}
		if _, ok := ctx.Deadline(); ok {
			t.Error("Deadline() reports a deadline; a budget has no fixed end")
		}
	})
	synctest.Test(t, func(t *testing.T) {
		c := sandbox.NewClock(time.Second)
		defer c.Stop()
		parent, stop := context.WithCancel(t.Context())
		ctx, cancel := sandbox.WithClock(parent, c)
		defer cancel()
		stop()
		<-ctx.Done()
		if err := ctx.Err(); !errors.Is(err, context.Canceled) {
			t.Errorf("Err() after the parent's cancellation = %v, want context.Canceled", err)
		}
	})
}

// TestInputWaitIsNotRunTime: a guest that waits for an answer longer than its timeout
// gets the answer, and its time limit still stops it when it runs on: in process, with
// a real instance (asker returns the answer; askloop loops after it).
func TestInputWaitIsNotRunTime(t *testing.T) {
	const limit, wait = 200 * time.Millisecond, 600 * time.Millisecond
	answer := &recorder{reply: func(string, []byte) ([]byte, error) {
		time.Sleep(wait)
		return []byte(`{"action":"accept","content":{"confirm":true}}`), nil
	}}
	t.Run("answered", func(t *testing.T) {
		m := load(t, "testdata/wasm/asker.wasm", sandbox.Limits{Timeout: limit}, sandbox.Grants{})
		out, err := m.Call(t.Context(), call("ask", nil), answer)
		if err != nil || !strings.Contains(string(out), `"text":"accept"`) {
			t.Fatalf("Call(ask) after a %v wait with a %v limit = %s, %v; want the answer", wait, limit, out, err)
		}
	})
	t.Run("runs on after the answer", func(t *testing.T) {
		m := load(t, "testdata/wasm/askloop.wasm", sandbox.Limits{Timeout: limit}, sandbox.Grants{})
		start := time.Now()
		_, err := m.Call(t.Context(), call("ask", nil), answer)
		var ge *sandbox.GuestError
		if !errors.As(err, &ge) || ge.Kind != sandbox.KindTimeout || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Call(ask) = %v; want the time-limit error", err)
		}
		if want := "exceeded its time limit of 200ms"; !strings.Contains(ge.Message, want) {
			t.Errorf("error %q, want it to contain %q", ge.Message, want)
		}
		if took := time.Since(start); took < wait+limit {
			t.Errorf("stopped after %v, before the wait (%v) and the limit (%v) had passed", took, wait, limit)
		}
	})
}
