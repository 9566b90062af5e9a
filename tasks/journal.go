package tasks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// Journal is a Store that keeps, beside each task and with it, what a running task
// writes about itself: its log (lines a client can read while the task runs), its
// last checkpoint (an opaque blob its work saves to resume from), and the recipe
// that starts its work again after the server running it stopped. A Journal deletes
// these with their task. MemoryStore and sqlstore are Journals; a Manager on a Store
// that is not one refuses logs and checkpoints with ErrNoJournal.
type Journal interface {
	Store
	// AppendLog appends text (whole lines, each ending in '\n') to task id's log and
	// drops whole lines from its start while it is longer than max bytes. It returns
	// the log's state after the append.
	AppendLog(ctx context.Context, id string, text []byte, max int) (LogState, error)
	// ReadLog returns up to limit bytes of task id's log from offset (counted from
	// the log's first byte ever written, dropped ones included).
	ReadLog(ctx context.Context, id string, offset int64, limit int) (LogPage, error)
	// SaveCheckpoint replaces task id's checkpoint, in one commit.
	SaveCheckpoint(ctx context.Context, id string, data []byte) error
	// Checkpoint returns task id's last checkpoint, nil if it saved none.
	Checkpoint(ctx context.Context, id string) ([]byte, error)
	// SetRecipe records how to start task id's work again; nil makes the task one
	// that is not resumed.
	SetRecipe(ctx context.Context, id string, recipe []byte) error
	// Orphan marks the unfinished task id, whose runner stopped, as waiting for an
	// instance to resume it, with msg as its status message. It reports false,
	// changing nothing, when the task has no recipe (it is not resumable).
	Orphan(ctx context.Context, id string, msg string) (bool, error)
	// Adopt claims up to limit orphaned tasks for this instance (the Runner it
	// records; "" for a store one process uses), counts a resume in each, drops
	// their pending inputs, and returns them with what they resume from.
	Adopt(ctx context.Context, runner string, limit int) ([]Adopted, error)
	// Restart counts a resume of task id whose work starts again in the instance
	// running it (its worker process died), in the commit that applies f to the
	// task: f gets the task and how many resumes it counts so far (by Adopt and
	// Restart alike), and an error from f changes nothing and is returned. It
	// returns the task as stored, with what it resumes from and the new count.
	Restart(ctx context.Context, id string, f func(t *Task, resumes int) error) (Adopted, error)
}

// LogState is the size of a task's log.
type LogState struct {
	Dropped int64 // bytes dropped from its start to keep it within its bound
	Kept    int   // bytes kept
}

// End is the offset just past the log's last byte.
func (s LogState) End() int64 { return s.Dropped + int64(s.Kept) }

// LogPage is a part of a task's log.
type LogPage struct {
	LogState
	Offset int64  // where Text starts; past Dropped even when asked for less
	Text   []byte // whole lines
}

// Adopted is a task claimed to be resumed: an orphan (Journal.Adopt), or a task
// whose worker died (Journal.Restart).
type Adopted struct {
	Task       Task
	Recipe     []byte
	Checkpoint []byte // nil if it never saved one
	// How many times it has been resumed, this one included: after its server
	// stopped and after its worker died, one count.
	Resumes int
}

// ResumeLimitError is why a task is not resumed again: it has been resumed
// Options.MaxResumes times already, after its server or its worker stopped.
type ResumeLimitError struct {
	Resumes int // resumes counted before this stop
	Max     int // Options.MaxResumes
}

func (e *ResumeLimitError) Error() string {
	// Short enough that a statusMessage cut to 200 characters keeps it whole.
	return fmt.Sprintf("it was resumed %d times already, as many as max_resumes (%d) allows (server and worker stops count alike)", e.Resumes, e.Max)
}

// ErrNoJournal is the error of a log or checkpoint on a Store that is not a Journal.
var ErrNoJournal = errors.New("this server's task store keeps no task logs or checkpoints (the bolt store); use the sqlite, PostgreSQL or memory store")

