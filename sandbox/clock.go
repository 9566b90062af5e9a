package sandbox

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Clock is a call's run-time budget (the plugin's timeout): it runs while the guest
// runs and stands still while the guest waits for a person to answer a request for
// input ([WaitsForAnswer]), so that an approval that takes an hour does not count as an
// hour of computing. Done is closed once the budget is spent.
//
// The same Clock times a call in this process, in a worker process and in the
// supervisor's watchdog for that worker, so the time limit means the same in both
// modes. Its methods are safe for concurrent use.
type Clock struct {
	budget time.Duration
	done   chan struct{}

	mu     sync.Mutex
	left   time.Duration // budget not spent as of since (while running) or now (while paused)
	since  time.Time     // when the clock last started running
	pauses int           // Pause calls not yet matched by Resume
	waits  int           // Pause calls that stopped a running clock
	timer  *time.Timer
	spent  bool
	closed bool     // Stop was called
	hooks  []func() // run once when the budget is spent (WithClock)
}

// NewClock returns a running clock with budget to spend; budget <= 0 is spent at once.
func NewClock(budget time.Duration) *Clock {
	c := &Clock{budget: budget, left: budget, since: time.Now(), done: make(chan struct{})}
	c.timer = time.AfterFunc(max(budget, 0), c.expire)
	return c
}

// expire runs when the timer fires. The timer may fire late, after a Pause and Resume
// it could not be stopped for: it then sets itself again for what is left.
func (c *Clock) expire() {
	c.mu.Lock()
	if c.spent || c.closed || c.pauses > 0 {
		c.mu.Unlock()
		return
	}
	if left := c.left - time.Since(c.since); left > 0 {
		c.timer.Reset(left)
		c.mu.Unlock()
		return
	}
	hooks := c.spendLocked()
	c.mu.Unlock()
	runHooks(hooks)
}

// spendLocked marks the budget spent and returns the hooks to run once c.mu is
// unlocked.
func (c *Clock) spendLocked() []func() {
	c.spent, c.left = true, 0
	close(c.done)
	hooks := c.hooks
	c.hooks = nil
	return hooks
}

func runHooks(hooks []func()) {
	for _, f := range hooks {
		f()
	}
}

// onSpent runs f once the budget is spent: now if it already is, else on the
// goroutine that spends it.
func (c *Clock) onSpent(f func()) {
	c.mu.Lock()
	if !c.spent {
		c.hooks = append(c.hooks, f)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	f()
}

// Pause stops the clock while the guest waits for an answer. Pauses nest: the clock
// runs again when every Pause is matched by a [Clock.Resume]. A clock whose budget ran
// out before Pause stays spent.
func (c *Clock) Pause() {
	c.mu.Lock()
	c.pauses++
	if c.pauses > 1 || c.spent || c.closed {
		c.mu.Unlock()
		return
	}
	c.waits++
	c.timer.Stop()
	c.left -= time.Since(c.since)
	var hooks []func()
	if c.left <= 0 {
		hooks = c.spendLocked()
	}
	c.mu.Unlock()
	runHooks(hooks)
}

// Resume undoes one [Clock.Pause]; a Resume without a Pause does nothing.
func (c *Clock) Resume() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pauses == 0 {
		return
	}
	c.pauses--
	if c.pauses > 0 || c.spent || c.closed {
		return
	}
	c.since = time.Now()
	c.timer.Reset(c.left)
}

// Done is closed when the budget is spent.
func (c *Clock) Done() <-chan struct{} { return c.done }

// Budget is the run time the clock was given.
func (c *Clock) Budget() time.Duration { return c.budget }

// Used is the run time spent so far: the time since NewClock less the time paused.
func (c *Clock) Used() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	left := c.left
	if !c.spent && c.pauses == 0 {
		left -= time.Since(c.since)
	}
	return c.budget - max(left, 0)
}

// Waits is how many times Pause stopped the running clock: the waits for an answer.
func (c *Clock) Waits() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waits
}

// Stop releases the clock's timer; Done is then never closed if it was not already.
func (c *Clock) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	c.timer.Stop()
}

// WaitsForAnswer reports whether the ABI request method waits for a person (or the
// client's model) to answer: "elicit", "elicit_all" and "sample". The call's [Clock]
// stands still while it does.
func WaitsForAnswer(method string) bool {
	switch method {
	case "elicit", "elicit_all", "sample":
		return true
	}
	return false
}

// errBudgetSpent is the cause of a call context whose clock ran out.
var errBudgetSpent = errors.New("the call's run-time budget is spent")

// WithClock returns a context that ends when parent does or when c's budget is spent.
// Its Err is then [context.DeadlineExceeded], as if it had a deadline (wazero closes
// the instance with its deadline exit code), though its Deadline is parent's: a budget
// that pauses has no fixed end. cancel releases it and must be called. No goroutine
// waits for the clock: it cancels the context itself when the budget is spent (a
// cancellation after cancel changes nothing).
func WithClock(parent context.Context, c *Clock) (ctx context.Context, cancel context.CancelFunc) {
	inner, cancelCause := context.WithCancelCause(parent)
	c.onSpent(func() { cancelCause(errBudgetSpent) })
	return clockContext{inner}, func() { cancelCause(context.Canceled) }
}

// clockContext reports a spent budget as a deadline.
type clockContext struct{ context.Context }

func (c clockContext) Err() error {
	err := c.Context.Err()
	if err != nil && errors.Is(context.Cause(c.Context), errBudgetSpent) {
		return context.DeadlineExceeded
	}
	return err
}
