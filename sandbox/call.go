package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"
)

// stdioLimit caps what one call may print to stdout and to stderr; the rest is dropped.
const stdioLimit = 64 << 10

// manifestLimit caps the manifest document.
const manifestLimit = 1 << 20

// Level is a guest log level, as the ABI numbers them.
type Level int32

// Log levels of the ABI's log function.
const (
	LevelDebug Level = iota
	LevelInfo
	LevelNotice
	LevelWarning
	LevelError
)

func (l Level) String() string {
	switch l {
	case LevelDebug:
		return "debug"
	case LevelInfo:
		return "info"
	case LevelNotice:
		return "notice"
	case LevelWarning:
		return "warning"
	case LevelError:
		return "error"
	}
	return fmt.Sprintf("level(%d)", int32(l))
}

// Host is what a running guest can reach through the ABI's host functions. The sandbox
// has checked every argument before a method is called: strings are valid UTF-8 and
// params are a JSON object within the ABI's limits.
//
// Methods are called on the goroutine running the guest, with the call's context.
type Host interface {
	// Log delivers a guest log line.
	Log(ctx context.Context, level Level, msg string)
	// Progress reports progress; total <= 0 means unknown.
	Progress(ctx context.Context, progress, total float64, msg string)
	// Request answers a request such as "elicit" (docs/ABI.md) with a JSON reply. It
	// returns [ErrUnsupported] for a method it does not know and [ErrUnavailable] when
	// the method cannot be served here; any other error reaches the guest as FAILED with
	// the error's text. It must return promptly once ctx is done.
	Request(ctx context.Context, method string, params []byte) ([]byte, error)
}

// Errors a [Host] returns from Request to choose the guest's status code.
var (
	ErrUnsupported = errors.New("unsupported request")
	ErrUnavailable = errors.New("request unavailable")
)

// ErrorKind classifies a [GuestError].
type ErrorKind int

// Kinds of guest failure.
const (
	KindTrap        ErrorKind = iota + 1 // the guest trapped (crashed)
	KindTimeout                          // the call ran past its time limit
	KindCanceled                         // the caller cancelled the call
	KindOutOfMemory                      // the guest exhausted its memory limit
	KindExit                             // the guest called proc_exit with a non-zero code
	KindFailed                           // the guest returned a non-zero status
	KindOutput                           // the guest's output was missing, too large or malformed
	KindAborted                          // the process running the guest stopped under it
)

// Valid reports whether k is one of the kinds above.
func (k ErrorKind) Valid() bool { return k >= KindTrap && k <= KindAborted }

// GuestError is a guest's failure, described for the person who called the tool.
type GuestError struct {
	Kind    ErrorKind
	Message string // complete, human-readable
	Err     error  // the underlying wazero error, if any
}

func (e *GuestError) Error() string { return e.Message }
func (e *GuestError) Unwrap() error { return e.Err }

// Is reports a call stopped at its time limit as [context.DeadlineExceeded] and a
// cancelled call as [context.Canceled] (as wazero's sys.ExitError does), the same
// whether the error was made in process or from a worker's result frame, which carries
// only the kind and the message.
func (e *GuestError) Is(target error) bool {
	switch e.Kind {
	case KindTimeout:
		return target == context.DeadlineExceeded
	case KindCanceled:
		return target == context.Canceled
	}
	return false
}

// StoppedError is the error of a call that plugin's time limit stopped (cause is
// [context.DeadlineExceeded]) or that its caller cancelled (any other cause). err is
// the underlying error, if any.
func StoppedError(plugin string, limit time.Duration, cause, err error) *GuestError {
	if errors.Is(cause, context.DeadlineExceeded) {
		return &GuestError{Kind: KindTimeout, Err: err,
			Message: fmt.Sprintf("plugin %q was stopped: it exceeded its time limit of %s", plugin, limit)}
	}
	return &GuestError{Kind: KindCanceled, Err: err, Message: fmt.Sprintf("plugin %q was stopped: the call was cancelled", plugin)}
}

// Describe runs the guest's mcpwh_describe in a fresh instance and returns its manifest.
func (m *Module) Describe(ctx context.Context) ([]byte, error) {
	return m.run(ctx, exportDescribe, nil, nil, manifestLimit)
}