// ErrLogLine is the error of a log append that is not UTF-8 text in lines.
var ErrLogLine = errors.New("a task log takes UTF-8 text without NUL bytes")

// DefaultMaxLogBytes is a task log's bound when Options.MaxLogBytes is 0, and
// DefaultMaxCheckpointBytes a checkpoint's.
const (
	DefaultMaxLogBytes        = 256 << 10
	DefaultMaxCheckpointBytes = 1 << 20
)

// DefaultMaxResumes is how often a task is resumed when Options.MaxResumes is 0.
const DefaultMaxResumes = 3

// LogLines turns text into whole log lines: a final line without '\n' gets one.
// Text that is not UTF-8, or holds a NUL byte, is ErrLogLine.
func LogLines(text []byte) ([]byte, error) {
	if !utf8.Valid(text) || bytes.IndexByte(text, 0) >= 0 {
		return nil, ErrLogLine
	}
	if len(text) > 0 && text[len(text)-1] != '\n' {
		text = append(text[:len(text):len(text)], '\n')
	}
	return text, nil
}

// TrimLog drops whole lines from the start of log while it is longer than max, and
// returns what is kept and how many bytes were dropped. A last line longer than max
// on its own is cut to its last max bytes at a rune boundary.
func TrimLog(log []byte, max int) ([]byte, int64) {
	if len(log) <= max {
		return log, 0
	}
	cut := len(log) - max
	if i := bytes.IndexByte(log[cut:], '\n'); i >= 0 && cut+i+1 < len(log) {
		cut += i + 1
	} else if cut > 0 && log[cut-1] != '\n' {
		for cut < len(log) && !utf8.RuneStart(log[cut]) {
			cut++
		}
	}
	return log[cut:], int64(cut)
}

// PageOf returns up to limit bytes of log (which starts after dropped bytes) from
// offset, ending at a line's end when the limit cuts it (unless one line is longer).
func PageOf(log []byte, dropped, offset int64, limit int) LogPage {
	st := LogState{Dropped: dropped, Kept: len(log)}
	offset = min(max(offset, dropped), st.End())
	text := log[offset-dropped:]
	if len(text) > limit {
		end := limit
		if i := bytes.LastIndexByte(text[:limit], '\n'); i >= 0 {
			end = i + 1
		}
		for end > 0 && end < len(text) && !utf8.RuneStart(text[end]) {
			end--
		}
		text = text[:end]
	}
	return LogPage{LogState: st, Offset: offset, Text: bytes.Clone(text)}
}

// journalEntry is a MemoryStore's journal of one task.
type journalEntry struct {
	log        []byte
	dropped    int64
	checkpoint []byte
	recipe     []byte
	orphan     bool
	resumes    int
}

func (e *journalEntry) size() int64 {
	return int64(len(e.log) + len(e.checkpoint) + len(e.recipe))
}

var _ Journal = (*MemoryStore)(nil)

// entry returns task id's journal, creating it; the task must exist.
func (s *MemoryStore) entry(id string) (*journalEntry, error) {
	if _, ok := s.tasks[id]; !ok {
		return nil, ErrNotFound
	}
	e := s.journal[id]
	if e == nil {
		e = &journalEntry{}
		s.journal[id] = e
	}
	return e, nil
}

func (s *MemoryStore) AppendLog(_ context.Context, id string, text []byte, max int) (LogState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.entry(id)
	if err != nil {
		return LogState{}, err
	}
	before := e.size()
	log, dropped := TrimLog(append(e.log, text...), max)
	e.log, e.dropped = bytes.Clone(log), e.dropped+dropped
	s.bytes += e.size() - before
	return LogState{Dropped: e.dropped, Kept: len(e.log)}, nil
}

func (s *MemoryStore) ReadLog(_ context.Context, id string, offset int64, limit int) (LogPage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.tasks[id]; !ok {
		return LogPage{}, ErrNotFound
	}
	e := s.journal[id]
	if e == nil {
		return LogPage{}, nil
	}
	return PageOf(e.log, e.dropped, offset, limit), nil
}

