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
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"unicode/utf8"

	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// Arg is the first command-line argument that makes the server's binary a worker.
const Arg = "__mcp-wasmhost-worker__"

// IsWorker reports whether args (os.Args) start a worker process.
func IsWorker(args []string) bool {
	return len(args) == 2 && args[1] == Arg || len(args) == 3 && args[1] == Arg && args[2] == profileArg
}

// Main runs a worker on the process's stdin and stdout and returns its exit code. The
// server's main, and TestMain of every test package that starts workers, call it first:
//
//	if worker.IsWorker(os.Args) {
//		os.Exit(worker.Main())
//	}
func Main() int {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// First, before anything is opened or loaded: nothing of the server's but the channel
	// (and the profile's file when the server opened one for this worker).
	profiling := len(os.Args) == 3 && os.Args[2] == profileArg
	keep := -1
	if profiling {
		keep = profileFD
	}
	if err := closeInherited(keep); err != nil {
		logger.Error("worker stopped", "err", err)
		return 1
	}
	if profiling {
		stop, err := startProfile()
		if err != nil {
			logger.Error("worker stopped", "err", err)
			return 1
		}
		defer stop()
	}
	if err := Serve(context.Background(), pollable(0, "stdin"), pollable(1, "stdout"), logger); err != nil {
		logger.Error("worker stopped", "err", err)
		return 1
	}
	return 0
}

// pollable opens an inherited descriptor in non-blocking mode, so that Go's network
// poller waits on it. os.Stdin blocks its thread in read(2) instead, and the goroutines
// a frame wakes (a call's cancellation among them) then wait for the scheduler's
// monitor to take the blocked thread's processor back: up to 20 ms when idle.
func pollable(fd int, name string) *os.File {
	_ = syscall.SetNonblock(fd, true) // if it fails, the file works, only blocking
	return os.NewFile(uintptr(fd), name)
}

// initDoc is the JSON part of the init frame.
type initDoc struct {
	Name      string            `json:"name"`
	Limits    sandbox.Limits    `json:"limits"`
	Env       map[string]string `json:"env"`
	Dirs      []sandbox.Dir     `json:"dirs"`
	CacheDir  string            `json:"cacheDir"`
	GCPercent int               `json:"gcPercent"`
	// HeapLimitMiB is the Go memory limit (memoryPlan.HeapMiB); 0 leaves the default.
	HeapLimitMiB uint64    `json:"heapLimitMiB"`
	Harden       hardening `json:"harden"`
	// VersionKnown skips running the module's ABI version check (sandbox.Spec.VersionKnown).
	VersionKnown bool `json:"versionKnown"`
}

// Serve is a worker: it reads the init frame, loads the plugin, then runs calls until
// in ends. Calls run concurrently, each in a fresh instance.
func Serve(ctx context.Context, in io.Reader, out io.Writer, logger *slog.Logger) error {
	r := bufio.NewReaderSize(in, 64<<10)
	w := &writer{w: out}
	var hdr [headerLen]byte
	f, err := readFrame(r, &hdr)
	if err != nil {
		return fmt.Errorf("read init frame: %w", err)
	}
	doc, wasm, err := parseInit(f)
	if err != nil {
		return err
	}
	if doc.GCPercent != 0 {
		debug.SetGCPercent(doc.GCPercent)
	}
	applyHeapLimit(doc.HeapLimitMiB)
	mod, err := load(ctx, doc, wasm, logger)
	if err != nil {
		_ = w.send(frameReady, 0, []byte(err.Error()))
		return nil // the supervisor reports it; this process has nothing more to do
	}
	defer mod.Close(context.WithoutCancel(ctx))
	if err := harden(doc.Harden); err != nil {
		_ = w.send(frameReady, 0, fmt.Appendf(nil, "plugin %q: harden its worker process: %v", doc.Name, err))
		return nil
	}
	if err := w.send(frameReady, 0, nil); err != nil {
		return err
	}
	c := &child{mod: mod, w: w, calls: map[uint64]*childCall{}, jobs: make(chan job), stopMemory: make(chan struct{})}
	defer c.stopAll()
	c.wg.Go(func() { c.reportMemory(c.stopMemory) })
	for {
		f, err := readFrame(r, &hdr)
		if errors.Is(err, io.EOF) {
			return nil // the supervisor closed the channel: shut down
		}
		if err != nil {
			return err
		}
		if err := c.handle(ctx, f); err != nil {
			return err
		}
	}
}