// Call runs the guest's mcpwh_call in a fresh instance with input as its input document
// and returns its output document. A guest failure is a [*GuestError]. h may be nil:
// then logs go to the server log and requests answer UNAVAILABLE.
func (m *Module) Call(ctx context.Context, input []byte, h Host) ([]byte, error) {
	if len(input) > m.limits.MaxInputBytes {
		return nil, fmt.Errorf("input of %d bytes exceeds plugin %q's limit of %d", len(input), m.name, m.limits.MaxInputBytes)
	}
	return m.run(ctx, exportCall, input, h, m.limits.MaxOutputBytes)
}

func (m *Module) run(ctx context.Context, export string, input []byte, h Host, maxOutput int) ([]byte, error) {
	// The time limit is a run-time budget, not a deadline: it stands still while the
	// guest waits for an answer (request), which may take a person hours.
	clock := NewClock(m.limits.Timeout)
	defer clock.Stop()
	ctx, cancel := WithClock(ctx, clock)
	defer cancel()
	limits := m.limits
	limits.MaxOutputBytes = maxOutput
	st := newCallState(input, h, limits)
	st.clock, st.logger = clock, m.logger
	ctx = withCallState(ctx, st)
	rep := ReportFrom(ctx)
	var began time.Time
	if rep != nil {
		began = time.Now()
	}
	in, err := m.instantiate(ctx, st)
	if rep != nil {
		now := time.Now()
		rep.Instantiate, began = now.Sub(began), now
	}
	if err != nil {
		return nil, m.guestError(ctx, st, err)
	}
	res, err := callExport(ctx, in, export)
	if rep != nil {
		rep.Run = time.Since(began)
		rep.HostCalls = st.calls
		if mem := in.mod.Memory(); mem != nil {
			rep.MemoryBytes = uint64(mem.Size())
		}
	}
	m.finish(ctx, st, in, err == nil && ctx.Err() == nil)
	m.flushStdio(ctx, st)
	if err != nil {
		return nil, m.guestError(ctx, st, err)
	}
	if status := int32(res[0]); status != 0 {
		msg := "no message"
		if len(st.output) > 0 && utf8.Valid(st.output) {
			msg = truncate(string(st.output), 1024)
		}
		return nil, &GuestError{Kind: KindFailed, Message: fmt.Sprintf("plugin %q failed (status %d): %s", m.name, status, msg)}
	}
	if st.outputErr != "" {
		return nil, &GuestError{Kind: KindOutput, Message: fmt.Sprintf("plugin %q produced no usable output: %s", m.name, st.outputErr)}
	}
	if st.output == nil {
		return nil, &GuestError{Kind: KindOutput, Message: fmt.Sprintf("plugin %q returned without writing any output", m.name)}
	}
	return st.output, nil
}

// callExport calls the guest's export. A call that returns after its context ended,
// typically woken from a sleep the host cut short (sleeper), fails with the context's
// error: what the guest did after its deadline or cancellation is not a result.
func callExport(ctx context.Context, in *instance, export string) ([]uint64, error) {
	res, err := in.function(export).Call(ctx)
	if err == nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return res, err
}

// instantiate returns an instance in its starting state for the call: a kept one,
// restored (kept.go), or a fresh one. ctx must carry st (withCallState).
func (m *Module) instantiate(ctx context.Context, st *callState) (*instance, error) {
	keep := m.kept.enabled()
	if keep {
		if in := m.kept.take(); in != nil {
			in.stdio.bind(ctx, st)
			m.kept.reused.Add(1)
			m.live.Add(1)
			in.mem.hold(&m.liveMemory)
			m.releaser.begin()
			return in, nil
		}
	}
	m.instances.Add(1)
	mem, err := m.pool.get(m.memory)
	if err != nil {
		st.memoryErr = err
		return nil, err
	}
	var in *instance
	if keep {
		in, err = m.newKept(ctx, st, mem)
	} else {
		cfg := m.config.WithStdout(&st.stdout).WithStderr(&st.stderr).WithNanosleep(sleeper(ctx))
		in = &instance{mem: mem}
		in.mod, err = m.runtime.InstantiateModule(experimental.WithMemoryAllocator(ctx, mem), m.compiled, cfg)
	}
	if err != nil {
		if in.mod != nil {
			_ = in.mod.Close(context.WithoutCancel(ctx))
		}
		m.pool.put(mem)
		return nil, err
	}
	m.live.Add(1)
	in.mem.hold(&m.liveMemory)
	m.releaser.begin()
	return in, nil
}

