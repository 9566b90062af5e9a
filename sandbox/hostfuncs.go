package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

const hostModuleName = "mcpwh"

// Status codes the host functions return (docs/ABI.md).
const (
	statusOK          int32 = 0
	statusBadPointer  int32 = -1
	statusTooLarge    int32 = -2
	statusInvalid     int32 = -3
	statusUnsupported int32 = -4
	statusUnavailable int32 = -5
	statusFailed      int32 = -6
	statusLimit       int32 = -7
	statusNoData      int32 = -8
)

// Per-call limits of the host functions (docs/ABI.md).
const (
	logLineLimit      = 8 << 10
	logCountLimit     = 1000
	progressMsgLimit  = 1 << 10
	progressLimit     = 10000
	methodLimit       = 64
	paramsLimit       = MaxRequestParams
	requestLimit      = MaxRequests
	replyLimit        = 1 << 20
	errorReplyLimit   = 4 << 10
	stderrTailOnError = 512
)

// Limits of the request host function that the worker's frame checks share.
const (
	// MaxRequestParams bounds a request's params, but those of a checkpoint.
	MaxRequestParams = 64 << 10
	// MaxCheckpointParams bounds a checkpoint_save request's params: a checkpoint of
	// MaxCheckpoint bytes in base64, with room for the JSON around it.
	MaxCheckpointParams = MaxCheckpoint/3*4 + 4<<10
	// MaxCheckpoint is the ABI's bound on one checkpoint ([tasks] max_checkpoint_kib
	// may set a lower one).
	MaxCheckpoint = 1 << 20
	// MaxRequests bounds the requests of one call that reach the client or the
	// network.
	MaxRequests = 100
	// MaxTaskLogRequests bounds a call's task_log requests, and
	// MaxCheckpointRequests its checkpoint_save and checkpoint_load requests
	// together. The host serves these itself, without the client, so they do not
	// count toward MaxRequests, and each kind has a budget of its own: a guest's log
	// lines never use up its checkpoints. Each is twice what the bundled longrun
	// testrun needs for its largest run (100,000 cases, a line and a checkpoint per
	// case, plus a line or two and one checkpoint_load).
	MaxTaskLogRequests    = 200_000
	MaxCheckpointRequests = 200_000
)

// journalKind is which budget of a call a request method draws on: the requests that
// write or read the call's task journal (its log and checkpoint) have their own.
type journalKind int

const (
	notJournal        journalKind = iota // a request that reaches the client or the network
	journalLog                           // task_log
	journalCheckpoint                    // checkpoint_save, checkpoint_load
)

func journalKindOf(method string) journalKind {
	switch method {
	case "task_log":
		return journalLog
	case "checkpoint_save", "checkpoint_load":
		return journalCheckpoint
	}
	return notJournal
}

// RequestParamsLimit is the bound on the params of a request of method.
func RequestParamsLimit(method string) int {
	if method == "checkpoint_save" {
		return MaxCheckpointParams
	}
	return MaxRequestParams
}

// callState is the host's side of one running instance.
type callState struct {
	input     []byte
	output    []byte
	outputErr string // why the last output_write was refused
	reply     []byte
	hasReply  bool
	host      Host
	limits    Limits
	clock     *Clock       // the call's run-time budget; nil outside a call (checkVersion)
	logger    *slog.Logger // with clock: the plugin's logger

	logs, progress, requests int
	taskLogs, checkpoints    int                  // journal requests, each kind within its budget
	calls                    [NumHostCalls]uint32 // for the call's Report
	stdout, stderr           limitedBuffer

	memoryErr error // why no linear memory could be reserved

	hostCalls int  // host and WASI functions called, instantiation included
	tainted   bool // a WASI call may have changed state that restoring does not cover (wasi.go)
}

func newCallState(input []byte, h Host, l Limits) *callState {
	return &callState{input: input, host: h, limits: l}
}

type callStateKey struct{}

func withCallState(ctx context.Context, st *callState) context.Context {
	return context.WithValue(ctx, callStateKey{}, st)
}

func (st *callState) outOfMemory() bool {
	return bytes.Contains(st.stderr.buf, []byte("out of memory"))
}

// stderrTail returns the end of the guest's stderr, formatted to follow a message.
func (st *callState) stderrTail() string {
	b := bytes.TrimSpace(st.stderr.buf)
	if len(b) == 0 {
		return ""
	}
	if len(b) > stderrTailOnError {
		b = b[len(b)-stderrTailOnError:]
	}
	return "; its last output: " + strings.ToValidUTF8(string(b), "\uFFFD")
}

