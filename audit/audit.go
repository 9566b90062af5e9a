package audit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Defaults of Options.
const (
	DefaultMaxMiB       = 100
	DefaultKeep         = 5
	DefaultSyncInterval = time.Second
	DefaultQueue        = 4096
)

// Methods of the lines that are not MCP requests.
const (
	MethodTaskStatus = "task/status"   // a task's status changed
	MethodTaskRun    = "task/run"      // a task's run ended: its tool, outcome, duration and host calls
	MethodDropped    = "audit/dropped" // Dropped lines were not written (the queue was full)
	// MethodRefused is a request refused before it was read (authn: no token or
	// an invalid one, a required scope missing, the identity's rate limit): its
	// Reason and HTTPStatus, the Identity when the token was valid, and the
	// client's address as Source. Written by Log.Refused.
	MethodRefused = "auth/refused"
)

// MaxRefusedPerSecond bounds the MethodRefused lines a Log writes, in a burst and
// per second. Anyone who can reach the port can send requests without a valid
// token as fast as the server refuses them; a line for each would push every other
// line out of the kept files (keep x max_mib) within minutes. Past the bound
// refusals are counted, not written: the next refusal line written carries the
// count as Dropped (and metrics count them all).
const MaxRefusedPerSecond = 100

// Outcomes of a request.
const (
	OutcomeOK            = "ok"             // a result
	OutcomeIsError       = "isError"        // a tool result with isError: the tool failed
	OutcomeError         = "error"          // a JSON-RPC error (ErrorCode says which)
	OutcomeInputRequired = "input_required" // a round that ended asking for input (2026-07-28)
	OutcomeTask          = "task"           // the call became task TaskID
)

// Record is one line of the audit trail. Empty fields are left out.
type Record struct {
	Time time.Time `json:"time"` // when the request arrived, or the task changed (UTC)
	// Identity is the authenticated caller: "oauth:" issuer "#" sub, "key:" name;
	// "local" on stdio; "" for an unauthenticated HTTP client.
	Identity  string `json:"identity,omitempty"`
	Session   string `json:"session,omitempty"`   // the Mcp-Session-Id, on stateful HTTP
	Requester string `json:"requester,omitempty"` // who owns its tasks (host's owner)
	// Source is an anonymous requester's network source; on MethodRefused, the
	// client's IP address.
	Source   string `json:"source,omitempty"`
	Method   string `json:"method"`           // tools/call, resources/read, prompts/get, or a Method*
	Reason   string `json:"reason,omitempty"` // on MethodRefused: why (authn's Refuse* reasons)
	Tool     string `json:"tool,omitempty"`
	Resource string `json:"resource,omitempty"` // resources/read: the URI
	Prompt   string `json:"prompt,omitempty"`   // prompts/get: the name
	TaskID   string `json:"taskId,omitempty"`
	Status   string `json:"status,omitempty"` // a task's status
	// ArgsSHA256 is the hex SHA-256 of the arguments' canonical JSON (RFC 8785
	// style, internal/canonjson): equal arguments give equal digests, and
	// nothing of their values can be read back.
	ArgsSHA256 string `json:"argsSha256,omitempty"`
	Outcome    string `json:"outcome,omitempty"`   // Outcome*
	ErrorCode  int64  `json:"errorCode,omitempty"` // with OutcomeError, or a failed task's
	// HTTPStatus is the status of an HTTP answer that was not 200: a request
	// refused before it was read (MethodRefused), or a tools/call answered with
	// a 403 scope challenge.
	HTTPStatus int     `json:"httpStatus,omitempty"`
	DurationMS float64 `json:"durationMs,omitempty"`
	// Inputs counts the guest's requests for input by method
	// (elicitation/create, sampling/createMessage).
	Inputs map[string]int `json:"inputs,omitempty"`
	// Egress are the origins the guest's "http" requests named (a redirect's
	// too), allowed or refused: each once, in order of first use.
	Egress []string `json:"egress,omitempty"`
	// Dropped is, on MethodDropped, how many lines were not written since the
	// previous one (the queue was full); on MethodRefused, how many refusals
	// before this one were not written (over MaxRefusedPerSecond).
	Dropped int64 `json:"dropped,omitempty"`
}

