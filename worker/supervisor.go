package worker

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// DefaultKillGrace is how long a worker may take to stop a call after its deadline or
// its cancellation before the supervisor kills the worker. wazero stops a looping guest
// in well under a millisecond; only a guest that cannot be interrupted takes longer.
const DefaultKillGrace = 50 * time.Millisecond

// startTimeout bounds starting a worker and loading its plugin (compilation included).
const startTimeout = 2 * time.Minute

// Options configures a [Supervisor]. The zero value is valid.
type Options struct {
	// Command is the worker's executable, run with the single argument [Arg]. "" means
	// this process's own executable, whose main must call [Main] (see [IsWorker]).
	Command string
	// CacheDir is the compilation cache the workers share; "" compiles in memory.
	CacheDir string
	// GCPercent is the workers' garbage-collector target; 0 leaves Go's default.
	GCPercent int
	// Logger receives the workers' logs (guest stdout and stderr among them); nil
	// discards them.
	Logger *slog.Logger
	// NoSeccomp turns the seccomp filter off (for diagnosing a kernel that refuses it).
	NoSeccomp bool
	// KillGrace overrides DefaultKillGrace; 0 means the default.
	KillGrace time.Duration
}

// Supervisor starts and watches worker processes, one per plugin. It is safe for
// concurrent use.
type Supervisor struct {
	opts    Options
	command string
	logger  *slog.Logger
}

// NewSupervisor checks the options. It starts nothing: workers start with their plugin.
func NewSupervisor(opts Options) (*Supervisor, error) {
	cmd := opts.Command
	if cmd == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find this program to start workers from: %w", err)
		}
		cmd = exe
	}
	if opts.CacheDir != "" {
		dir, err := filepath.Abs(opts.CacheDir)
		if err != nil {
			return nil, err
		}
		opts.CacheDir = dir
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if opts.KillGrace <= 0 {
		opts.KillGrace = DefaultKillGrace
	}
	return &Supervisor{opts: opts, command: cmd, logger: logger}, nil
}

// Spec is a plugin to run in a worker.
type Spec struct {
	Name   string
	Wasm   []byte // verified by the caller; the worker never reads the file itself
	Limits sandbox.Limits
	Grants sandbox.Grants
}

// Module is a plugin running in worker processes: it has the methods of
// [sandbox.Module] and runs every call in a fresh instance inside the current worker,
// starting a new worker when the last one was stopped.
type Module struct {
	sup    *Supervisor
	name   string
	limits sandbox.Limits
	init   []byte // the init frame's payload, kept to restart the worker
	logger *slog.Logger

	mu     sync.Mutex
	cur    *process // nil before the first start and after a stop
	closed bool

	instances atomic.Int64
	live      atomic.Int64
	starts    atomic.Int64
}

// Load starts a worker for the plugin and waits until it has compiled the module and
// checked its ABI version. Errors say what the worker reported.
func (s *Supervisor) Load(ctx context.Context, spec Spec) (*Module, error) {
	return s.load(ctx, spec, DefaultConcurrency)
}

