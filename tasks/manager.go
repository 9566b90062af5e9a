package tasks

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"strconv"
	"sync"
	"time"
)

// ShutdownMessage is the status message of a task that was running when the Manager
// closed.
const ShutdownMessage = "the server shut down while this task was running; its work was lost (run it again)"

// Options configures a Manager. The zero value is valid.
type Options struct {
	Store        Store         // nil: a new MemoryStore
	DefaultTTL   time.Duration // when the requester names none; 0 means 1h
	MaxTTL       time.Duration // requested TTLs are clamped to it; 0 means 24h
	PollInterval time.Duration // suggested to requesters; 0 means 1s
	MaxPerOwner  int           // unfinished tasks one owner may have; 0 means 64
	PageSize     int           // tasks per tasks/list page; 0 means 50
	SweepEvery   time.Duration // how often expired tasks are purged; 0 means 30s
	// Bounds on what is kept. A new task is refused while the store is full, and a
	// result over MaxResultBytes fails its task; nothing stored is dropped to make room.
	MaxResultBytes int          // 0 means 16 MiB
	MaxStoredTasks int          // 0 means 100,000
	MaxStoreBytes  int64        // 0 means 1 GiB
	Logger         *slog.Logger // nil discards
	// OnChange, if set, is called after every status change of a task (not at its
	// creation), outside any lock. It must not block for long.
	OnChange func(Task)
}

// Func is the work a task runs. Its context is owned by the task: it ends when the task
// is cancelled or the Manager closes, not when the request that created it ends. It
// returns the request's result, or the JSON-RPC error the request would have answered,
// and failed reports a result that is a failure (a tool result with isError), with a
// status message.
type Func func(ctx context.Context, h *Handle) (result json.RawMessage, failed string, rpcErr *Error)

// Manager runs tasks and answers for them: the one task model behind every wire form.
type Manager struct {
	opts  Options
	store Store

	mu     sync.Mutex
	live   map[string]*live // unfinished tasks of this process
	unfin  map[string]int   // unfinished tasks per owner
	closed bool
	wg     sync.WaitGroup
	stop   chan struct{}
	swept  chan struct{}  // closed when the sweeper has ended
	taskMu [64]sync.Mutex // read-modify-write of one task in the store, striped by ID
}

// live is the in-process state of an unfinished task.
type live struct {
	cancel  context.CancelFunc
	done    chan struct{} // closed when the work has returned
	changed chan struct{} // closed and replaced at every change
	inputs  []*Input      // pending input requests, in the order they were asked
	nextKey int
}

