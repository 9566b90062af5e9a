package tasks

import (
	"context"
	"fmt"
	"time"
)

// AdoptEvery is how often a Manager looks for orphaned tasks to resume: tasks whose
// server stopped while they ran, that recorded a recipe (Handle.SetRecipe), and that
// the store marked orphaned (Journal.Orphan) when it found their server gone.
const AdoptEvery = time.Second

// adoptBatch is how many orphaned tasks one look claims.
const adoptBatch = 16

// adopt claims and resumes orphaned tasks, at once and every AdoptEvery, until Close.
func (m *Manager) adopt() {
	defer close(m.adopted)
	if m.journal == nil || m.opts.Resume == nil {
		return
	}
	runner := ""
	if m.shared != nil {
		runner = m.shared.Instance()
	}
	tick := time.NewTicker(AdoptEvery)
	defer tick.Stop()
	failing := ""
	for {
		m.mu.Lock()
		closed := m.closed
		m.mu.Unlock()
		if closed {
			return
		}
		got, err := m.journal.Adopt(context.Background(), runner, adoptBatch)
		switch {
		case err != nil && err.Error() != failing:
			failing = err.Error()
			m.opts.Logger.Error("adopt tasks to resume", "err", err)
		case err == nil:
			failing = ""
		}
		for _, a := range got {
			m.resume(a)
		}
		if len(got) == adoptBatch {
			continue // there may be more
		}
		select {
		case <-m.stop:
			return
		case <-tick.C:
		}
	}
}

// resume runs an adopted task's work again, from its checkpoint, or fails it when it
// has been resumed too often or cannot be.
func (m *Manager) resume(a Adopted) {
	id := a.Task.ID
	fail := func(msg string) {
		t, err := m.update(id, func(t *Task) error {
			if t.Status.Terminal() {
				return ErrTerminal
			}
			t.Status, t.StatusMessage = Failed, msg
			return nil
		})
		if err == nil {
			m.changed(t)
		}
	}
	if a.Resumes > m.opts.MaxResumes {
		// Adopt counted this resume: the ones before it, worker restarts included.
		limit := &ResumeLimitError{Resumes: a.Resumes - 1, Max: m.opts.MaxResumes}
		fail(fmt.Sprintf("the server running this task stopped while it ran, and it is not resumed again: %v", limit))
		return
	}
	f, err := m.opts.Resume(a)
	if err != nil {
		fail(fmt.Sprintf("the server running this task stopped while it ran, and the task cannot be resumed: %v", err))
		return
	}

	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return // the next server adopts it
	}
	quotas := Requester{Owner: a.Task.Owner}.quotas()
	taskCtx, cancel := context.WithCancel(context.Background())
	l := &live{quotas: quotas, cancel: cancel, changed: make(chan struct{}), done: make(chan struct{}),
		created: make(chan struct{}), ended: make(chan struct{})}
	close(l.created)
	l.resumable = true
	m.live[id] = l
	for _, q := range quotas {
		m.unfin[q]++
	}
	m.wg.Add(1)
	m.mu.Unlock()

	from := "from its last checkpoint"
	if a.Checkpoint == nil {
		from = "from its start (it had saved no checkpoint)"
	}
	msg := fmt.Sprintf("resumed %s after the server running it stopped (resume %d of at most %d)", from, a.Resumes, m.opts.MaxResumes)
	t, err := m.update(id, func(t *Task) error {
		if t.Status.Terminal() {
			return ErrTerminal
		}
		t.Status, t.StatusMessage = Working, msg
		return nil
	})
	if err == nil {
		m.changed(t)
	}
	m.opts.Logger.Info("task resumed", "task", id, "resume", a.Resumes, "checkpoint_bytes", len(a.Checkpoint))
	go func() {
		defer m.wg.Done()
		defer close(l.done)
		defer cancel()
		result, failed, rpcErr := f(taskCtx, &Handle{m: m, id: id, checkpoint: a.Checkpoint, resumes: a.Resumes})
		l.final = m.outcome(result, failed, rpcErr)
		close(l.ended)
		if !m.orphanOnClose(id, l) {
			m.finish(id, l.final)
		}
	}()
}

// ClosedMessage is the status message of a resumable task whose server shut down
// while it ran: the next server to start on the store resumes it.
const ClosedMessage = "the server shut down while this task ran; it resumes from its last checkpoint when a server starts on the same task store"

// orphanOnClose leaves a resumable task whose work Close stopped to be adopted by the
// next server, instead of failing it, and reports whether it did.
func (m *Manager) orphanOnClose(id string, l *live) bool {
	m.mu.Lock()
	closing, resumable := m.closed, l.resumable
	m.mu.Unlock()
	if !closing || !resumable || m.journal == nil {
		return false
	}
	mu := &m.taskMu[stripe(id)]
	mu.Lock()
	ok, err := m.journal.Orphan(context.Background(), id, ClosedMessage)
	mu.Unlock()
	if err != nil {
		m.opts.Logger.Error("leave a resumable task to the next server", "task", id, "err", err)
	}
	if !ok {
		return false
	}
	m.release(id)
	return true
}