// load starts a worker sized for concurrency calls at once.
func (s *Supervisor) load(ctx context.Context, spec Spec, concurrency int) (*Module, error) {
	limits := spec.Limits.WithDefaults()
	mem := planMemory(limits, concurrency)
	doc, err := json.Marshal(initDoc{
		Name: spec.Name, Limits: limits, Env: spec.Grants.Env, Dirs: spec.Grants.Dirs,
		CacheDir: s.opts.CacheDir, GCPercent: s.opts.GCPercent, HeapLimitMiB: mem.HeapMiB,
		Harden: hardening{
			OpenFiles:       256,
			AddressSpaceMiB: mem.AddressSpaceMiB,
			Seccomp:         !s.opts.NoSeccomp,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("plugin %q: encode worker init: %w", spec.Name, err)
	}
	init := binary.BigEndian.AppendUint32(nil, uint32(len(doc)))
	init = append(append(init, doc...), spec.Wasm...)
	m := &Module{sup: s, name: spec.Name, limits: limits, init: init, logger: s.logger.With("plugin", spec.Name)}
	if _, err := m.process(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

// Limits returns the plugin's limits with defaults filled in.
func (m *Module) Limits() sandbox.Limits { return m.limits }

// Instances returns how many calls (each a fresh instance) have been started.
func (m *Module) Instances() int64 { return m.instances.Load() }

// Live returns how many instances may exist now: calls started whose worker has not
// yet reported them closed, or exited.
func (m *Module) Live() int64 { return m.live.Load() }

// Starts returns how many worker processes have been started for the plugin.
func (m *Module) Starts() int64 { return m.starts.Load() }

// PID returns the current worker's process ID, or 0 when none runs.
func (m *Module) PID() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cur == nil {
		return 0
	}
	return m.cur.cmd.Process.Pid
}

// Close stops the worker: it closes its input, so that the worker cancels its calls and
// exits, and kills it if it has not exited within a second.
func (m *Module) Close(ctx context.Context) error {
	m.mu.Lock()
	p := m.cur
	m.cur, m.closed = nil, true
	m.mu.Unlock()
	if p == nil {
		return nil
	}
	p.stop("the plugin was unloaded", time.Second)
	return nil
}

// Describe runs the guest's mcpwh_describe in a fresh instance and returns its manifest.
func (m *Module) Describe(ctx context.Context) ([]byte, error) {
	return m.run(ctx, entryDescribe, nil, nil)
}

// Call runs the guest's mcpwh_call in a fresh instance inside the worker, exactly as
// [sandbox.Module.Call] does in process. A guest failure is a [*sandbox.GuestError].
func (m *Module) Call(ctx context.Context, input []byte, h sandbox.Host) ([]byte, error) {
	if len(input) > m.limits.MaxInputBytes {
		return nil, fmt.Errorf("input of %d bytes exceeds plugin %q's limit of %d", len(input), m.name, m.limits.MaxInputBytes)
	}
	return m.run(ctx, entryCall, input, h)
}

// process returns the running worker, starting one if there is none.
func (m *Module) process(ctx context.Context) (*process, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, fmt.Errorf("plugin %q is unloaded", m.name)
	}
	if m.cur != nil {
		select {
		case <-m.cur.dead:
		default:
			return m.cur, nil
		}
	}
	p, err := m.start(ctx)
	if err != nil {
		return nil, err
	}
	m.cur = p
	return p, nil
}

func (m *Module) run(ctx context.Context, entry byte, input []byte, h sandbox.Host) ([]byte, error) {
	p, err := m.process(ctx)
	if err != nil {
		return nil, err
	}
	m.instances.Add(1)
	m.live.Add(1)
	defer m.live.Add(-1)
	c := p.register()
	defer p.unregister(c.id)
	// The worker enforces the time limit itself; this deadline is the backstop.
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, m.limits.Timeout)
	defer cancel()
	if err := p.w.send(frameCall, c.id, []byte{entry}, input); err != nil {
		p.kill("its input could not be written: " + err.Error())
		<-p.dead
		return nil, m.lost(p)
	}
	done := ctx.Done()
	var grace <-chan time.Time
	for {
		select {
		case <-c.wake:
			for _, f := range p.take(c) {
				if out, err, finished := m.handle(ctx, p, c, f, h); finished {
					return out, err
				}
			}
		case <-done:
			done = nil
			if parent.Err() != nil {
				_ = p.w.send(frameCancel, c.id)
			} // else the worker's own deadline, set when the call arrived, is due now
			grace = time.After(m.sup.opts.KillGrace)
		case <-grace:
			return nil, m.stuck(ctx, parent, p)
		case <-p.dead:
			// Results the worker wrote before it died are still delivered.
			for _, f := range p.take(c) {
				if out, err, finished := m.handle(ctx, p, c, f, nil); finished {
					return out, err
				}
			}
			return nil, m.lost(p)
		}
	}
}

// handle acts on one frame of call c. It reports finished with the call's outcome.
func (m *Module) handle(ctx context.Context, p *process, c *call, f frame, h sandbox.Host) (out []byte, err error, finished bool) {
	switch f.typ {
	case frameResult:
		return m.result(f.payload)
	case frameLog:
		if h != nil {
			h.Log(ctx, sandbox.Level(f.payload[0]), string(f.payload[1:]))
		} else {
			m.logger.LogAttrs(ctx, slog.LevelInfo, "guest log", slog.String("level", sandbox.Level(f.payload[0]).String()), slog.String("text", string(f.payload[1:])))
		}
	case frameProgress:
		if h != nil {
			h.Progress(ctx, f64(f.payload), f64(f.payload[8:]), string(f.payload[16:]))
		}
	case frameRequest:
		n := int(f.payload[0])
		method, params := string(f.payload[1:1+n]), f.payload[1+n:]
		status, body := replyUnavailable, []byte(nil)
		if h != nil {
			// A worker that dies while the person is still answering ends the wait.
			rctx, cancel := context.WithCancel(ctx)
			go func() {
				select {
				case <-p.dead:
					cancel()
				case <-rctx.Done():
				}
			}()
			reply, rerr := h.Request(rctx, method, params)
			cancel()
			status, body = replyStatus(reply, rerr)
		}
		_ = p.w.send(frameReply, c.id, []byte{status}, body)
	}
	return nil, nil, false
}

func replyStatus(reply []byte, err error) (byte, []byte) {
	switch {
	case err == nil:
		return replyOK, reply
	case errors.Is(err, sandbox.ErrUnsupported):
		return replyUnsupported, nil
	case errors.Is(err, sandbox.ErrUnavailable):
		return replyUnavailable, nil
	}
	return replyFailed, []byte(err.Error())
}

func (m *Module) result(payload []byte) ([]byte, error, bool) {
	outcome, body := payload[0], payload[1:]
	switch {
	case outcome == outcomeOK:
		return body, nil, true
	case outcome == outcomeError:
		return nil, fmt.Errorf("plugin %q: %s", m.name, body), true
	}
	return nil, &sandbox.GuestError{Kind: sandbox.ErrorKind(outcome), Message: string(body)}, true
}

// stuck kills a worker whose call did not stop in time and reports the call's end.
func (m *Module) stuck(ctx, parent context.Context, p *process) error {
	kind, reason, why := sandbox.KindTimeout, "it exceeded its time limit of "+m.limits.Timeout.String(), "it did not stop at its time limit"
	if err := parent.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		kind, reason, why = sandbox.KindCanceled, "the call was cancelled", "it did not stop within "+m.sup.opts.KillGrace.String()+" of being cancelled"
	}
	p.kill("a call in it did not stop: " + why)
	<-p.dead // the process is gone, and the instance with it
	return &sandbox.GuestError{Kind: kind, Message: fmt.Sprintf(
		"plugin %q was stopped: %s (its worker process was killed because %s)", m.name, reason, why)}
}