func hostModule(r wazero.Runtime) wazero.HostModuleBuilder {
	i32, f64 := api.ValueTypeI32, api.ValueTypeF64
	b := r.NewHostModuleBuilder(hostModuleName)
	fn := func(name string, f api.GoModuleFunc, params ...api.ValueType) {
		b.NewFunctionBuilder().WithGoModuleFunction(f, params, []api.ValueType{i32}).Export(name)
	}
	fn("input_len", wrap(inputLen))
	fn("input_read", wrap(inputRead), i32, i32)
	fn("output_write", wrap(outputWrite), i32, i32)
	fn("log", wrap(logLine), i32, i32, i32)
	fn("progress", wrap(progress), f64, f64, i32, i32)
	fn("request", wrap(request), i32, i32, i32, i32)
	fn("reply_read", wrap(replyRead), i32, i32)
	return b
}

// hostFunc is a host function's logic: it reads its parameters from stack and returns
// the i32 the guest receives.
type hostFunc func(ctx context.Context, st *callState, mod api.Module, stack []uint64) int32

func wrap(f hostFunc) api.GoModuleFunc {
	return func(ctx context.Context, mod api.Module, stack []uint64) {
		st, _ := ctx.Value(callStateKey{}).(*callState)
		if st == nil {
			stack[0] = api.EncodeI32(statusUnavailable)
			return
		}
		st.hostCalls++
		stack[0] = api.EncodeI32(f(ctx, st, mod, stack))
	}
}

// read copies guest memory [ptr, ptr+n) after checking n against limit.
func read(mod api.Module, ptr, n uint32, limit int) ([]byte, int32) {
	if uint64(n) > uint64(limit) {
		return nil, statusTooLarge
	}
	b, ok := mod.Memory().Read(ptr, n)
	if !ok {
		return nil, statusBadPointer
	}
	return bytes.Clone(b), statusOK
}

// readString reads a UTF-8 string from guest memory.
func readString(mod api.Module, ptr, n uint32, limit int) (string, int32) {
	b, status := read(mod, ptr, n, limit)
	if status != statusOK {
		return "", status
	}
	if !utf8.Valid(b) {
		return "", statusInvalid
	}
	return string(b), statusOK
}

// readObject reads a JSON object from guest memory.
func readObject(mod api.Module, ptr, n uint32, limit int) ([]byte, int32) {
	b, status := read(mod, ptr, n, limit)
	if status != statusOK {
		return nil, status
	}
	if !utf8.Valid(b) || !json.Valid(b) {
		return nil, statusInvalid
	}
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return nil, statusInvalid
	}
	return b, statusOK
}

// write copies src into guest memory at [ptr, ptr+min(n, len(src))).
func write(mod api.Module, ptr, n uint32, src []byte) int32 {
	if uint64(n) < uint64(len(src)) {
		src = src[:n]
	}
	if !mod.Memory().Write(ptr, src) {
		return statusBadPointer
	}
	return int32(len(src))
}

func inputLen(_ context.Context, st *callState, _ api.Module, _ []uint64) int32 {
	return int32(len(st.input))
}

func inputRead(_ context.Context, st *callState, mod api.Module, stack []uint64) int32 {
	return write(mod, api.DecodeU32(stack[0]), api.DecodeU32(stack[1]), st.input)
}

func outputWrite(_ context.Context, st *callState, mod api.Module, stack []uint64) int32 {
	ptr, n := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	b, status := read(mod, ptr, n, st.limits.MaxOutputBytes)
	switch status {
	case statusOK:
		st.output, st.outputErr = b, ""
	case statusTooLarge:
		st.output = nil
		st.outputErr = "output of " + formatBytes(int64(n)) + " exceeds the limit of " + formatBytes(int64(st.limits.MaxOutputBytes))
	case statusBadPointer:
		st.output = nil
		st.outputErr = "output_write was given a buffer outside the guest's memory"
	}
	return status
}

func logLine(ctx context.Context, st *callState, mod api.Module, stack []uint64) int32 {
	level := Level(api.DecodeI32(stack[0]))
	if level < LevelDebug || level > LevelError {
		return statusInvalid
	}
	if st.logs >= logCountLimit {
		return statusLimit
	}
	ptr, n := api.DecodeU32(stack[1]), api.DecodeU32(stack[2])
	shown := min(n, logLineLimit)
	b, ok := mod.Memory().Read(ptr, n)
	if !ok {
		return statusBadPointer
	}
	msg := strings.ToValidUTF8(string(b[:shown]), "\uFFFD")
	if shown < n {
		msg += "…[truncated]"
	}
	st.logs++
	st.calls[HostLog]++
	if st.host != nil {
		st.host.Log(ctx, level, msg)
	}
	return statusOK
}

