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
	"slices"
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
	MaxPerOwner  int           // unfinished tasks one requester may have; 0 means 64
	// MaxShared caps the unfinished tasks of all the requesters that share one owner
	// (Requester.Source set: anonymous clients) together, so that they cannot take
	// the whole server from identified ones; 0 means 256.
	MaxShared int
	PageSize  int // tasks per tasks/list page; 0 means 50
	// SweepEvery is how often expired tasks are purged from the store. Reads never
	// serve an expired task whenever the sweep runs: it only frees the space (and a
	// full store is swept before it refuses a task). 0 means a quarter of DefaultTTL,
	// between 1s and 1m (15m for the default ttl of 1h would keep much for long;
	// see sweepEvery).
	SweepEvery time.Duration
	// Bounds on what is kept. A new task is refused while the store is full, and a
	// result over MaxResultBytes fails its task; nothing stored is dropped to make room.
	MaxResultBytes int          // 0 means 16 MiB
	MaxStoredTasks int          // 0 means 100,000
	MaxStoreBytes  int64        // 0 means 1 GiB
	Logger         *slog.Logger // nil discards
	// CreateWindow is how long Start lets a new task's work run before it stores the
	// task: a task whose work ends within it is stored once, finished, in one commit
	// instead of two (its CreateTaskResult still waits for that commit, and still
	// says working). The work then starts before its task is stored; if storing
	// fails, the work is cancelled and Start fails. 0 means no window: the task is
	// stored before its work starts.
	CreateWindow time.Duration
	// OnChange, if set, is called after every status change of a task (not at its
	// creation), while the task's own lock is held, so that it sees one task's states
	// in the order they were stored. It must not block: queue any I/O.
	OnChange func(Task)

	// Task logs and checkpoints (journal.go), on a Store that is a Journal.
	MaxLogBytes        int // a task log keeps its last this many bytes; 0 means DefaultMaxLogBytes
	MaxCheckpointBytes int // a larger checkpoint is refused; 0 means DefaultMaxCheckpointBytes
	// OnLog, if set, is called after every append to a task's log, under the task's
	// lock like OnChange. It must not block.
	OnLog func(id string, st LogState)
	// Resume, if set, gives the work that resumes an adopted task (resume.go): the
	// task's work again, from its recipe and checkpoint. An error fails the task with
	// its message. Without it, no task is adopted.
	Resume func(a Adopted) (Func, error)
	// MaxResumes is how often one task is resumed before it is failed instead
	// (its work keeps stopping its server or its worker): adoptions after a server
	// stopped and Handle.Restart after a worker died, one count kept in the
	// Journal; 0 means DefaultMaxResumes.
	MaxResumes int
}

// Func is the work a task runs. Its context is owned by the task: it ends when the task
// is cancelled or the Manager closes, not when the request that created it ends. It
// returns the request's result, or the JSON-RPC error the request would have answered,
// and failed reports a result that is a failure (a tool result with isError), with a
// status message.
type Func func(ctx context.Context, h *Handle) (result json.RawMessage, failed string, rpcErr *Error)

// Manager runs tasks and answers for them: the one task model behind every wire form.
type Manager struct {
	opts    Options
	store   Store
	shared  Shared  // store, when other processes share it; else nil
	journal Journal // store, when it keeps task logs and checkpoints; else nil

	mu      sync.Mutex
	live    map[string]*live // unfinished tasks of this process
	unfin   map[quotaKey]int // unfinished tasks per requester, and per shared owner
	closed  bool
	wg      sync.WaitGroup
	stop    chan struct{}
	swept   chan struct{}  // closed when the sweeper has ended
	heard   chan struct{}  // closed when the signal receiver has ended
	adopted chan struct{}  // closed when the adopter (resume.go) has ended
	taskMu  [64]sync.Mutex // read-modify-write of one task in the store, striped by ID
}

// Requester is who starts a task: the owner, who may see and touch it, and which of
// the requesters sharing that owner it is.
//
// A requester that only the owner identifies (a session, a user) has Source "": it may
// have MaxPerOwner unfinished tasks. Requesters that share one owner (anonymous
// clients on the stateless wire, whose tasks' IDs are their capability) are told apart
// by Source (their network address): each Source may have MaxPerOwner unfinished
// tasks, and all of them together MaxShared. So one of them cannot use up the quota
// of the others, and all of them cannot use up the server.
type Requester struct {
	Owner  string
	Source string
}

// quotaKey names a counter of unfinished tasks: one requester's, or (all true) all
// those of a shared owner.
type quotaKey struct {
	owner, source string
	all           bool
}