// lost reports a call whose worker stopped under it.
func (m *Module) lost(p *process) error {
	if line, ok := p.ranOutOfMemory(); ok {
		return m.lostToMemory(line)
	}
	return &sandbox.GuestError{Kind: sandbox.KindAborted, Message: fmt.Sprintf(
		"plugin %q: the worker process running this call stopped (%s); the call did not finish and may be retried",
		m.name, p.reason())}
}

// start launches a worker, sends it the plugin and waits for it to be ready.
func (m *Module) start(ctx context.Context) (*process, error) {
	cmd := exec.Command(m.sup.command, Arg)
	cmd.Env = []string{} // nothing from the server's environment
	cmd.Dir = "/"
	cmd.SysProcAttr = sysProcAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("plugin %q: start worker %s: %w", m.name, m.sup.command, err)
	}
	m.starts.Add(1)
	p := &process{cmd: cmd, stdin: stdin, w: &writer{w: stdin}, dead: make(chan struct{}),
		calls: map[uint64]*call{}, logger: m.logger.With("worker", cmd.Process.Pid)}
	ready := make(chan string, 1)
	var wg sync.WaitGroup
	wg.Go(func() { p.forwardLogs(stderr) })
	wg.Go(func() { p.read(bufio.NewReaderSize(stdout, 64<<10), ready) })
	go func() {
		wg.Wait() // both pipes are drained before Wait closes them
		err := cmd.Wait()
		p.exited(err)
	}()
	if err := p.w.send(frameInit, 0, m.init); err != nil {
		p.kill("its init frame could not be written")
	}
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case msg := <-ready:
		if msg == "" {
			m.logger.Debug("worker started", "pid", cmd.Process.Pid)
			return p, nil
		}
		p.stop("it could not load the plugin", time.Second)
		return nil, errors.New(msg) // the worker's message names the plugin
	case <-p.dead:
		return nil, fmt.Errorf("plugin %q: the worker process stopped while starting (%s)", m.name, p.reason())
	case <-timer.C:
		p.kill("it did not start within " + startTimeout.String())
	case <-ctx.Done():
		p.kill("loading was cancelled")
	}
	<-p.dead
	return nil, fmt.Errorf("plugin %q: worker not started: %s", m.name, p.reason())
}

// process is one worker process and the calls running in it.
type process struct {
	cmd    *exec.Cmd
	stdin  io.Closer
	w      *writer
	logger *slog.Logger
	dead   chan struct{} // closed once the process has exited and been reaped

	mu     sync.Mutex
	calls  map[uint64]*call
	nextID uint64
	why    string // why the process stopped, first reason wins
	crash  crashOutput
}

// call is the supervisor's side of one call: frames queue here for its goroutine.
type call struct {
	id     uint64
	wake   chan struct{} // signalled when frames are queued
	frames []frame
	count  int // frames received, against the ABI's per-call limits
}

func (p *process) register() *call {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nextID++
	c := &call{id: p.nextID, wake: make(chan struct{}, 1)}
	p.calls[c.id] = c
	return c
}

func (p *process) unregister(id uint64) {
	p.mu.Lock()
	delete(p.calls, id)
	p.mu.Unlock()
}

// take removes and returns the frames queued for c.
func (p *process) take(c *call) []frame {
	p.mu.Lock()
	defer p.mu.Unlock()
	fs := c.frames
	c.frames = nil
	return fs
}

