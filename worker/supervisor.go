package worker

import (
	"bufio"
	"bytes"
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

// WaitingCancelGrace is the time a call cancelled while its guest waited for an
// answer gets beyond KillGrace to stop (see Module.cancelGrace).
const WaitingCancelGrace = time.Second

// WorkerNice is the nice value every worker runs at: guest code is the untrusted,
// CPU-hungry part, and the server's own work (answering tasks/get, delivering a
// cancel, starting the next call) must not wait behind it for a core. At 10 a worker
// gets about a tenth of a core's time against one server thread that wants it.
const WorkerNice = 10

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
	// Events hears of workers' starts, kills and restarts; nil means nobody.
	Events Events
	// ProfileDir, an existing directory, makes every worker write a CPU profile
	// (runtime/pprof) of its whole life to <plugin>-<pid>.cpu.pprof there when it
	// exits (profile.go); a worker that is killed writes none. "" means no profiles.
	ProfileDir string
}

// Supervisor starts and watches worker processes, one per plugin. It is safe for
// concurrent use.
type Supervisor struct {
	opts    Options
	command string
	logger  *slog.Logger
	events  Events

	mu    sync.Mutex
	holds int           // Hold calls not yet released
	free  chan struct{} // closed when the last hold is released
}

// Hold keeps the plugins' workers beyond the first of each from starting until
// release is called (each Hold needs its own release; release is idempotent). A
// server holds while it loads its plugins: the start waits for the first worker of
// each plugin, and the others, started at once, would take the CPU that the first
// ones need to compile. Calls keyed to a held worker wait for it.
func (s *Supervisor) Hold() (release func()) {
	s.mu.Lock()
	if s.holds == 0 {
		s.free = make(chan struct{})
	}
	s.holds++
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.holds--; s.holds == 0 {
				close(s.free)
			}
		})
	}
}

