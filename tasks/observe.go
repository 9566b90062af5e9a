package tasks

import (
	"context"
	"time"
)

// StoreObserver hears of every operation on an observed Store (Observe), after it
// ended: metrics time it, traces make a span of it. It must not block.
type StoreObserver interface {
	// StoreOp reports operation op ("put", "get", "list", "delete", "expired",
	// "purge", "stats"; on a Shared store also "update", "set_inputs", "inputs",
	// "send", "receive"; on a Journal also "append_log", "read_log",
	// "save_checkpoint", "checkpoint", "set_recipe", "orphan", "adopt",
	// "restart"), begun at start with ctx, that ended now with err.
	StoreOp(ctx context.Context, op string, start time.Time, err error)
}

// Observe returns s with every operation reported to o. The optional interfaces s
// implements stay visible on the result: a Shared store is still Shared, so that
// the Manager finds everything it looks for. Unwrap returns s.
//
// An optional interface added to this package must be added here too, or an
// observed store hides it (TestObserveKeepsInterfaces checks).
func Observe(s Store, o StoreObserver) Store {
	base := observed{s: s, o: o}
	j, journal := s.(Journal)
	sh, shared := s.(Shared)
	switch {
	case shared && journal:
		return &observedSharedJournal{observedShared{observed: base, sh: sh}, journalOps{j, o}}
	case shared:
		return &observedShared{observed: base, sh: sh}
	case journal:
		return &observedJournal{base, journalOps{j, o}}
	}
	return &base
}

// observed is an observed Store.
type observed struct {
	s Store
	o StoreObserver
}

var (
	_ Store   = (*observed)(nil)
	_ Shared  = (*observedShared)(nil)
	_ Waker   = (*observedShared)(nil)
	_ Journal = (*observedJournal)(nil)
	_ Journal = (*observedSharedJournal)(nil)
	_ Shared  = (*observedSharedJournal)(nil)
)

// Unwrap returns the store observed.
func (w *observed) Unwrap() Store { return w.s }

func (w *observed) Put(ctx context.Context, t Task) error {
	start := time.Now()
	err := w.s.Put(ctx, t)
	w.o.StoreOp(ctx, "put", start, err)
	return err
}

func (w *observed) Get(ctx context.Context, id string) (Task, error) {
	start := time.Now()
	t, err := w.s.Get(ctx, id)
	w.o.StoreOp(ctx, "get", start, err)
	return t, err
}

func (w *observed) List(ctx context.Context, owner, after string, limit int) ([]Task, error) {
	start := time.Now()
	l, err := w.s.List(ctx, owner, after, limit)
	w.o.StoreOp(ctx, "list", start, err)
	return l, err
}

func (w *observed) Delete(ctx context.Context, id string) error {
	start := time.Now()
	err := w.s.Delete(ctx, id)
	w.o.StoreOp(ctx, "delete", start, err)
	return err
}

func (w *observed) Expired(ctx context.Context, now time.Time) ([]string, error) {
	start := time.Now()
	ids, err := w.s.Expired(ctx, now)
	w.o.StoreOp(ctx, "expired", start, err)
	return ids, err
}

func (w *observed) Purge(ctx context.Context, now time.Time, limit int) (int, error) {
	start := time.Now()
	n, err := w.s.Purge(ctx, now, limit)
	w.o.StoreOp(ctx, "purge", start, err)
	return n, err
}

func (w *observed) Stats(ctx context.Context) (Stats, error) {
	start := time.Now()
	st, err := w.s.Stats(ctx)
	w.o.StoreOp(ctx, "stats", start, err)
	return st, err
}

// observedShared is an observed Shared store.
type observedShared struct {
	observed
	sh Shared
}

func (w *observedShared) Instance() string { return w.sh.Instance() }

// Wake is the store's Wake, if it is a Waker; nil (no wake-ups: the Manager polls)
// otherwise.
func (w *observedShared) Wake() <-chan struct{} {
	if wk, ok := w.sh.(Waker); ok {
		return wk.Wake()
	}
	return nil
}

