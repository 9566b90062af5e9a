package tasks

import (
	"context"
	"encoding/json"
	"time"
)

// Shared is a Store that several server processes use at once (sqlstore): each
// process is an instance of it, any instance answers for every task it can see, and
// the instance running a task's work gets the cancels and input answers the others
// receive as Signals. A Manager on a Store that is not Shared keeps all of this in
// its own memory, as it always did: the optional interface is the whole extension
// of the contract, so MemoryStore and boltstore need nothing new.
type Shared interface {
	Store
	// Instance is this process's ID in the store; the tasks it starts record it as
	// their Runner.
	Instance() string
	// Update applies f to task id and stores the result in one transaction that
	// no other process interleaves with: the read-modify-write of a task's status
	// by two instances (one finishing it, one cancelling it) cannot lose either.
	Update(ctx context.Context, id string, f func(*Task) error) (Task, error)
	// SetInputs records the pending input requests of a task this instance runs,
	// replacing those recorded before, so that other instances can show them.
	SetInputs(ctx context.Context, id string, inputs []PendingInput) error
	// Inputs returns the pending input requests recorded for task id.
	Inputs(ctx context.Context, id string) ([]PendingInput, error)
	// Send delivers s to the instance running s.Task. An answer also removes its
	// pending input, in the same transaction: it reports false, sending nothing,
	// when that input is no longer pending (the first answer wins everywhere).
	Send(ctx context.Context, s Signal) (bool, error)
	// Receive returns, and removes, the signals sent to this instance.
	Receive(ctx context.Context) ([]Signal, error)
}

// Waker is a Shared store that can tell its instance at once that signals were sent
// to it (PostgreSQL's NOTIFY, sent in the transaction that records the signal). A
// Manager on a Waker receives signals when woken, and polls only every WakePoll as a
// fallback (a lost wake-up, a reconnection); on a Shared store that is not a Waker,
// or whose Wake is nil, it polls every SignalPoll.
type Waker interface {
	Shared
	// Wake returns a channel that gets a value (it may coalesce several) after
	// signals were sent to this instance, or nil if the store cannot wake.
	Wake() <-chan struct{}
}

// WakePoll is how often a Manager on a Waker polls for signals anyway.
const WakePoll = time.Second

// PendingInput is an input request as a Shared store keeps it.
type PendingInput struct {
	Key    string
	Method string
	Params json.RawMessage
}

// SignalKind is what a Signal asks of the instance running a task.
type SignalKind string

// The kinds of Signal.
const (
	SignalCancel SignalKind = "cancel" // the task was cancelled: stop its work
	SignalAnswer SignalKind = "answer" // input Key was answered: Result, or Err
)

// Signal is a message from one instance to the one running a task.
type Signal struct {
	Runner string // the instance it is for
	Task   string
	Kind   SignalKind
	Key    string          // SignalAnswer: the input request answered
	Result json.RawMessage // SignalAnswer: the answer
	Err    string          // SignalAnswer: the error answered instead ("" none)
}