// quotas are the counters r's tasks count against.
func (r Requester) quotas() []quotaKey {
	if r.Source == "" {
		return []quotaKey{{owner: r.Owner}}
	}
	return []quotaKey{{owner: r.Owner, source: r.Source}, {owner: r.Owner, all: true}}
}

// live is the in-process state of an unfinished task.
type live struct {
	quotas  []quotaKey // the counters it counts against
	cancel  context.CancelFunc
	done    chan struct{} // closed when the work has returned
	changed chan struct{} // closed and replaced at every change
	inputs  []*Input      // pending input requests, in the order they were asked
	nextKey int

	// Storing the task (see Options.CreateWindow). Start sets coalesced and lost,
	// and closes created when the task is in the store (or failed to get there).
	created   chan struct{}
	coalesced bool              // stored finished: its work's outcome is already in the store
	lost      bool              // storing failed: the work is cancelled and leaves no trace
	ended     chan struct{}     // closed when the work has returned, with final set
	final     func(*Task) error // the work's outcome, applied to the stored task
	inputMu   sync.Mutex        // orders the writes of inputs to a Shared store
	resumable bool              // it has a recipe: Close orphans it instead of failing it
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
	if opts.MaxShared <= 0 {
		opts.MaxShared = 256
	}
	if opts.PageSize <= 0 {
		opts.PageSize = 50
	}
	if opts.SweepEvery <= 0 {
		opts.SweepEvery = sweepEvery(opts.DefaultTTL)
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
	if opts.MaxLogBytes <= 0 {
		opts.MaxLogBytes = DefaultMaxLogBytes
	}
	if opts.MaxCheckpointBytes <= 0 {
		opts.MaxCheckpointBytes = DefaultMaxCheckpointBytes
	}
	if opts.MaxResumes <= 0 {
		opts.MaxResumes = DefaultMaxResumes
	}
	m := &Manager{opts: opts, store: opts.Store, live: map[string]*live{}, unfin: map[quotaKey]int{},
		stop: make(chan struct{}), swept: make(chan struct{}), heard: make(chan struct{})}
	m.shared, _ = opts.Store.(Shared)
	m.journal, _ = opts.Store.(Journal)
	m.adopted = make(chan struct{})
	go m.sweep()
	go m.hear()
	go m.adopt()
	return m
}

// SignalPoll is how often a Manager on a Shared store looks for signals sent to its
// instance (cancels, input answers), and how often a waiter polls a task that another
// instance runs: the delay these add across instances is at most this.
const SignalPoll = 50 * time.Millisecond

// sweepEvery is the sweep interval that follows the default ttl: a quarter of it,
// between 1s and 1m.
func sweepEvery(defaultTTL time.Duration) time.Duration {
	return min(max(defaultTTL/4, time.Second), time.Minute)
}

// purgeBatch is how many expired tasks one store commit deletes: one commit (and one
// fsync) per batch, and the store is free for other writers between batches.
const purgeBatch = 1000

// newID returns 192 random bits, URL-safe.
func newID() string {
	b := make([]byte, 24)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Start creates a task for who and runs f in its own goroutine. ttl <= 0 asks for the
// default; a longer one than MaxTTL is clamped, and the task reports what it got.
func (m *Manager) Start(ctx context.Context, who Requester, ttl time.Duration, f Func) (Task, error) {
	owner := who.Owner
	if ttl <= 0 {
		ttl = m.opts.DefaultTTL
	}
	ttl = min(ttl, m.opts.MaxTTL)
	now := time.Now().UTC()
	t := Task{ID: newID(), Owner: owner, Status: Working, CreatedAt: now, LastUpdatedAt: now,
		TTL: ttl, PollInterval: m.opts.PollInterval}
	if m.shared != nil {
		t.Runner = m.shared.Instance()
	}

	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return Task{}, ErrClosed
	}
	quotas := who.quotas()
	for _, q := range quotas {
		if err := m.checkQuota(q); err != nil {
			m.mu.Unlock()
			return Task{}, err
		}
	}
	if err := m.checkRoom(ctx); err != nil {
		// Expired tasks still stored do not count against the bounds: purge a
		// batch of them now (one commit, under the lock) rather than wait for the
		// sweep.
		if errors.Is(err, ErrStoreFull) {
			if n, perr := m.store.Purge(ctx, time.Now(), purgeBatch); perr == nil && n > 0 {
				err = m.checkRoom(ctx)
			}
		}
		if err != nil {
			m.mu.Unlock()
			return Task{}, err
		}
	}
	// The task's context outlives the request: only Cancel and Close end it.
	taskCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l := &live{quotas: quotas, cancel: cancel, changed: make(chan struct{}), done: make(chan struct{}),
		created: make(chan struct{}), ended: make(chan struct{})}
	m.live[t.ID] = l
	for _, q := range quotas {
		m.unfin[q]++
	}
	m.wg.Add(1)
	m.mu.Unlock()

	work := func() {
		defer m.wg.Done()
		defer close(l.done)
		defer cancel()
		result, failed, rpcErr := f(taskCtx, &Handle{m: m, id: t.ID})
		l.final = m.outcome(result, failed, rpcErr)
		close(l.ended)
		<-l.created
		switch {
		case l.lost:
			m.forget(t.ID)
		case l.coalesced:
			m.settle(t.ID)
		case m.orphanOnClose(t.ID, l):
		default:
			m.finish(t.ID, l.final)
		}
	}
	stored := t
	if m.opts.CreateWindow > 0 {
		go work()
		window := time.NewTimer(m.opts.CreateWindow)
		select {
		case <-l.ended:
			if l.final(&stored) == nil {
				stored.LastUpdatedAt = time.Now().UTC()
				stored.FinishedAt = stored.LastUpdatedAt
				l.coalesced = true
			}
		case <-window.C:
		}
		window.Stop()
	}
	if err := m.store.Put(ctx, stored); err != nil {
		l.lost, l.coalesced = true, false
		cancel()
		close(l.created)
		if m.opts.CreateWindow <= 0 {
			m.forget(t.ID)
			m.wg.Done()
		}
		return Task{}, fmt.Errorf("store task: %w", err)
	}
	close(l.created)
	if m.opts.CreateWindow <= 0 {
		go work()
	}
	return t, nil
}

// checkQuota refuses a new task that counter q has no room for.
func (m *Manager) checkQuota(q quotaKey) error {
	n := m.unfin[q]
	switch {
	case q.all && n >= m.opts.MaxShared:
		return fmt.Errorf("%w: anonymous clients have %d unfinished tasks, as many as they may have together (max_anonymous); wait for one to finish, or authenticate",
			ErrTooMany, n)
	case !q.all && n >= m.opts.MaxPerOwner:
		return fmt.Errorf("%w: %d are still running (the limit per client is %d); wait for one to finish or cancel one",
			ErrTooMany, n, m.opts.MaxPerOwner)
	}
	return nil
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

// outcome is what the work returned as a change of its task, decided when it
// returned (a result over MaxResultBytes fails it; a Close under way fails it).
func (m *Manager) outcome(result json.RawMessage, failed string, rpcErr *Error) func(*Task) error {
	if len(result) > m.opts.MaxResultBytes {
		rpcErr = &Error{Code: -32603, Message: fmt.Sprintf("the result of %d bytes is larger than the %d bytes a task may keep (max_result_bytes)", len(result), m.opts.MaxResultBytes)}
		result, failed = nil, ""
	}
	m.mu.Lock()
	closing := m.closed
	m.mu.Unlock()
	return func(t *Task) error {
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
	}
}

// finish records a task's outcome, unless it was cancelled meanwhile.
func (m *Manager) finish(id string, apply func(*Task) error) {
	t, err := m.update(id, apply)
	if err != nil && !errors.Is(err, ErrTerminal) {
		m.opts.Logger.Error("record task outcome", "task", id, "err", err)
	}
	if err == nil {
		m.changed(t)
	}
	m.release(id)
}

// settle ends a task that was stored finished (Options.CreateWindow).
func (m *Manager) settle(id string) {
	m.stored(id)
	m.release(id)
}

// release forgets a task whose work has ended and wakes its watchers.
func (m *Manager) release(id string) {
	m.mu.Lock()
	if l := m.live[id]; l != nil {
		m.forgetLocked(id)
		close(l.changed)
	}
	m.mu.Unlock()
}

func (m *Manager) forget(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.forgetLocked(id)
}

func (m *Manager) forgetLocked(id string) {
	l, ok := m.live[id]
	if !ok {
		return
	}
	delete(m.live, id)
	for _, q := range l.quotas {
		if m.unfin[q]--; m.unfin[q] <= 0 {
			delete(m.unfin, q)
		}
	}
}

// update applies f to the stored task and stores the result, stamping LastUpdatedAt
// and FinishedAt. A status change must be legal.
func (m *Manager) update(id string, f func(*Task) error) (Task, error) {
	// Updates of different tasks run concurrently, so that a durable store can commit
	// them together; updates of one task are serialized.
	if err := m.waitStored(id); err != nil {
		return Task{}, err
	}
	mu := &m.taskMu[stripe(id)]
	mu.Lock()
	defer mu.Unlock()
	ctx := context.Background()
	apply := func(t *Task) error {
		before := t.Status
		if err := f(t); err != nil {
			return err
		}
		if t.Status != before && !before.CanMove(t.Status) {
			return fmt.Errorf("task %s: illegal transition %s -> %s", id, before, t.Status)
		}
		t.LastUpdatedAt = time.Now().UTC()
		if t.Status.Terminal() && !before.Terminal() {
			t.FinishedAt = t.LastUpdatedAt
		}
		return nil
	}
	var t Task
	var err error
	if m.shared != nil {
		// Other processes write the same task: one transaction reads and writes it.
		t, err = m.shared.Update(ctx, id, apply)
	} else if t, err = m.store.Get(ctx, id); err != nil {
		return Task{}, err
	} else if err = apply(&t); err == nil {
		err = m.store.Put(ctx, t)
	}
	if err == nil && m.opts.OnChange != nil {
		// Still under the task's lock: OnChange sees its states in the order stored.
		m.opts.OnChange(t)
	}
	return t, err
}

// waitStored waits until a live task is in the store: its work may run before it is
// stored (CreateWindow). It is ErrNotFound if storing it failed.
func (m *Manager) waitStored(id string) error {
	m.mu.Lock()
	l := m.live[id]
	m.mu.Unlock()
	if l != nil {
		<-l.created
		if l.lost {
			return ErrNotFound
		}
	}
	return nil
}

var stripeSeed = maphash.MakeSeed()

// stripe picks the lock of a task ID.
func stripe(id string) uint64 {
	return maphash.String(stripeSeed, id) % 64
}

// stored tells OnChange, then watchers, about task id as it is stored now, under the
// task's lock like update: for a task that changed without an update here.
func (m *Manager) stored(id string) {
	mu := &m.taskMu[stripe(id)]
	mu.Lock()
	t, err := m.store.Get(context.Background(), id)
	if err == nil && m.opts.OnChange != nil {
		m.opts.OnChange(t)
	}
	mu.Unlock()
	if err == nil {
		m.changed(t)
	}
}

// changed wakes the watchers of t after a change that OnChange has already been told
// of (by update or stored): a status notification goes out before a waiting
// tasks/result can answer.
func (m *Manager) changed(t Task) {
	m.mu.Lock()
	if l := m.live[t.ID]; l != nil {
		close(l.changed)
		l.changed = make(chan struct{})
	}
	m.mu.Unlock()
}

// Get returns owner's task id. Another owner's task is ErrNotFound, as if it did not
// exist, and so is an expired one (IsExpired), whether or not the sweep has purged it.
func (m *Manager) Get(ctx context.Context, owner, id string) (Task, error) {
	t, err := m.store.Get(ctx, id)
	if err != nil || t.Owner != owner || IsExpired(t, time.Now()) {
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
	if ch == nil && m.shared != nil {
		// Another instance runs it: its inputs are in the store, and its changes are
		// seen by polling the store.
		pending, err := m.shared.Inputs(ctx, id)
		if err != nil {
			return Task{}, nil, nil, err
		}
		for _, p := range pending {
			inputs = append(inputs, &Input{Key: p.Key, Method: p.Method, Params: p.Params})
		}
		poll := make(chan struct{})
		time.AfterFunc(SignalPoll, func() { close(poll) })
		return t, inputs, poll, nil
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
	// The cursor is the last task the store returned, expired or not.
	last := ""
	if len(page) > m.opts.PageSize {
		last = page[m.opts.PageSize-1].ID
		page = page[:m.opts.PageSize]
	}
	now := time.Now()
	page = slices.DeleteFunc(page, func(t Task) bool { return IsExpired(t, now) })
	next := ""
	if last != "" {
		next = base64.RawURLEncoding.EncodeToString([]byte(last))
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
	if l == nil && m.shared != nil && t.Runner != "" && t.Runner != m.shared.Instance() {
		// Another instance runs its work: tell it to stop.
		if _, err := m.shared.Send(ctx, Signal{Runner: t.Runner, Task: id, Kind: SignalCancel}); err != nil {
			m.opts.Logger.Error("send cancel to the instance running the task", "task", id, "instance", t.Runner, "err", err)
		}
	}
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
	go func() { <-m.adopted; m.wg.Wait(); <-m.swept; <-m.heard; close(done) }()
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

// Purge deletes the tasks whose retention ended before now, a batch of them per
// store commit, and returns how many.
func (m *Manager) Purge(ctx context.Context, now time.Time) int {
	total := 0
	for {
		n, err := m.store.Purge(ctx, now, purgeBatch)
		total += n
		if err != nil {
			m.opts.Logger.Error("purge expired tasks", "purged", total, "err", err)
			return total
		}
		if n < purgeBatch || ctx.Err() != nil {
			return total
		}
	}
}

// Input is a pending request for input from the requester (elicitation, sampling).
// Key identifies it within its task and is never reused there.
type Input struct {
	Key    string
	Method string          // the request's method, such as "elicitation/create"
	Params json.RawMessage // its params
	// Pushed: the work sent it to the requester itself when it asked (2025-11-25
	// on a session); otherwise a waiting tasks/result delivers it.
	Pushed bool
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
	if l == nil && m.shared != nil {
		// Another instance may run it: the answer goes there through the store.
		s := Signal{Task: id, Kind: SignalAnswer, Key: key, Result: r.Result}
		if r.Err != nil {
			s.Err = r.Err.Error()
		}
		t, err := m.store.Get(context.Background(), id)
		if err != nil || t.Runner == "" || t.Runner == m.shared.Instance() {
			return false
		}
		s.Runner = t.Runner
		ok, err := m.shared.Send(context.Background(), s)
		if err != nil {
			m.opts.Logger.Error("send input answer to the instance running the task", "task", id, "instance", t.Runner, "err", err)
		}
		return ok
	}
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
	// What a resumed task's work starts from (resume.go).
	checkpoint []byte
	resumes    int
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
	in := &Input{Key: "input-" + strconv.Itoa(l.nextKey), Method: method, Params: params, Pushed: deliver != nil, reply: make(chan Reply, 1)}
	l.inputs = append(l.inputs, in)
	m.mu.Unlock()
	h.shareInputs(l)

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
	if removed {
		h.shareInputs(l)
	}
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

// shareInputs records l's pending inputs in a Shared store, where other instances
// show them and answer them.
func (h *Handle) shareInputs(l *live) {
	m := h.m
	if m.shared == nil {
		return
	}
	l.inputMu.Lock()
	defer l.inputMu.Unlock()
	m.mu.Lock()
	pending := make([]PendingInput, len(l.inputs))
	for i, in := range l.inputs {
		pending[i] = PendingInput{Key: in.Key, Method: in.Method, Params: in.Params}
	}
	m.mu.Unlock()
	if err := m.shared.SetInputs(context.Background(), h.id, pending); err != nil {
		m.opts.Logger.Error("record pending inputs", "task", h.id, "err", err)
	}
}

// hear receives, on a Shared store, the signals other instances send about the tasks
// this one runs, every SignalPoll (on a Waker: when woken, and every WakePoll), until
// Close.
func (m *Manager) hear() {
	defer close(m.heard)
	if m.shared == nil {
		return
	}
	every := SignalPoll
	var wake <-chan struct{}
	if w, ok := m.shared.(Waker); ok && w.Wake() != nil {
		every, wake = WakePoll, w.Wake()
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	failing := "" // the error last logged: a lasting one is logged once
	for {
		select {
		case <-m.stop:
			return
		case <-tick.C:
		case <-wake:
		}
		signals, err := m.shared.Receive(context.Background())
		if err != nil {
			if err.Error() != failing {
				failing = err.Error()
				m.opts.Logger.Error("receive signals from other instances", "err", err)
			}
			continue
		}
		failing = ""
		for _, s := range signals {
			m.obey(s)
		}
	}
}

// obey acts on a signal about a task this instance runs.
func (m *Manager) obey(s Signal) {
	m.mu.Lock()
	l := m.live[s.Task]
	var in *Input
	if l != nil {
		for _, x := range l.inputs {
			if x.Key == s.Key {
				in = x
			}
		}
	}
	m.mu.Unlock()
	if l == nil {
		return // finished meanwhile
	}
	switch s.Kind {
	case SignalCancel:
		l.cancel()
		m.stored(s.Task)
	case SignalAnswer:
		if in == nil {
			return
		}
		r := Reply{Result: s.Result}
		if s.Err != "" {
			r = Reply{Err: errors.New(s.Err)}
		}
		answered := false
		in.once.Do(func() {
			in.reply <- r
			answered = true
		})
		if answered {
			(&Handle{m: m, id: s.Task}).removeInput(in)
		}
	}
}