func progress(ctx context.Context, st *callState, mod api.Module, stack []uint64) int32 {
	p, total := api.DecodeF64(stack[0]), api.DecodeF64(stack[1])
	if math.IsNaN(p) || math.IsInf(p, 0) || math.IsNaN(total) || math.IsInf(total, 0) {
		return statusInvalid
	}
	if st.progress >= progressLimit {
		return statusLimit
	}
	msg, status := readString(mod, api.DecodeU32(stack[2]), api.DecodeU32(stack[3]), progressMsgLimit)
	if status != statusOK {
		return status
	}
	st.progress++
	st.calls[HostProgress]++
	if st.host != nil {
		st.host.Progress(ctx, p, total, msg)
	}
	return statusOK
}

func request(ctx context.Context, st *callState, mod api.Module, stack []uint64) int32 {
	method, status := readString(mod, api.DecodeU32(stack[0]), api.DecodeU32(stack[1]), methodLimit)
	if status != statusOK {
		return status
	}
	var used *int
	budget := requestLimit
	switch journalKindOf(method) {
	case journalLog:
		used, budget = &st.taskLogs, MaxTaskLogRequests
	case journalCheckpoint:
		used, budget = &st.checkpoints, MaxCheckpointRequests
	default:
		used = &st.requests
	}
	if *used >= budget {
		return statusLimit
	}
	params, status := readObject(mod, api.DecodeU32(stack[2]), api.DecodeU32(stack[3]), RequestParamsLimit(method))
	if status != statusOK {
		return status
	}
	*used++
	st.calls[HostCallOf(method)]++
	st.reply, st.hasReply = nil, false
	if st.host == nil {
		return statusUnavailable
	}
	reply, err := st.waitFor(ctx, mod, method, params)
	if ctx.Err() != nil {
		// The call was cancelled or timed out while the guest waited: stop the
		// instance here, so that it never runs on with a reply it did not get.
		code := sys.ExitCodeContextCanceled
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			code = sys.ExitCodeDeadlineExceeded
		}
		_ = mod.CloseWithExitCode(ctx, code)
		panic(sys.NewExitError(code))
	}
	switch {
	case errors.Is(err, ErrUnsupported):
		return statusUnsupported
	case errors.Is(err, ErrUnavailable):
		return statusUnavailable
	case err != nil:
		st.reply, st.hasReply = errorReply(err), true
		return statusFailed
	case len(reply) > replyLimit:
		st.reply, st.hasReply = errorReply(errors.New("the reply exceeds 1 MiB")), true
		return statusFailed
	}
	st.reply, st.hasReply = reply, true
	return int32(len(reply))
}

// waitFor passes a request to the host. The call's clock stands still while the
// guest waits for a person's answer (WaitsForAnswer): that is not run time.
// The instance stays in memory meanwhile (in a task: parked in input_required), which
// is logged at debug level with its linear memory's size.
func (st *callState) waitFor(ctx context.Context, mod api.Module, method string, params []byte) ([]byte, error) {
	if st.clock != nil && WaitsForAnswer(method) {
		if st.logger != nil {
			var size uint32
			if mem := mod.Memory(); mem != nil {
				size = mem.Size()
			}
			st.logger.LogAttrs(ctx, slog.LevelDebug, "guest waits for an answer; its instance is parked",
				slog.String("method", method), slog.Uint64("memory_bytes", uint64(size)),
				slog.String("run_time_used", st.clock.Used().String()))
		}
		st.clock.Pause()
		defer st.clock.Resume()
	}
	return st.host.Request(ctx, method, params)
}

// errorReply is the reply after FAILED: {"error": ...}, at most 4 KiB (docs/ABI.md).
func errorReply(err error) []byte {
	msg := strings.ToValidUTF8(err.Error(), "\uFFFD")
	for {
		b, _ := json.Marshal(struct {
			Error string `json:"error"`
		}{msg})
		if len(b) <= errorReplyLimit {
			return b
		}
		msg = truncate(msg, len(msg)*3/4)
	}
}

func replyRead(_ context.Context, st *callState, mod api.Module, stack []uint64) int32 {
	if !st.hasReply {
		return statusNoData
	}
	return write(mod, api.DecodeU32(stack[0]), api.DecodeU32(stack[1]), st.reply)
}

func formatBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