func parseInit(f frame) (initDoc, []byte, error) {
	var doc initDoc
	if f.typ != frameInit || len(f.payload) < 4 {
		return doc, nil, fmt.Errorf("first frame is %s, want init", f.typ)
	}
	n := binary.BigEndian.Uint32(f.payload)
	if uint64(n) > uint64(len(f.payload)-4) {
		return doc, nil, errors.New("init frame: document length out of range")
	}
	if err := json.Unmarshal(f.payload[4:4+n], &doc); err != nil {
		return doc, nil, fmt.Errorf("init frame: %w", err)
	}
	return doc, f.payload[4+n:], nil
}

func load(ctx context.Context, doc initDoc, wasm []byte, logger *slog.Logger) (*sandbox.Module, error) {
	e, err := sandbox.NewEngine(ctx, sandbox.Options{CacheDir: doc.CacheDir, Logger: logger})
	if err != nil {
		return nil, err
	}
	return e.Load(ctx, sandbox.Spec{Name: doc.Name, Wasm: wasm, Limits: doc.Limits,
		Grants: sandbox.Grants{Env: doc.Env, Dirs: doc.Dirs}, VersionKnown: doc.VersionKnown})
}

// child is the worker's state: the loaded module and the calls running in it.
type child struct {
	mod *sandbox.Module
	w   *writer
	wg  sync.WaitGroup

	mu    sync.Mutex
	calls map[uint64]*childCall
	cpu   cpuMeter // the CPU time of calls that run alone

	// jobs hands a call to an idle runner (unbuffered: a send succeeds only if one
	// waits); idle counts those waiting, at most maxIdleRunners.
	jobs chan job
	idle atomic.Int32

	stopMemory chan struct{} // closed to end reportMemory
}

// A call runs on a runner goroutine that then waits for the next call, rather than on
// a goroutine of its own: a fresh goroutine's stack is small, and wazero's
// instantiation needs a deep one (evaluateConstExpr's frame), so every call began by
// growing and copying its stack, 18% of a busy worker's CPU. maxIdleRunners bounds
// the runners that wait (and the stacks they keep) after a burst of calls.
const maxIdleRunners = 16

// job is one call for a runner.
type job struct {
	ctx   context.Context
	id    uint64
	entry byte
	input []byte
	cc    *childCall
}

// runner runs j, then the calls handed to it while it waits, until the worker stops
// or enough other runners wait.
func (c *child) runner(j job) {
	for {
		c.run(j.ctx, j.id, j.entry, j.input, j.cc)
		j = job{} // an idle runner keeps no call's input alive
		if c.idle.Add(1) > maxIdleRunners {
			c.idle.Add(-1)
			return
		}
		var ok bool
		j, ok = <-c.jobs
		c.idle.Add(-1)
		if !ok {
			return
		}
	}
}

type childCall struct {
	cancel context.CancelFunc
	reply  chan frame // at most one request is outstanding per call
}