// DecodeLine reads one line of the audit trail strictly: unknown fields, a missing
// time or method, or trailing data are errors.
func DecodeLine(line []byte) (Record, error) {
	var r Record
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Record{}, fmt.Errorf("audit line: %w", err)
	}
	if dec.More() {
		return Record{}, errors.New("audit line: more than one JSON value")
	}
	if r.Time.IsZero() || r.Method == "" {
		return Record{}, errors.New("audit line: time and method are required")
	}
	return r, nil
}

// Options configures a Log (config.Audit, decoded).
type Options struct {
	Path string // the file, appended to; its directory must exist
	// MaxBytes rotates the file when a line would take it past this size. 0
	// means DefaultMaxMiB MiB.
	MaxBytes int64
	// Keep is how many rotated files are kept. 0 means DefaultKeep.
	Keep int
	// SyncInterval is how often written lines are fsynced. 0 means
	// DefaultSyncInterval.
	SyncInterval time.Duration
	// Queue is how many lines may wait for the writer. 0 means DefaultQueue.
	Queue  int
	Logger *slog.Logger // nil discards
}

// Log is an open audit trail. A nil *Log records nothing. Safe for concurrent use.
type Log struct {
	opts    Options
	logger  *slog.Logger
	queue   chan Record
	closing chan struct{}
	done    chan struct{}
	once    sync.Once
	pending atomic.Int64 // dropped since the last dropped line
	dropped atomic.Int64 // dropped in all

	refusals  *rate.Limiter // MethodRefused lines (MaxRefusedPerSecond)
	unwritten atomic.Int64  // refusals not written since the last refusal line

	// The writer goroutine's alone.
	f       *os.File
	w       *bufio.Writer
	size    int64
	dirty   bool // written since the last fsync
	failing bool // the last write failed (logged once until one succeeds)
}

// Open opens (appends to) the audit file and starts its writer.
func Open(opts Options) (*Log, error) {
	switch {
	case opts.Path == "":
		return nil, errors.New("audit: no path")
	case opts.MaxBytes < 0 || opts.Keep < 0 || opts.SyncInterval < 0 || opts.Queue < 0:
		return nil, fmt.Errorf("audit %s: negative max size, keep, sync interval or queue", opts.Path)
	}
	if opts.MaxBytes == 0 {
		opts.MaxBytes = DefaultMaxMiB << 20
	}
	if opts.Keep == 0 {
		opts.Keep = DefaultKeep
	}
	if opts.SyncInterval == 0 {
		opts.SyncInterval = DefaultSyncInterval
	}
	if opts.Queue == 0 {
		opts.Queue = DefaultQueue
	}
	l := &Log{opts: opts, logger: opts.Logger, queue: make(chan Record, opts.Queue),
		closing: make(chan struct{}), done: make(chan struct{}),
		refusals: rate.NewLimiter(MaxRefusedPerSecond, MaxRefusedPerSecond)}
	if l.logger == nil {
		l.logger = slog.New(slog.DiscardHandler)
	}
	if err := l.open(); err != nil {
		return nil, err
	}
	go l.run() // joined in Close
	return l, nil
}

// open opens the file for appending.
func (l *Log) open() error {
	f, err := os.OpenFile(l.opts.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		return fmt.Errorf("audit %s: not a regular file", l.opts.Path)
	}
	l.f, l.size = f, st.Size()
	if l.w == nil {
		l.w = bufio.NewWriterSize(f, 64<<10)
	} else {
		l.w.Reset(f)
	}
	return nil
}

// Record queues r for writing; it never waits. A full queue (or a closed Log)
// drops it and counts it.
func (l *Log) Record(r Record) {
	if l == nil {
		return
	}
	if r.Time.IsZero() {
		r.Time = time.Now()
	}
	r.Time = r.Time.UTC()
	select {
	case <-l.closing:
		l.drop()
		return
	default:
	}
	select {
	case l.queue <- r:
	default:
		l.drop()
	}
}

// Refused records r as a request refused before it was read (its Method becomes
// MethodRefused), unless MaxRefusedPerSecond such lines were written in the last
// second: then it is only counted, and the count goes on the next refusal line
// written, as Dropped. It never waits.
func (l *Log) Refused(r Record) {
	if l == nil {
		return
	}
	if !l.refusals.Allow() {
		l.unwritten.Add(1)
		return
	}
	r.Method = MethodRefused
	r.Dropped = l.unwritten.Swap(0)
	l.Record(r)
}

