package tasks

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Status is a task's state.
type Status string

// The states of a task. Completed, failed and cancelled are terminal: a task never
// leaves them.
const (
	Working       Status = "working"
	InputRequired Status = "input_required"
	Completed     Status = "completed"
	Failed        Status = "failed"
	Cancelled     Status = "cancelled"
)

// Terminal reports whether s is final.
func (s Status) Terminal() bool {
	return s == Completed || s == Failed || s == Cancelled
}

// CanMove reports whether a task may go from s to next.
func (s Status) CanMove(next Status) bool {
	switch s {
	case Working:
		return next == InputRequired || next.Terminal()
	case InputRequired:
		return next == Working || next.Terminal()
	}
	return false
}

// Error is a JSON-RPC error stored as a task's outcome: tasks/result answers with it.
type Error struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("%s (code %d)", e.Message, e.Code) }

// Task is a snapshot of one task. It is a plain value: the Manager owns the live state.
type Task struct {
	ID            string
	Owner         string // who may see and touch it: a session, an identity, or "local"
	Status        Status
	StatusMessage string
	CreatedAt     time.Time
	LastUpdatedAt time.Time
	FinishedAt    time.Time     // zero until terminal
	TTL           time.Duration // from CreatedAt; the task is kept at least this long
	PollInterval  time.Duration
	Result        json.RawMessage // the request's result, when completed or failed by a result
	Error         *Error          // the request's JSON-RPC error, when failed by one
	// Runner is the server instance running the task's work, on a Shared store
	// ("" on any other store, and once the task is terminal it no longer matters).
	Runner string
}

// Errors of the Manager and the Store.
var (
	ErrNotFound  = errors.New("task not found")
	ErrTerminal  = errors.New("task is already in a terminal status")
	ErrTooMany   = errors.New("too many unfinished tasks")
	ErrBadCursor = errors.New("invalid cursor")
	ErrClosed    = errors.New("task manager is closed")
	ErrStoreFull = errors.New("the task store is full")
)