func (c *child) handle(ctx context.Context, f frame) error {
	switch f.typ {
	case frameCall:
		if len(f.payload) < 1 {
			return errors.New("call frame without an entry point")
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if _, dup := c.calls[f.id]; dup || f.id == 0 {
			return fmt.Errorf("call ID %d reused", f.id)
		}
		ctx, cancel := context.WithCancel(ctx)
		cc := &childCall{cancel: cancel, reply: make(chan frame, 1)}
		c.calls[f.id] = cc
		j := job{ctx: ctx, id: f.id, entry: f.payload[0], input: f.payload[1:], cc: cc}
		select {
		case c.jobs <- j:
		default:
			c.wg.Go(func() { c.runner(j) })
		}
	case frameCancel:
		c.mu.Lock()
		if cc, ok := c.calls[f.id]; ok {
			cc.cancel()
		}
		c.mu.Unlock()
	case frameReply:
		c.mu.Lock()
		cc, ok := c.calls[f.id]
		c.mu.Unlock()
		if ok {
			select {
			case cc.reply <- f:
			default: // a reply nobody asked for: drop it
			}
		}
	default:
		return fmt.Errorf("unexpected %s frame", f.typ)
	}
	return nil
}

func (c *child) run(ctx context.Context, id uint64, entry byte, input []byte, cc *childCall) {
	defer func() {
		cc.cancel()
		c.mu.Lock()
		delete(c.calls, id)
		c.mu.Unlock()
	}()
	// Before any guest code runs: a call the supervisor never saw begin did not run,
	// and is sent again if this worker dies.
	_ = c.w.send(frameBegun, id)
	var out []byte
	var err error
	var report []byte
	switch entry {
	case entryDescribe:
		out, err = c.mod.Describe(ctx)
	case entryCall:
		var rep sandbox.Report
		alone, gen, cpu := c.cpu.begin()
		out, err = c.mod.Call(sandbox.WithReport(ctx, &rep), input, &remoteHost{w: c.w, id: id, reply: cc.reply})
		rep.CPU = c.cpu.end(alone, gen, cpu)
		report = encodeReport(&rep)
	default:
		err = fmt.Errorf("unknown entry point %d", entry)
	}
	// The instance is closed by now: the result frame tells the supervisor it is gone.
	// The report, if any, goes just before it, in the same write.
	result := outFrame{typ: frameResult, id: id}
	var ge *sandbox.GuestError
	switch {
	case err == nil:
		result.parts = [3][]byte{{outcomeOK}, out}
	case errors.As(err, &ge):
		result.parts = [3][]byte{{byte(ge.Kind)}, []byte(ge.Message)}
	default:
		result.parts = [3][]byte{{outcomeError}, []byte(err.Error())}
	}
	if report != nil {
		_ = c.w.sendFrames(outFrame{typ: frameReport, id: id, parts: [3][]byte{report}}, result)
	} else {
		_ = c.w.sendFrames(result)
	}
}

// stopAll cancels every running call and waits for them.
func (c *child) stopAll() {
	c.mu.Lock()
	for _, cc := range c.calls {
		cc.cancel()
	}
	c.mu.Unlock()
	close(c.jobs) // the idle runners end
	close(c.stopMemory)
	c.wg.Wait()
}

// remoteHost is a call's sandbox.Host inside a worker: it forwards to the supervisor.
type remoteHost struct {
	w     *writer
	id    uint64
	reply chan frame
}

var _ sandbox.Host = (*remoteHost)(nil)

func (h *remoteHost) Log(_ context.Context, level sandbox.Level, msg string) {
	_ = h.w.send(frameLog, h.id, []byte{byte(level)}, []byte(msg))
}

func (h *remoteHost) Progress(_ context.Context, progress, total float64, msg string) {
	var b [16]byte
	_ = h.w.send(frameProgress, h.id, appendF64(appendF64(b[:0], progress), total), []byte(msg))
}

func (h *remoteHost) Request(ctx context.Context, method string, params []byte) ([]byte, error) {
	if err := h.w.send(frameRequest, h.id, []byte{byte(len(method))}, []byte(method), params); err != nil {
		return nil, err
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case f := <-h.reply:
		if len(f.payload) < 1 {
			return nil, errors.New("empty reply frame")
		}
		body := f.payload[1:]
		switch f.payload[0] {
		case replyOK:
			return body, nil
		case replyUnsupported:
			return nil, sandbox.ErrUnsupported
		case replyUnavailable:
			return nil, sandbox.ErrUnavailable
		}
		if !utf8.Valid(body) {
			body = []byte("request failed")
		}
		return nil, errors.New(string(body))
	}
}