// maxCallFrames is more than the ABI lets one call send (1,000 logs, 10,000 progress
// reports, 100 requests and one result): a worker that sends more is misbehaving.
const maxCallFrames = 1000 + 10000 + 100 + 1

// read dispatches the worker's frames until its output ends, checking each one: a
// malformed frame means the worker is not behaving as this program's worker does, and
// it is killed.
func (p *process) read(r *bufio.Reader, ready chan<- string) {
	var hdr [headerLen]byte
	started := false
	for {
		f, err := readFrame(r, &hdr)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				p.kill("its output was malformed: " + err.Error())
			}
			return
		}
		if !started {
			if f.typ != frameReady || f.id != 0 || !utf8.Valid(f.payload) {
				p.kill(fmt.Sprintf("it sent %s before ready", f.typ))
				return
			}
			started = true
			ready <- string(f.payload)
			continue
		}
		if err := validate(f); err != nil {
			p.kill("it broke the worker protocol: " + err.Error())
			return
		}
		if !p.deliver(f) {
			p.kill(fmt.Sprintf("it sent more than %d frames for one call", maxCallFrames))
			return
		}
	}
}

// validate checks a frame from a worker before any of it is used.
func validate(f frame) error {
	n := len(f.payload)
	switch f.typ {
	case frameResult:
		if n < 1 {
			return errors.New("empty result")
		}
		if k := f.payload[0]; k != outcomeOK && k != outcomeError && !sandbox.ErrorKind(k).Valid() {
			return fmt.Errorf("unknown outcome %d", k)
		}
		if f.payload[0] != outcomeOK && !utf8.Valid(f.payload[1:]) {
			return errors.New("error message is not UTF-8")
		}
	case frameLog:
		if n < 1 || f.payload[0] > byte(sandbox.LevelError) || n-1 > 8<<10+64 || !utf8.Valid(f.payload[1:]) {
			return errors.New("malformed log")
		}
	case frameProgress:
		if n < 16 || n-16 > 1<<10 || !utf8.Valid(f.payload[16:]) {
			return errors.New("malformed progress")
		}
	case frameRequest:
		if n < 1 || n < 1+int(f.payload[0]) || f.payload[0] > 64 || n-1-int(f.payload[0]) > 64<<10 ||
			!utf8.Valid(f.payload[1:1+int(f.payload[0])]) {
			return errors.New("malformed request")
		}
	default:
		return fmt.Errorf("unexpected %s frame", f.typ)
	}
	return nil
}

// deliver queues a frame for its call. A frame for a call that has ended is dropped.
// It reports false when the call has received more frames than the ABI allows.
func (p *process) deliver(f frame) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.calls[f.id]
	if !ok {
		return true
	}
	c.count++
	if c.count > maxCallFrames {
		return false
	}
	c.frames = append(c.frames, f)
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return true
}

// forwardLogs copies the worker's log lines (JSON, one per line) into the server's log.
func (p *process) forwardLogs(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 256<<10)
	for sc.Scan() {
		line := sc.Bytes()
		var rec map[string]any
		if json.Unmarshal(line, &rec) != nil {
			p.workerOutput(strings.ToValidUTF8(string(line), "\uFFFD"))
			continue
		}
		var level slog.Level
		if s, ok := rec["level"].(string); ok {
			_ = level.UnmarshalText([]byte(s))
		}
		msg, _ := rec["msg"].(string)
		attrs := make([]slog.Attr, 0, len(rec))
		for k, v := range rec {
			if k != "level" && k != "msg" && k != "time" {
				attrs = append(attrs, slog.Any(k, v))
			}
		}
		p.logger.LogAttrs(context.Background(), level, msg, attrs...)
	}
	_, _ = io.Copy(io.Discard, r) // a line too long: drain so the worker never blocks
	p.logCrash()
}

// kill stops the process at once. The first reason given is kept.
func (p *process) kill(why string) {
	p.mu.Lock()
	if p.why == "" {
		p.why = why
	}
	p.mu.Unlock()
	killGroup(p.cmd.Process)
}

// stop closes the worker's input and kills it if it has not exited within wait.
func (p *process) stop(why string, wait time.Duration) {
	p.mu.Lock()
	if p.why == "" {
		p.why = why
	}
	p.mu.Unlock()
	_ = p.stdin.Close()
	select {
	case <-p.dead:
	case <-time.After(wait):
		p.kill(why)
		<-p.dead
	}
}

func (p *process) exited(err error) {
	p.mu.Lock()
	if p.why == "" {
		p.why = "it exited unexpectedly"
		if err != nil {
			p.why += ": " + err.Error()
		}
	}
	p.mu.Unlock()
	close(p.dead)
}

func (p *process) reason() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.why
}