// unheld waits until no Hold is in force. It reports false if ctx ended first.
func (s *Supervisor) unheld(ctx context.Context) bool {
	s.mu.Lock()
	free := s.free
	held := s.holds > 0
	s.mu.Unlock()
	if !held {
		return true
	}
	select {
	case <-free:
		return true
	case <-ctx.Done():
		return false
	}
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
	if opts.ProfileDir != "" {
		dir, err := filepath.Abs(opts.ProfileDir)
		if err != nil {
			return nil, err
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("worker profile directory %s: not a directory", dir)
		}
		opts.ProfileDir = dir
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if opts.KillGrace <= 0 {
		opts.KillGrace = DefaultKillGrace
	}
	events := opts.Events
	if events == nil {
		events = noEvents{}
	}
	return &Supervisor{opts: opts, command: cmd, logger: logger, events: events}, nil
}

// Spec is a plugin to run in a worker.
type Spec struct {
	Name   string
	Wasm   []byte // verified by the caller; the worker never reads the file itself
	Limits sandbox.Limits
	Grants sandbox.Grants
	// Processes is how many worker processes share the plugin's calls; 0 means
	// [DefaultProcesses].
	Processes int
	// MaxConcurrent is the most calls one worker runs at once (the caller's admission
	// limit), which sizes each worker's open-file limit (see openFiles); 0 means
	// [DefaultMaxConcurrent].
	MaxConcurrent int
	// VersionKnown: the module's ABI version is known ([sandbox.Spec.VersionKnown]); a
	// worker then compiles and checks the module but runs none of its code at start.
	VersionKnown bool
}

// DefaultMaxConcurrent is what [Spec.MaxConcurrent] 0 means.
const DefaultMaxConcurrent = 48

// A worker's open-file limit (RLIMIT_NOFILE) is openFilesBase, for the Go runtime, its
// channel, the compilation cache and the directory grants' roots (shared by all
// instances, package rootfs), plus, for each call it may run at once, openFilesPerCall
// and one per directory grant: the files and directories a guest holds open.
const (
	openFilesBase    = 64
	openFilesPerCall = 4
)

// openFiles is the open-file limit of a worker that runs up to maxConcurrent calls of
// a plugin with dirs directory grants.
func openFiles(maxConcurrent, dirs int) uint64 {
	if maxConcurrent <= 0 {
		maxConcurrent = DefaultMaxConcurrent
	}
	return uint64(openFilesBase + maxConcurrent*(dirs+openFilesPerCall))
}

// Module is a plugin running in worker processes: it has the methods of
// [sandbox.Module] and runs every call in a fresh instance inside one of its workers
// (pool.go), each restarted in the background when it dies.
type Module struct {
	sup    *Supervisor
	name   string
	limits sandbox.Limits
	files  uint64 // each worker's open-file limit
	init   []byte // the init frame's payload, kept to restart the worker
	logger *slog.Logger
	slots  []*slot

	done   <-chan struct{} // closed by Close: the supervising goroutines end
	cancel context.CancelFunc
	wg     sync.WaitGroup // the supervising goroutines

	mu     sync.Mutex
	closed bool

	instances atomic.Int64
	live      atomic.Int64
	starts    atomic.Int64
}

// Load starts a worker for the plugin and waits until it has compiled the module and
// checked its ABI version (unless spec.VersionKnown). Errors say what the worker reported.
// Each worker is sized (open files, memory) for spec.MaxConcurrent calls at once.
func (s *Supervisor) Load(ctx context.Context, spec Spec) (*Module, error) {
	limits := spec.Limits.WithDefaults()
	files := openFiles(spec.MaxConcurrent, len(spec.Grants.Dirs))
	mem := planMemory(limits, spec.MaxConcurrent)
	doc, err := json.Marshal(initDoc{
		Name: spec.Name, Limits: limits, Env: spec.Grants.Env, Dirs: spec.Grants.Dirs,
		CacheDir: s.opts.CacheDir, GCPercent: s.opts.GCPercent, HeapLimitMiB: mem.HeapMiB,
		Harden: hardening{
			OpenFiles:       files,
			AddressSpaceMiB: mem.AddressSpaceMiB,
			Nice:            WorkerNice,
			Seccomp:         !s.opts.NoSeccomp,
		},
		VersionKnown: spec.VersionKnown,
	})
	if err != nil {
		return nil, fmt.Errorf("plugin %q: encode worker init: %w", spec.Name, err)
	}
	init := binary.BigEndian.AppendUint32(nil, uint32(len(doc)))
	init = append(append(init, doc...), spec.Wasm...)
	m := &Module{sup: s, name: spec.Name, limits: limits, files: files, init: init, logger: s.logger.With("plugin", spec.Name)}
	first, err := m.start(ctx)
	if err != nil {
		return nil, err
	}
	// The first worker proved that the plugin loads and warmed the compilation cache;
	// the others start in the background, once no Hold is in force.
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m.done, m.cancel = runCtx.Done(), cancel
	n := spec.Processes
	if n <= 0 {
		n = DefaultProcesses
	}
	for i := range n {
		sl := &slot{m: m, up: make(chan struct{})}
		var p *process
		if i == 0 {
			p = first
			sl.cur, sl.started = first, true
			close(sl.up)
		}
		m.slots = append(m.slots, sl)
		m.wg.Go(func() {
			if p == nil && !s.unheld(runCtx) {
				return // unloaded while held
			}
			sl.supervise(runCtx, p)
		})
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

// LiveMemory returns the bytes of linear memory the live instances in the workers
// hold, as each worker last said (a memory frame, at most every memoryEvery); a
// worker that does not run holds none.
func (m *Module) LiveMemory() int64 {
	var n int64
	for _, s := range m.slots {
		s.mu.Lock()
		if p := s.cur; p != nil && !isClosed(p.dead) {
			n += p.memory.Load()
		}
		s.mu.Unlock()
	}
	return n
}

// Starts returns how many worker processes have been started for the plugin.
func (m *Module) Starts() int64 { return m.starts.Load() }

// PID returns the first worker's process ID, or 0 when it does not run.
func (m *Module) PID() int { return m.PIDs()[0] }

// PIDs returns each worker's process ID, 0 where a worker does not run now.
func (m *Module) PIDs() []int {
	pids := make([]int, len(m.slots))
	for i, s := range m.slots {
		s.mu.Lock()
		if s.cur != nil {
			pids[i] = s.cur.cmd.Process.Pid
		}
		s.mu.Unlock()
	}
	return pids
}

// Close stops the workers: it closes their input, so that each cancels its calls and
// exits, and kills one that has not exited within a second. It waits for them and for
// their supervising goroutines.
func (m *Module) Close(ctx context.Context) error {
	m.mu.Lock()
	closed := m.closed
	m.closed = true
	m.mu.Unlock()
	if closed {
		return nil
	}
	m.cancel()
	var wg sync.WaitGroup
	for _, s := range m.slots {
		s.mu.Lock()
		p := s.cur
		s.cur = nil
		s.mu.Unlock()
		if p != nil {
			wg.Go(func() { p.stop(StopUnloaded, "the plugin was unloaded", time.Second) })
		}
	}
	wg.Wait()
	m.wg.Wait()
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

// run runs one call in a worker of the pool. A call that never reached its worker
// (the worker died first) is sent again, to a restarted or another worker; one that
// reached it fails with the reason the worker stopped.
func (m *Module) run(ctx context.Context, entry byte, input []byte, h sandbox.Host) ([]byte, error) {
	for attempt := 1; ; attempt++ {
		s := m.pick(h)
		p, err := s.get(ctx, restartWait)
		if err != nil {
			return nil, err
		}
		s.load.Add(1)
		out, err, unsent := m.runIn(ctx, p, entry, input, h)
		s.load.Add(-1)
		if !unsent || attempt == maxAttempts {
			return out, err
		}
		m.logger.Debug("call sent again: its worker stopped before it arrived", "reason", p.reason())
	}
}

// runIn runs one call in worker p. unsent reports that the call never reached it.
func (m *Module) runIn(ctx context.Context, p *process, entry byte, input []byte, h sandbox.Host) (out []byte, err error, unsent bool) {
	m.instances.Add(1)
	m.live.Add(1)
	defer m.live.Add(-1)
	c := p.register(sandbox.ReportFrom(ctx))
	defer p.unregister(c)
	// The worker enforces the time limit itself; this clock is the backstop. Like the
	// worker's, it stands still while the guest waits for an answer (handle).
	parent := ctx
	clock := sandbox.NewClock(m.limits.Timeout)
	defer clock.Stop()
	ctx, cancel := sandbox.WithClock(ctx, clock)
	defer cancel()
	if err := p.w.send(frameCall, c.id, []byte{entry}, input); err != nil {
		p.kill(StopProtocol, "its input could not be written: "+err.Error())
		<-p.dead
		return nil, m.lost(p), true
	}
	done := ctx.Done()
	var grace <-chan time.Time
	var allowed time.Duration // the grace given, for the message
	for {
		select {
		case <-c.wake:
			for _, f := range p.take(c) {
				if out, err, finished := m.handle(ctx, clock, p, c, f, h); finished {
					return out, err, false
				}
			}
		case <-done:
			done = nil
			if parent.Err() != nil {
				_ = p.w.send(frameCancel, c.id)
				allowed = m.cancelGrace(c.parked)
			} else { // the worker's own clock, started when the call arrived, is due now
				allowed = m.grace(clock)
			}
			grace = time.After(allowed)
		case <-grace:
			return nil, m.stuck(parent, p, allowed), false
		case <-p.dead:
			// Results the worker wrote before it died are still delivered.
			for _, f := range p.take(c) {
				if out, err, finished := m.handle(ctx, clock, p, c, f, nil); finished {
					return out, err, false
				}
			}
			return nil, m.lost(p), !p.begun(c)
		}
	}
}

// handle acts on one frame of call c. It reports finished with the call's outcome.
func (m *Module) handle(ctx context.Context, clock *sandbox.Clock, p *process, c *call, f frame, h sandbox.Host) (out []byte, err error, finished bool) {
	switch f.typ {
	case frameResult:
		out, err, finished := m.result(p, f.payload)
		if err == nil && ctx.Err() != nil {
			// The deadline or a cancellation came first: an answer after it is not a result.
			return nil, sandbox.StoppedError(m.name, m.limits.Timeout, ctx.Err(), nil), true
		}
		return out, err, finished
	case frameLog: // (a report frame never queues: the reader decodes it, deliver)
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
			wait := sandbox.WaitsForAnswer(method)
			if wait {
				clock.Pause()
			}
			reply, rerr := h.Request(rctx, method, params)
			if wait {
				clock.Resume()
				c.parked = ctx.Err() != nil
			}
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

func (m *Module) result(p *process, payload []byte) ([]byte, error, bool) {
	outcome, body := payload[0], payload[1:]
	switch {
	case outcome == outcomeOK:
		return body, nil, true
	case outcome == outcomeError:
		return nil, fmt.Errorf("plugin %q: %s", m.name, body), true
	}
	msg := string(body)
	if sandbox.ErrorKind(outcome) == sandbox.KindTrap {
		msg += m.openFilesNote(p)
	}
	return nil, &sandbox.GuestError{Kind: sandbox.ErrorKind(outcome), Message: msg}, true
}

// openFilesNote names the likely cause of a crash in worker p when p has (nearly) used
// up its open files: wazero reports a failed open as EIO ("input/output error"), and a
// Go guest that cannot start as "_initialize failed". "" otherwise.
func (m *Module) openFilesNote(p *process) string {
	if p.cmd == nil || p.cmd.Process == nil {
		return "" // no process to look at (the frame fuzz test's)
	}
	n := openFileCount(p.cmd.Process.Pid)
	if n < 0 || uint64(n)+openFilesSlack < m.files {
		return ""
	}
	return fmt.Sprintf(" (its worker process had used %d of its %d open files: too many open files; calls of this plugin that run at once hold them)", n, m.files)
}

// openFilesSlack is how close to its open-file limit a worker counts as out of files:
// when the crash is reported, the crashed instance has closed its own.
const openFilesSlack = 16

// grace is how long after clock ran out the worker may take to report the call's end
// before it is killed: KillGrace, and one more for each wait for an answer. The
// worker's clock stood still from sending the request to reading the reply, this one
// only from reading the request to sending the reply, so it is ahead by the frames'
// transit, which a loaded machine can stretch.
func (m *Module) grace(clock *sandbox.Clock) time.Duration {
	return m.sup.opts.KillGrace * time.Duration(1+clock.Waits())
}

// cancelGrace is how long after a cancellation the worker may take to report the
// call's end before it is killed: KillGrace for a guest that was running, and
// WaitingCancelGrace more for one that was waiting for an answer. That guest was not
// running code; it must first be woken with the cancellation and unwind, in a worker
// that may hold hundreds of such parked calls and that runs at a lower priority than
// the server: cancelling many parked tasks on a busy machine took longer than
// KillGrace, and killing the worker lost every other parked task in it.
func (m *Module) cancelGrace(parked bool) time.Duration {
	if parked {
		return m.sup.opts.KillGrace + WaitingCancelGrace
	}
	return m.sup.opts.KillGrace
}

// stuck kills a worker whose call did not stop in time and reports the call's end.
func (m *Module) stuck(parent context.Context, p *process, allowed time.Duration) error {
	kind, reason, why := sandbox.KindTimeout, "it exceeded its time limit of "+m.limits.Timeout.String(), "it did not stop at its time limit"
	if err := parent.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		kind, reason, why = sandbox.KindCanceled, "the call was cancelled", "it did not stop within "+allowed.String()+" of being cancelled"
	}
	p.kill(StopStuck, "a call in it did not stop: "+why)
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
	cmd.ExtraFiles = nil // stdin, stdout, stderr only; the worker closes what the server inherited
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
	profile, err := m.openProfile(cmd)
	if err != nil {
		return nil, err
	}
	err = cmd.Start()
	profileName := profile.started(cmd, err)
	if err != nil {
		return nil, fmt.Errorf("plugin %q: start worker %s: %w", m.name, m.sup.command, err)
	}
	m.starts.Add(1)
	p := &process{cmd: cmd, stdin: stdin, w: &writer{w: stdin}, dead: make(chan struct{}),
		calls: map[uint64]*call{}, logger: m.logger.With("worker", cmd.Process.Pid),
		plugin: m.name, events: m.sup.events}
	ready := make(chan string, 1)
	var wg sync.WaitGroup
	wg.Go(func() { p.forwardLogs(stderr) })
	wg.Go(func() { p.read(bufio.NewReaderSize(stdout, 64<<10), ready) })
	go func() {
		wg.Wait() // both pipes are drained before Wait closes them
		err := cmd.Wait()
		removeEmptyProfile(profileName)
		p.exited(err)
	}()
	if err := p.w.send(frameInit, 0, m.init); err != nil {
		// A write fails because the worker closed its input, usually by exiting: its
		// exit status says more than the broken pipe, so give it a moment to be reaped.
		select {
		case <-p.dead:
		case <-time.After(time.Second):
			p.kill(StopStart, "its init frame could not be written: "+err.Error())
		}
	}
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case msg := <-ready:
		if msg == "" {
			m.logger.Debug("worker started", "pid", cmd.Process.Pid)
			m.sup.events.WorkerStarted(m.name)
			return p, nil
		}
		p.stop(StopStart, "it could not load the plugin", time.Second)
		return nil, errors.New(msg) // the worker's message names the plugin
	case <-p.dead:
		return nil, fmt.Errorf("plugin %q: the worker process stopped while starting (%s)", m.name, p.reason())
	case <-timer.C:
		p.kill(StopStart, "it did not start within "+startTimeout.String())
	case <-ctx.Done():
		p.kill(StopStart, "loading was cancelled")
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
	memory atomic.Int64  // its last memory frame's count

	mu     sync.Mutex
	calls  map[uint64]*call
	nextID uint64
	why    string     // why the process stopped, first reason wins
	class  StopReason // why's class (StopExited until a reason is given)
	plugin string
	events Events
	crash  crashOutput
}

// call is the supervisor's side of one call: frames queue here for its goroutine.
type call struct {
	id     uint64
	wake   chan struct{} // signalled when frames are queued
	frames []frame
	spare  []frame // the frames taken before, being handled or done with (take)
	// rep receives the call's report frame, decoded by the reader under p.mu while the
	// call is registered: the report needs no wake-up of the call's goroutine.
	rep   *sandbox.Report
	count int  // frames received, against the ABI's per-call limits
	begun bool // the worker said the guest starts: the call may have had effects
	// parked: the call was cancelled while its guest waited for an answer (set and read
	// by the call's own goroutine, in runIn and handle).
	parked bool
}

// calls keeps ended calls for reuse: a call's lifetime is runIn's, between register
// and unregister, and nothing holds one after (deliver finds calls in the map only).
var calls = sync.Pool{New: func() any { return &call{wake: make(chan struct{}, 1)} }}

// register makes a call; its report frame, if any, is decoded into rep (nil: dropped).
func (p *process) register(rep *sandbox.Report) *call {
	c := calls.Get().(*call)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nextID++
	c.id, c.rep = p.nextID, rep
	p.calls[c.id] = c
	return c
}

func (p *process) unregister(c *call) {
	p.mu.Lock()
	delete(p.calls, c.id)
	p.mu.Unlock()
	select {
	case <-c.wake:
	default:
	}
	keep := func(fs []frame) []frame {
		if cap(fs) > 64 {
			return nil // a burst of logs: let it go
		}
		clear(fs[:cap(fs)])
		return fs[:0]
	}
	*c = call{wake: c.wake, frames: keep(c.frames), spare: keep(c.spare)}
	calls.Put(c)
}

// begun reports whether the worker said c's guest starts. Once the process is dead,
// every frame it wrote has been delivered: false then means the guest never ran.
func (p *process) begun(c *call) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return c.begun
}

// take removes and returns the frames queued for c. They are c's until its next take:
// the two slices take turns, so that queueing frames allocates nothing.
func (p *process) take(c *call) []frame {
	p.mu.Lock()
	defer p.mu.Unlock()
	fs := c.frames
	clear(c.spare) // the frames taken before: handled, their payloads not to be kept
	c.frames, c.spare = c.spare[:0], fs
	return fs
}

// maxCallFrames is more than the ABI lets one call send (1,000 logs, 10,000 progress
// reports, its requests of each kind, one begun, one report and one result): a
// worker that sends more is misbehaving.
const maxCallFrames = 1000 + 10000 + sandbox.MaxRequests + sandbox.MaxTaskLogRequests + sandbox.MaxCheckpointRequests + 3

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
				p.kill(StopProtocol, "its output was malformed: "+err.Error())
			}
			return
		}
		if !started {
			if f.typ != frameReady || f.id != 0 || !utf8.Valid(f.payload) {
				p.kill(StopProtocol, fmt.Sprintf("it sent %s before ready", f.typ))
				return
			}
			started = true
			ready <- string(f.payload)
			continue
		}
		if err := validate(f); err != nil {
			p.kill(StopProtocol, "it broke the worker protocol: "+err.Error())
			return
		}
		if f.typ == frameMemory {
			p.memory.Store(int64(binary.BigEndian.Uint64(f.payload)))
			continue
		}
		if !p.deliver(f) {
			p.kill(StopProtocol, fmt.Sprintf("it sent more than %d frames for one call", maxCallFrames))
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
	case frameBegun:
		if n != 0 {
			return errors.New("malformed begun")
		}
	case frameMemory:
		if f.id != 0 || n != 8 || binary.BigEndian.Uint64(f.payload) > maxLiveMemory {
			return errors.New("malformed memory")
		}
	case frameReport:
		if err := decodeReport(f.payload, new(sandbox.Report)); err != nil {
			return err
		}
	case frameRequest:
		if n < 1 || n < 1+int(f.payload[0]) || f.payload[0] > 64 || !utf8.Valid(f.payload[1:1+int(f.payload[0])]) ||
			n-1-int(f.payload[0]) > sandbox.RequestParamsLimit(string(f.payload[1:1+int(f.payload[0])])) {
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
	switch f.typ {
	case frameBegun:
		c.begun = true
		return true
	case frameReport:
		if c.rep != nil {
			_ = decodeReport(f.payload, c.rep) // validate checked it
		}
		return true
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
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber() // sizes and counts stay integers: 3604480, not 3.60448e+06
		if dec.Decode(&rec) != nil {
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
func (p *process) kill(class StopReason, why string) {
	p.mu.Lock()
	first := p.why == ""
	if first {
		p.why, p.class = why, class
	}
	p.mu.Unlock()
	if first && !isClosed(p.dead) {
		p.events.WorkerKilled(p.plugin, class)
	}
	killGroup(p.cmd.Process)
}

// stop closes the worker's input and kills it if it has not exited within wait.
func (p *process) stop(class StopReason, why string, wait time.Duration) {
	p.mu.Lock()
	if p.why == "" {
		p.why, p.class = why, class
	}
	p.mu.Unlock()
	_ = p.stdin.Close()
	select {
	case <-p.dead:
	case <-time.After(wait):
		killGroup(p.cmd.Process)
		p.events.WorkerKilled(p.plugin, class)
		<-p.dead
	}
}

// stopReason is the class of why the process stopped.
func (p *process) stopReason() StopReason {
	if _, oom := p.ranOutOfMemory(); oom {
		return StopMemory
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.class
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