func (s *MemoryStore) SaveCheckpoint(_ context.Context, id string, data []byte) error {
	return s.change(id, func(e *journalEntry) { e.checkpoint = bytes.Clone(data) })
}

func (s *MemoryStore) Checkpoint(_ context.Context, id string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.tasks[id]; !ok {
		return nil, ErrNotFound
	}
	if e := s.journal[id]; e != nil {
		return bytes.Clone(e.checkpoint), nil
	}
	return nil, nil
}

func (s *MemoryStore) SetRecipe(_ context.Context, id string, recipe []byte) error {
	return s.change(id, func(e *journalEntry) { e.recipe = bytes.Clone(recipe) })
}

// change applies f to task id's journal, keeping the store's bytes.
func (s *MemoryStore) change(id string, f func(e *journalEntry)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.entry(id)
	if err != nil {
		return err
	}
	before := e.size()
	f(e)
	s.bytes += e.size() - before
	return nil
}

// Orphan and Adopt serve a MemoryStore for completeness: nothing in memory outlives
// the process that would resume it, so only tests orphan its tasks.
func (s *MemoryStore) Orphan(_ context.Context, id string, msg string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[id]
	if !ok {
		return false, ErrNotFound
	}
	e := s.journal[id]
	if e == nil || e.recipe == nil || t.Status.Terminal() {
		return false, nil
	}
	e.orphan = true
	t.StatusMessage, t.Runner = msg, ""
	s.tasks[id] = t
	return true, nil
}

func (s *MemoryStore) Adopt(_ context.Context, runner string, limit int) ([]Adopted, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Adopted
	for id, e := range s.journal {
		if len(out) == limit {
			break
		}
		t := s.tasks[id]
		if !e.orphan || t.Status.Terminal() {
			continue
		}
		e.orphan = false
		e.resumes++
		t.Runner = runner
		s.tasks[id] = t
		out = append(out, Adopted{Task: t, Recipe: bytes.Clone(e.recipe), Checkpoint: bytes.Clone(e.checkpoint), Resumes: e.resumes})
	}
	return out, nil
}

func (s *MemoryStore) Restart(_ context.Context, id string, f func(t *Task, resumes int) error) (Adopted, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.entry(id)
	if err != nil {
		return Adopted{}, err
	}
	t := s.tasks[id]
	if err := f(&t, e.resumes); err != nil {
		return Adopted{}, err
	}
	e.resumes++
	s.bytes += Size(t) - Size(s.tasks[id])
	s.tasks[id] = t
	return Adopted{Task: t, Recipe: bytes.Clone(e.recipe), Checkpoint: bytes.Clone(e.checkpoint), Resumes: e.resumes}, nil
}

// checkBound is the error of a checkpoint over its bound.
func checkBound(what string, n, max int) error {
	if n > max {
		return fmt.Errorf("a %s of %d bytes is larger than the %d bytes a task may keep", what, n, max)
	}
	return nil
}

// AppendLog appends text to the running task's log (a last line without '\n' gets
// one); past Options.MaxLogBytes its oldest lines are dropped. Text that is not UTF-8,
// or holds a NUL byte, is ErrLogLine.
func (h *Handle) AppendLog(ctx context.Context, text []byte) (LogState, error) {
	m := h.m
	if m.journal == nil {
		return LogState{}, ErrNoJournal
	}
	lines, err := LogLines(text)
	if err != nil || len(lines) == 0 {
		return LogState{}, err
	}
	if err := m.waitStored(h.id); err != nil {
		return LogState{}, err
	}
	mu := &m.taskMu[stripe(h.id)]
	mu.Lock()
	defer mu.Unlock()
	st, err := m.journal.AppendLog(ctx, h.id, lines, m.opts.MaxLogBytes)
	if err != nil {
		return LogState{}, fmt.Errorf("append to task log: %w", err)
	}
	if m.opts.OnLog != nil {
		m.opts.OnLog(h.id, st)
	}
	return st, nil
}