// sleeper is the guest's sleep (WASI poll_oneoff on a clock): real time, but it ends
// when the call's context does, so that a guest asleep for an hour is cancelled at
// once rather than when it wakes (wazero's own sleep ignores the context).
func sleeper(ctx context.Context) sys.Nanosleep {
	return func(ns int64) {
		t := time.NewTimer(time.Duration(ns))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
}

// finish ends a call's use of its instance: a kept instance whose call ended
// cleanly (clean) is restored and kept for the next call, any other is closed.
func (m *Module) finish(ctx context.Context, st *callState, in *instance, clean bool) {
	in.mem.unhold()
	if in.stdio != nil && clean && !st.tainted && m.kept.put(in) {
		m.live.Add(-1)
		m.releaser.end()
		return
	}
	m.close(ctx, in)
}

// close tears an instance down, also after its context ended.
// Its linear memory goes back to the engine's pool, beyond warmBytes to the operating
// system at once.
func (m *Module) close(ctx context.Context, in *instance) {
	in.mem.unhold()
	in.mod.Close(context.WithoutCancel(ctx))
	m.pool.put(in.mem)
	m.live.Add(-1)
	m.releaser.end()
}

// guestError turns an error from instantiating or calling a guest into a GuestError.
// ctx is the call's context, which ends when the plugin's time limit is spent (WithClock).
func (m *Module) guestError(ctx context.Context, st *callState, err error) error {
	m.flushStdio(ctx, st)
	var exit *sys.ExitError
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		return StoppedError(m.name, m.limits.Timeout, context.DeadlineExceeded, err)
	case errors.Is(ctx.Err(), context.Canceled) || errors.Is(err, context.Canceled):
		return StoppedError(m.name, m.limits.Timeout, context.Canceled, err)
	case errors.As(err, &exit):
		return &GuestError{Kind: KindExit, Err: err,
			Message: fmt.Sprintf("plugin %q exited with code %d%s", m.name, exit.ExitCode(), st.stderrTail())}
	case st.memoryErr != nil:
		return &GuestError{Kind: KindOutOfMemory, Err: err, Message: fmt.Sprintf(
			"plugin %q ran out of memory: no room for another instance of up to %d MiB (%v); too many calls at once",
			m.name, m.limits.MemoryMiB, st.memoryErr)}
	case st.outOfMemory():
		return &GuestError{Kind: KindOutOfMemory, Err: err,
			Message: fmt.Sprintf("plugin %q ran out of memory (limit %d MiB)", m.name, m.limits.MemoryMiB)}
	}
	return &GuestError{Kind: KindTrap, Err: err, Message: fmt.Sprintf("plugin %q crashed: %s%s", m.name, trapReason(err), st.stderrTail())}
}

// trapReason keeps the first line of a wazero error: the trap, without the stack trace.
func trapReason(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

func (m *Module) flushStdio(ctx context.Context, st *callState) {
	for _, s := range []struct {
		name string
		w    *limitedBuffer
	}{{"stdout", &st.stdout}, {"stderr", &st.stderr}} {
		if s.w.flushed || (len(s.w.buf) == 0 && s.w.dropped == 0) {
			continue
		}
		s.w.flushed = true
		m.logger.LogAttrs(ctx, slog.LevelInfo, "guest "+s.name,
			slog.String("text", strings.ToValidUTF8(string(s.w.buf), "\uFFFD")), slog.Int("dropped_bytes", s.w.dropped))
	}
}

// limitedBuffer keeps the first stdioLimit bytes written and counts the rest.
type limitedBuffer struct {
	buf     []byte
	dropped int
	flushed bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	room := stdioLimit - len(b.buf)
	if room >= len(p) {
		b.buf = append(b.buf, p...)
	} else {
		if room > 0 {
			b.buf = append(b.buf, p[:room]...)
		}
		b.dropped += len(p) - max(room, 0)
	}
	return len(p), nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…[truncated]"
}
