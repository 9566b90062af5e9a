package tasks

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Store keeps tasks. The Manager is its only writer and serializes updates to one
// task, so a Store needs only to be safe for concurrent use; a durable Store persists
// each Put before returning.
//
// A Store may implement optional interfaces, which the Manager finds by a type
// assertion on Options.Store; these are all of them:
//   - [Shared]: several server processes use the store at once (tasks/sqlstore);
//   - [Waker]: a Shared store that wakes its instance when signals arrive
//     (sqlstore on PostgreSQL).
//
// (The host finds one more on the store it is given: UseNonce, host.Nonces.) A type
// that wraps a Store (to count or trace its calls) must keep each of these that the
// wrapped store has visible, or the Manager silently loses them: with Waker hidden,
// cross-instance cancels and answers wait for the WakePoll fallback. storetest's
// contract checks that a store's Manager is woken.
type Store interface {
	// Put creates or replaces a task.
	Put(ctx context.Context, t Task) error
	// Get returns a task or ErrNotFound.
	Get(ctx context.Context, id string) (Task, error)
	// List returns up to limit tasks of owner, ordered by (CreatedAt, ID), starting
	// after the task with ID after ("" starts at the beginning).
	List(ctx context.Context, owner, after string, limit int) ([]Task, error)
	// Delete removes a task; removing a missing task is not an error.
	Delete(ctx context.Context, id string) error
	// Expired returns the IDs of terminal tasks whose retention ended before now
	// (see IsExpired).
	Expired(ctx context.Context, now time.Time) ([]string, error)
	// Purge deletes up to limit tasks that IsExpired at now, in one commit, and
	// returns how many it deleted.
	Purge(ctx context.Context, now time.Time, limit int) (int, error)
	// Stats reports how much the store holds.
	Stats(ctx context.Context) (Stats, error)
}

// Stats is what a Store holds.
type Stats struct {
	Tasks int   // tasks stored
	Bytes int64 // bytes of their results, errors, logs and checkpoints (what grows)
}

// Size is what a task adds to Stats.Bytes.
func Size(t Task) int64 {
	n := int64(len(t.Result))
	if t.Error != nil {
		n += int64(len(t.Error.Message) + len(t.Error.Data))
	}
	return n
}

// MemoryStore is a Store in memory: fast, and gone when the process ends.
type MemoryStore struct {
	mu      sync.Mutex
	tasks   map[string]Task
	byOwner map[string][]string // IDs in (CreatedAt, ID) order
	journal map[string]*journalEntry
	bytes   int64 // results, errors and journals
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{tasks: map[string]Task{}, byOwner: map[string][]string{}, journal: map[string]*journalEntry{}}
}

func (s *MemoryStore) Put(_ context.Context, t Task) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, exists := s.tasks[t.ID]; !exists {
		ids := s.byOwner[t.Owner]
		i, _ := slices.BinarySearchFunc(ids, t, func(id string, t Task) int { return compare(s.tasks[id], t) })
		s.byOwner[t.Owner] = slices.Insert(ids, i, t.ID)
	} else {
		s.bytes -= Size(s.tasks[t.ID])
	}
	s.tasks[t.ID] = t
	s.bytes += Size(t)
	return nil
}

func (s *MemoryStore) Stats(context.Context) (Stats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Tasks: len(s.tasks), Bytes: s.bytes}, nil
}

func (s *MemoryStore) Get(_ context.Context, id string) (Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[id]
	if !ok {
		return Task{}, ErrNotFound
	}
	return t, nil
}

func (s *MemoryStore) List(_ context.Context, owner, after string, limit int) ([]Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := s.byOwner[owner]
	start := 0
	if after != "" {
		t, ok := s.tasks[after]
		if !ok || t.Owner != owner {
			return nil, ErrBadCursor
		}
		i, _ := slices.BinarySearchFunc(ids, t, func(id string, t Task) int { return compare(s.tasks[id], t) })
		start = i + 1
	}
	var out []Task
	for _, id := range ids[start:] {
		if len(out) == limit {
			break
		}
		out = append(out, s.tasks[id])
	}
	return out, nil
}

func (s *MemoryStore) Delete(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[id]
	if !ok {
		return nil
	}
	delete(s.tasks, id)
	s.bytes -= Size(t)
	if e := s.journal[id]; e != nil {
		s.bytes -= e.size()
		delete(s.journal, id)
	}
	s.byOwner[t.Owner] = slices.DeleteFunc(s.byOwner[t.Owner], func(x string) bool { return x == id })
	if len(s.byOwner[t.Owner]) == 0 {
		delete(s.byOwner, t.Owner)
	}
	return nil
}

func (s *MemoryStore) Expired(_ context.Context, now time.Time) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for id, t := range s.tasks {
		if IsExpired(t, now) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

func (s *MemoryStore) Purge(ctx context.Context, now time.Time, limit int) (int, error) {
	ids, err := s.Expired(ctx, now)
	if err != nil {
		return 0, err
	}
	ids = ids[:min(len(ids), limit)]
	for _, id := range ids {
		s.Delete(ctx, id)
	}
	return len(ids), nil
}

// ResultGrace is how long a task that finished after its TTL had run out is still
// kept, so that a client polling it can fetch its result.
const ResultGrace = time.Minute

// ExpiresAt is when a terminal task's retention ends: CreatedAt + TTL, or ResultGrace
// after it finished if it ran past its TTL. A task that is not terminal never expires,
// whatever its TTL: stores only expire terminal tasks.
func ExpiresAt(t Task) time.Time {
	until := t.CreatedAt.Add(t.TTL)
	if t.FinishedAt.After(until) {
		until = t.FinishedAt.Add(ResultGrace)
	}
	return until
}

// IsExpired reports whether t's retention ended before now: it is terminal and now is
// past ExpiresAt. An expired task is not served, whether or not it was purged yet.
func IsExpired(t Task, now time.Time) bool {
	return t.Status.Terminal() && now.After(ExpiresAt(t))
}

func compare(a, b Task) int {
	if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
		return c
	}
	switch {
	case a.ID < b.ID:
		return -1
	case a.ID > b.ID:
		return 1
	}
	return 0
}