func (w *observedShared) Update(ctx context.Context, id string, f func(*Task) error) (Task, error) {
	start := time.Now()
	t, err := w.sh.Update(ctx, id, f)
	w.o.StoreOp(ctx, "update", start, err)
	return t, err
}

func (w *observedShared) SetInputs(ctx context.Context, id string, inputs []PendingInput) error {
	start := time.Now()
	err := w.sh.SetInputs(ctx, id, inputs)
	w.o.StoreOp(ctx, "set_inputs", start, err)
	return err
}

func (w *observedShared) Inputs(ctx context.Context, id string) ([]PendingInput, error) {
	start := time.Now()
	in, err := w.sh.Inputs(ctx, id)
	w.o.StoreOp(ctx, "inputs", start, err)
	return in, err
}

func (w *observedShared) Send(ctx context.Context, s Signal) (bool, error) {
	start := time.Now()
	ok, err := w.sh.Send(ctx, s)
	w.o.StoreOp(ctx, "send", start, err)
	return ok, err
}

func (w *observedShared) Receive(ctx context.Context) ([]Signal, error) {
	start := time.Now()
	sig, err := w.sh.Receive(ctx)
	w.o.StoreOp(ctx, "receive", start, err)
	return sig, err
}

// observedJournal is an observed Journal that is not Shared (MemoryStore), and
// observedSharedJournal one that is (sqlstore).
type (
	observedJournal struct {
		observed
		journalOps
	}
	observedSharedJournal struct {
		observedShared
		journalOps
	}
)

// journalOps are a Journal's own operations, observed.
type journalOps struct {
	j Journal
	o StoreObserver
}

func (w journalOps) AppendLog(ctx context.Context, id string, text []byte, max int) (LogState, error) {
	start := time.Now()
	st, err := w.j.AppendLog(ctx, id, text, max)
	w.o.StoreOp(ctx, "append_log", start, err)
	return st, err
}

func (w journalOps) ReadLog(ctx context.Context, id string, offset int64, limit int) (LogPage, error) {
	start := time.Now()
	p, err := w.j.ReadLog(ctx, id, offset, limit)
	w.o.StoreOp(ctx, "read_log", start, err)
	return p, err
}

func (w journalOps) SaveCheckpoint(ctx context.Context, id string, data []byte) error {
	start := time.Now()
	err := w.j.SaveCheckpoint(ctx, id, data)
	w.o.StoreOp(ctx, "save_checkpoint", start, err)
	return err
}

func (w journalOps) Checkpoint(ctx context.Context, id string) ([]byte, error) {
	start := time.Now()
	cp, err := w.j.Checkpoint(ctx, id)
	w.o.StoreOp(ctx, "checkpoint", start, err)
	return cp, err
}

func (w journalOps) SetRecipe(ctx context.Context, id string, recipe []byte) error {
	start := time.Now()
	err := w.j.SetRecipe(ctx, id, recipe)
	w.o.StoreOp(ctx, "set_recipe", start, err)
	return err
}

func (w journalOps) Orphan(ctx context.Context, id string, msg string) (bool, error) {
	start := time.Now()
	ok, err := w.j.Orphan(ctx, id, msg)
	w.o.StoreOp(ctx, "orphan", start, err)
	return ok, err
}

func (w journalOps) Adopt(ctx context.Context, runner string, limit int) ([]Adopted, error) {
	start := time.Now()
	a, err := w.j.Adopt(ctx, runner, limit)
	w.o.StoreOp(ctx, "adopt", start, err)
	return a, err
}

func (w journalOps) Restart(ctx context.Context, id string, f func(t *Task, resumes int) error) (Adopted, error) {
	start := time.Now()
	a, err := w.j.Restart(ctx, id, f)
	w.o.StoreOp(ctx, "restart", start, err)
	return a, err
}