// NewManager creates a Manager and starts its expiry sweeper. Close it.
func NewManager(opts Options) *Manager {
	if opts.Store == nil {
		opts.Store = NewMemoryStore()
	}
	if opts.DefaultTTL <= 0 {
		opts.DefaultTTL = time.Hour
	}
	if opts.MaxTTL <= 0 {
		opts.MaxTTL = 24 * time.Hour
	}
	opts.DefaultTTL = min(opts.DefaultTTL, opts.MaxTTL)
	if opts.PollInterval <= 0 {
		opts.PollInterval = time.Second
	}
	if opts.MaxPerOwner <= 0 {
		opts.MaxPerOwner = 64
	}
	if opts.PageSize <= 0 {
		opts.PageSize = 50
	}
	if opts.SweepEvery <= 0 {
		opts.SweepEvery = 30 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxResultBytes <= 0 {
		opts.MaxResultBytes = 16 << 20
	}
	if opts.MaxStoredTasks <= 0 {
		opts.MaxStoredTasks = 100_000
	}
	if opts.MaxStoreBytes <= 0 {
		opts.MaxStoreBytes = 1 << 30
	}
	m := &Manager{opts: opts, store: opts.Store, live: map[string]*live{}, unfin: map[string]int{},
		stop: make(chan struct{}), swept: make(chan struct{})}
	go m.sweep()
	return m
}

// newID returns 192 random bits, URL-safe.
func newID() string {
	b := make([]byte, 24)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Start creates a task for owner and runs f in its own goroutine. ttl <= 0 asks for the
// default; a longer one than MaxTTL is clamped, and the task reports what it got.
func (m *Manager) Start(ctx context.Context, owner string, ttl time.Duration, f Func) (Task, error) {
	if ttl <= 0 {
		ttl = m.opts.DefaultTTL
	}
	ttl = min(ttl, m.opts.MaxTTL)
	now := time.Now().UTC()
	t := Task{ID: newID(), Owner: owner, Status: Working, CreatedAt: now, LastUpdatedAt: now,
		TTL: ttl, PollInterval: m.opts.PollInterval}

	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return Task{}, ErrClosed
	}
	if m.unfin[owner] >= m.opts.MaxPerOwner {
		m.mu.Unlock()
		return Task{}, fmt.Errorf("%w: %d are still running (the limit per client is %d); wait for one to finish or cancel one",
			ErrTooMany, m.opts.MaxPerOwner, m.opts.MaxPerOwner)
	}
	if err := m.checkRoom(ctx); err != nil {
		m.mu.Unlock()
		return Task{}, err
	}
	// The task's context outlives the request: only Cancel and Close end it.
	taskCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l := &live{cancel: cancel, changed: make(chan struct{}), done: make(chan struct{})}
	m.live[t.ID] = l
	m.unfin[owner]++
	m.wg.Add(1)
	m.mu.Unlock()

	if err := m.store.Put(ctx, t); err != nil {
		m.forget(t)
		cancel()
		m.wg.Done()
		return Task{}, fmt.Errorf("store task: %w", err)
	}
	go func() {
		defer m.wg.Done()
		defer close(l.done)
		defer cancel()
		result, failed, rpcErr := f(taskCtx, &Handle{m: m, id: t.ID})
		m.finish(t.ID, result, failed, rpcErr)
	}()
	return t, nil
}

// checkRoom refuses a new task while the store is at one of its bounds.
func (m *Manager) checkRoom(ctx context.Context) error {
	st, err := m.store.Stats(ctx)
	switch {
	case err != nil:
		return fmt.Errorf("task store: %w", err)
	case st.Tasks >= m.opts.MaxStoredTasks:
		return fmt.Errorf("%w: it holds %d tasks (max_stored_tasks); finished tasks are removed when their ttl ends", ErrStoreFull, st.Tasks)
	case st.Bytes >= m.opts.MaxStoreBytes:
		return fmt.Errorf("%w: its results take %d bytes (max_store_mib); finished tasks are removed when their ttl ends", ErrStoreFull, st.Bytes)
	}
	return nil
}

// finish records a task's outcome, unless it was cancelled meanwhile.
func (m *Manager) finish(id string, result json.RawMessage, failed string, rpcErr *Error) {
	if len(result) > m.opts.MaxResultBytes {
		rpcErr = &Error{Code: -32603, Message: fmt.Sprintf("the result of %d bytes is larger than the %d bytes a task may keep (max_result_bytes)", len(result), m.opts.MaxResultBytes)}
		result, failed = nil, ""
	}
	m.mu.Lock()
	closing := m.closed
	m.mu.Unlock()
	t, err := m.update(id, func(t *Task) error {
		if t.Status.Terminal() {
			return ErrTerminal // cancelled: it stays cancelled whatever the work returned
		}
		switch {
		case closing:
			// Close stopped the work; what it returned is an artefact of that.
			t.Status, t.StatusMessage = Failed, ShutdownMessage
		case rpcErr != nil:
			t.Status, t.StatusMessage, t.Error = Failed, rpcErr.Message, rpcErr
		case failed != "":
			t.Status, t.StatusMessage, t.Result = Failed, failed, result
		default:
			t.Status, t.StatusMessage, t.Result = Completed, "", result
		}
		return nil
	})
	if err != nil && !errors.Is(err, ErrTerminal) {
		m.opts.Logger.Error("record task outcome", "task", id, "err", err)
	}
	if err == nil {
		m.changed(t)
	}
	m.mu.Lock()
	if l := m.live[id]; l != nil {
		m.forgetLocked(id, t.Owner)
		close(l.changed)
	}
	m.mu.Unlock()
}

func (m *Manager) forget(t Task) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.forgetLocked(t.ID, t.Owner)
}

func (m *Manager) forgetLocked(id, owner string) {
	if _, ok := m.live[id]; !ok {
		return
	}
	delete(m.live, id)
	if m.unfin[owner]--; m.unfin[owner] <= 0 {
		delete(m.unfin, owner)
	}
}

// update applies f to the stored task and stores the result, stamping LastUpdatedAt
// and FinishedAt. A status change must be legal.
func (m *Manager) update(id string, f func(*Task) error) (Task, error) {
	// Updates of different tasks run concurrently, so that a durable store can commit
	// them together; updates of one task are serialized.
	mu := &m.taskMu[stripe(id)]
	mu.Lock()
	defer mu.Unlock()
	ctx := context.Background()
	t, err := m.store.Get(ctx, id)
	if err != nil {
		return Task{}, err
	}
	before := t.Status
	if err := f(&t); err != nil {
		return t, err
	}
	if t.Status != before && !before.CanMove(t.Status) {
		return t, fmt.Errorf("task %s: illegal transition %s -> %s", id, before, t.Status)
	}
	t.LastUpdatedAt = time.Now().UTC()
	if t.Status.Terminal() && !before.Terminal() {
		t.FinishedAt = t.LastUpdatedAt
	}
	return t, m.store.Put(ctx, t)
}