// SaveCheckpoint replaces the running task's checkpoint with data, in one commit: a
// resumed task starts from the last checkpoint saved. One over
// Options.MaxCheckpointBytes is refused.
func (h *Handle) SaveCheckpoint(ctx context.Context, data []byte) error {
	m := h.m
	if m.journal == nil {
		return ErrNoJournal
	}
	if err := checkBound("checkpoint", len(data), m.opts.MaxCheckpointBytes); err != nil {
		return err
	}
	if err := m.waitStored(h.id); err != nil {
		return err
	}
	if err := m.journal.SaveCheckpoint(ctx, h.id, data); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	return nil
}

// SetRecipe records how the running task's work starts again after its server
// stopped (Options.Resume reads it): from then on the task is resumed, not failed.
func (h *Handle) SetRecipe(ctx context.Context, recipe []byte) error {
	m := h.m
	if m.journal == nil {
		return ErrNoJournal
	}
	if err := m.waitStored(h.id); err != nil {
		return err
	}
	if err := m.journal.SetRecipe(ctx, h.id, recipe); err != nil {
		return fmt.Errorf("record how to resume the task: %w", err)
	}
	m.mu.Lock()
	if l := m.live[h.id]; l != nil {
		l.resumable = recipe != nil
	}
	m.mu.Unlock()
	return nil
}

// Resumed returns what a resumed task's work starts from: the checkpoint it last
// saved (nil if none) and how many times it has been resumed (0: it was never).
func (h *Handle) Resumed() (checkpoint []byte, resumes int) {
	return h.checkpoint, h.resumes
}

// Restart counts one more resume of the running task, whose work is started again
// in this process from its last checkpoint after that work's worker process died,
// and returns the checkpoint to start from and the resumes counted, this one
// included. The count is the task's stored one, which adoption after a server stop
// adds to as well, so Options.MaxResumes bounds both kinds together; it is counted
// in the store write that sets the statusMessage saying so. Past the bound it
// returns a *ResumeLimitError and changes nothing.
func (h *Handle) Restart(ctx context.Context) (checkpoint []byte, resumes int, err error) {
	m := h.m
	if m.journal == nil {
		return nil, h.resumes, ErrNoJournal
	}
	if err := m.waitStored(h.id); err != nil {
		return nil, h.resumes, err
	}
	var limit *ResumeLimitError
	mu := &m.taskMu[stripe(h.id)]
	mu.Lock()
	r, err := m.journal.Restart(ctx, h.id, func(t *Task, n int) error {
		switch {
		case t.Status.Terminal():
			return ErrTerminal
		case n >= m.opts.MaxResumes:
			limit = &ResumeLimitError{Resumes: n, Max: m.opts.MaxResumes}
			return limit
		}
		if t.Status == Working {
			t.StatusMessage = fmt.Sprintf("started again from its last checkpoint after its worker process stopped (resume %d of at most %d)",
				n+1, m.opts.MaxResumes)
		}
		t.LastUpdatedAt = time.Now().UTC()
		return nil
	})
	if err == nil && m.opts.OnChange != nil {
		m.opts.OnChange(r.Task) // under the task's lock, as update
	}
	mu.Unlock()
	switch {
	case limit != nil:
		return nil, limit.Resumes, limit
	case err != nil:
		return nil, h.resumes, fmt.Errorf("count the task's restart: %w", err)
	}
	m.changed(r.Task)
	h.resumes, h.checkpoint = r.Resumes, r.Checkpoint
	return r.Checkpoint, r.Resumes, nil
}

// ReadLog returns up to limit bytes of owner's task id's log from offset, and the
// task. Another owner's task is ErrNotFound, as Get.
func (m *Manager) ReadLog(ctx context.Context, owner, id string, offset int64, limit int) (LogPage, Task, error) {
	t, err := m.Get(ctx, owner, id)
	if err != nil {
		return LogPage{}, Task{}, err
	}
	if m.journal == nil {
		return LogPage{}, t, ErrNoJournal
	}
	p, err := m.journal.ReadLog(ctx, id, offset, limit)
	if err != nil {
		return LogPage{}, Task{}, fmt.Errorf("read task log: %w", err)
	}
	return p, t, nil
}