func (l *Log) drop() {
	l.pending.Add(1)
	l.dropped.Add(1)
}

// Dropped reports how many lines were dropped since Open.
func (l *Log) Dropped() int64 {
	if l == nil {
		return 0
	}
	return l.dropped.Load()
}

// Close writes the lines queued, syncs and closes the file, waiting for the writer
// at most until ctx ends.
func (l *Log) Close(ctx context.Context) error {
	if l == nil {
		return nil
	}
	l.once.Do(func() { close(l.closing) })
	select {
	case <-l.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("audit: close: %w", ctx.Err())
	}
}

// run is the writer: it writes what is queued, in batches, and fsyncs every
// SyncInterval while there is something written.
func (l *Log) run() {
	defer close(l.done)
	tick := time.NewTicker(l.opts.SyncInterval)
	defer tick.Stop()
	for {
		select {
		case r := <-l.queue:
			l.write(r)
			l.drain()
		case <-tick.C:
			l.sync()
		case <-l.closing:
			l.drain()
			l.sync()
			if err := l.f.Close(); err != nil {
				l.logger.Error("audit: close", "path", l.opts.Path, "err", err)
			}
			return
		}
	}
}

// drain writes what is queued now (at most one queue's worth), the dropped line
// if any, and flushes.
func (l *Log) drain() {
queued:
	for range cap(l.queue) { // bounded: the dropped line and the flush come in time
		select {
		case r := <-l.queue:
			l.write(r)
		default:
			break queued
		}
	}
	if n := l.pending.Swap(0); n > 0 {
		l.logger.Warn("audit lines dropped: the writer could not keep up", "dropped", n, "queue", l.opts.Queue)
		l.write(Record{Time: time.Now().UTC(), Method: MethodDropped, Dropped: n})
	}
	l.flush()
}

// write adds one line, rotating first if it would take the file past MaxBytes.
func (l *Log) write(r Record) {
	b, err := json.Marshal(r)
	if err != nil { // unreachable: plain fields
		l.logger.Error("audit: encode", "err", err)
		return
	}
	b = append(b, '\n')
	if l.size > 0 && l.size+int64(len(b)) > l.opts.MaxBytes {
		l.rotate()
	}
	n, err := l.w.Write(b)
	l.size += int64(n)
	l.dirty = true
	l.failed(err)
}

func (l *Log) flush() { l.failed(l.w.Flush()) }

func (l *Log) sync() {
	if !l.dirty {
		return
	}
	l.flush()
	l.failed(l.f.Sync())
	l.dirty = false
}

// failed logs err (once until a write succeeds again).
func (l *Log) failed(err error) {
	switch {
	case err == nil:
		l.failing = false
	case !l.failing:
		l.failing = true
		l.logger.Error("audit: write failed; lines may be lost", "path", l.opts.Path, "err", err)
	}
}

// rotate moves path to path.1 (path.1 to path.2, ..., dropping path.Keep's old
// content) and starts a new file.
func (l *Log) rotate() {
	l.sync()
	if err := l.f.Close(); err != nil {
		l.logger.Error("audit: close before rotation", "path", l.opts.Path, "err", err)
	}
	p := l.opts.Path
	for i := l.opts.Keep - 1; i >= 1; i-- {
		if err := os.Rename(p+"."+strconv.Itoa(i), p+"."+strconv.Itoa(i+1)); err != nil && !errors.Is(err, os.ErrNotExist) {
			l.logger.Error("audit: rotate", "path", p, "err", err)
		}
	}
	if err := os.Rename(p, p+".1"); err != nil {
		l.logger.Error("audit: rotate", "path", p, "err", err)
	}
	if err := l.open(); err != nil {
		// Keep writing to a closed file: every write fails and is logged once.
		l.logger.Error("audit: reopen after rotation", "path", p, "err", err)
		l.f, _ = os.Open(os.DevNull)
		l.w.Reset(l.f)
	}
	_ = syncDir(filepath.Dir(p))
}

// syncDir makes the renames in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