var stripeSeed = maphash.MakeSeed()

// stripe picks the lock of a task ID.
func stripe(id string) uint64 {
	return maphash.String(stripeSeed, id) % 64
}

// changed tells OnChange, then watchers, about a new state of t: a status
// notification goes out before a waiting tasks/result can answer.
func (m *Manager) changed(t Task) {
	if m.opts.OnChange != nil {
		m.opts.OnChange(t)
	}
	m.mu.Lock()
	if l := m.live[t.ID]; l != nil {
		close(l.changed)
		l.changed = make(chan struct{})
	}
	m.mu.Unlock()
}

// Get returns owner's task id. Another owner's task is ErrNotFound, as if it did not exist.
func (m *Manager) Get(ctx context.Context, owner, id string) (Task, error) {
	t, err := m.store.Get(ctx, id)
	if err != nil || t.Owner != owner {
		return Task{}, ErrNotFound
	}
	return t, nil
}

// Watch returns owner's task id, its pending input requests, and a channel closed at
// its next change. For a terminal task the channel is nil.
func (m *Manager) Watch(ctx context.Context, owner, id string) (Task, []*Input, <-chan struct{}, error) {
	m.mu.Lock()
	l := m.live[id]
	var ch chan struct{}
	var inputs []*Input
	if l != nil {
		ch = l.changed
		inputs = append(inputs, l.inputs...)
	}
	m.mu.Unlock()
	t, err := m.Get(ctx, owner, id)
	if err != nil {
		return Task{}, nil, nil, err
	}
	if t.Status.Terminal() {
		return t, nil, nil, nil
	}
	if ch == nil { // finished between the two reads
		return m.Watch(ctx, owner, id)
	}
	return t, inputs, ch, nil
}

// Wait blocks until owner's task id is terminal, or ctx ends. The task it returns is
// always the stored one: expiry never removes an unfinished task, so a waiter never
// sees an invented status.
func (m *Manager) Wait(ctx context.Context, owner, id string) (Task, error) {
	for {
		t, _, ch, err := m.Watch(ctx, owner, id)
		if err != nil || ch == nil {
			return t, err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return Task{}, ctx.Err()
		}
	}
}

// List returns a page of owner's tasks and the cursor of the next page ("" at the end).
func (m *Manager) List(ctx context.Context, owner, cursor string) ([]Task, string, error) {
	after := ""
	if cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(cursor)
		if err != nil {
			return nil, "", ErrBadCursor
		}
		after = string(b)
	}
	page, err := m.store.List(ctx, owner, after, m.opts.PageSize+1)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(page) > m.opts.PageSize {
		page = page[:m.opts.PageSize]
		next = base64.RawURLEncoding.EncodeToString([]byte(page[len(page)-1].ID))
	}
	return page, next, nil
}

// cancelWait bounds how long Cancel waits for a task's work to return.
const cancelWait = 5 * time.Second

// Cancel moves owner's unfinished task id to cancelled, stops its work and waits (up
// to a few seconds, or until ctx ends) for the work to return, so that what it held
// is released when Cancel returns. A terminal task is ErrTerminal.
func (m *Manager) Cancel(ctx context.Context, owner, id string) (Task, error) {
	if _, err := m.Get(ctx, owner, id); err != nil {
		return Task{}, err
	}
	t, err := m.update(id, func(t *Task) error {
		if t.Status.Terminal() {
			return fmt.Errorf("%w '%s'", ErrTerminal, t.Status)
		}
		t.Status, t.StatusMessage = Cancelled, "cancelled by the client"
		return nil
	})
	if err != nil {
		return t, err
	}
	m.mu.Lock()
	l := m.live[id]
	m.mu.Unlock()
	m.changed(t)
	if l != nil {
		l.cancel()
		select {
		case <-l.done:
		case <-ctx.Done():
		case <-time.After(cancelWait):
			m.opts.Logger.Warn("cancelled task's work has not returned yet", "task", id, "waited", cancelWait)
		}
	}
	return t, nil
}

// Close cancels every unfinished task, waits for their work to return, and stops the
// sweeper.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	for _, l := range m.live {
		l.cancel()
	}
	m.mu.Unlock()
	close(m.stop)
	done := make(chan struct{})
	go func() { m.wg.Wait(); <-m.swept; close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *Manager) sweep() {
	defer close(m.swept)
	tick := time.NewTicker(m.opts.SweepEvery)
	defer tick.Stop()
	for {
		select {
		case <-m.stop:
			return
		case now := <-tick.C:
			m.Purge(context.Background(), now)
		}
	}
}

// Purge deletes the tasks whose retention ended before now and returns how many.
func (m *Manager) Purge(ctx context.Context, now time.Time) int {
	ids, err := m.store.Expired(ctx, now)
	if err != nil {
		m.opts.Logger.Error("list expired tasks", "err", err)
		return 0
	}
	for _, id := range ids {
		if err := m.store.Delete(ctx, id); err != nil {
			m.opts.Logger.Error("delete expired task", "task", id, "err", err)
		}
	}
	return len(ids)
}

// Input is a pending request for input from the requester (elicitation, sampling).
// Key identifies it within its task and is never reused there.
type Input struct {
	Key    string
	Method string          // the request's method, such as "elicitation/create"
	Params json.RawMessage // its params
	reply  chan Reply
	once   sync.Once
}

// Reply is the answer to an Input: a result or an error.
type Reply struct {
	Result json.RawMessage
	Err    error
}

// Answer answers owner's task id's pending input key. It reports false, dropping the
// reply, when the input was already answered or is unknown: the first answer wins.
func (m *Manager) Answer(owner, id, key string, r Reply) bool {
	if _, err := m.Get(context.Background(), owner, id); err != nil {
		return false
	}
	m.mu.Lock()
	l := m.live[id]
	var in *Input
	if l != nil {
		for _, x := range l.inputs {
			if x.Key == key {
				in = x
			}
		}
	}
	m.mu.Unlock()
	if in == nil {
		return false
	}
	answered := false
	in.once.Do(func() {
		in.reply <- r
		answered = true
	})
	if answered {
		(&Handle{m: m, id: id}).removeInput(in)
	}
	return answered
}

// Handle is a running task's view of itself.
type Handle struct {
	m  *Manager
	id string
}

// ID returns the task's ID.
func (h *Handle) ID() string { return h.id }

// Ask registers a request for input, moves the task to input_required, calls deliver
// (if not nil) to send the request on its way, and blocks until the request is
// answered (see Manager.Answer) or ctx ends. The task returns to working when no
// request is left pending.
func (h *Handle) Ask(ctx context.Context, method string, params json.RawMessage, deliver func(*Input)) (json.RawMessage, error) {
	m := h.m
	m.mu.Lock()
	l := m.live[h.id]
	if l == nil {
		m.mu.Unlock()
		return nil, ErrNotFound
	}
	l.nextKey++
	in := &Input{Key: "input-" + strconv.Itoa(l.nextKey), Method: method, Params: params, reply: make(chan Reply, 1)}
	l.inputs = append(l.inputs, in)
	m.mu.Unlock()

	defer h.removeInput(in)
	h.setStatus(InputRequired, "waiting for input")
	if deliver != nil {
		deliver(in)
	}
	select {
	case r := <-in.reply:
		return r.Result, r.Err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// removeInput drops a pending input (answered, or given up) and, when none is left,
// returns the task to working. It is idempotent.
func (h *Handle) removeInput(in *Input) {
	m := h.m
	m.mu.Lock()
	l := m.live[h.id]
	removed, left := false, 0
	if l != nil {
		for i, x := range l.inputs {
			if x == in {
				l.inputs = append(l.inputs[:i], l.inputs[i+1:]...)
				removed = true
				break
			}
		}
		left = len(l.inputs)
	}
	m.mu.Unlock()
	switch {
	case !removed:
	case left == 0:
		h.setStatus(Working, "")
	default:
		h.notify()
	}
}

// Note sets the status message of a working task, such as why it is waiting to run;
// "" clears it. It does nothing to a task in any other state.
func (h *Handle) Note(msg string) {
	t, err := h.m.update(h.id, func(t *Task) error {
		if t.Status != Working || t.StatusMessage == msg {
			return ErrTerminal // nothing to change
		}
		t.StatusMessage = msg
		return nil
	})
	if err == nil {
		h.m.changed(t)
	}
}

// setStatus moves an unfinished task between working and input_required.
func (h *Handle) setStatus(s Status, msg string) {
	t, err := h.m.update(h.id, func(t *Task) error {
		if t.Status.Terminal() || t.Status == s {
			return ErrTerminal
		}
		t.Status, t.StatusMessage = s, msg
		return nil
	})
	if err == nil {
		h.m.changed(t)
		return
	}
	// No status change, but the set of pending inputs may have changed.
	h.notify()
}

// notify wakes watchers without a status change.
func (h *Handle) notify() {
	m := h.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if l := m.live[h.id]; l != nil {
		close(l.changed)
		l.changed = make(chan struct{})
	}
}
