package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/telemetry/trace"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
	"github.com/mcp-wasmhost/mcp-wasmhost/worker"
)

// bridge carries one call's guest requests to the MCP session that made the call.
//
// A request for user input (elicit, elicit_all, sample) goes one of three ways:
//   - inside a task: the task moves to input_required until the client answers, by
//     tasks/result or a pushed request on 2025-11-25 (push), by tasks/update on the
//     Tasks extension;
//   - in a synchronous call on a stateless session (2026-07-28), where the server
//     cannot send requests, or on the extension's wire: from the answers the client
//     gave in earlier rounds, in order (mrtr), and past them the call ends with
//     InputRequiredResult;
//   - otherwise straight to the client, as a request on the session.
type bridge struct {
	session       *mcp.ServerSession           // nil for a resumed task (tasklog.go)
	tool          *plugins.Tool                // the tool called, or nil for a resource read, prompt or completion
	plugin        *plugins.Plugin              // with a nil tool: the plugin that serves the request
	label         string                       // with a nil tool: what the request is, for logs
	closeStream   func(mcp.CloseSSEStreamArgs) // nil where the call has no resumable HTTP stream
	logger        *slog.Logger
	progressToken any
	caps          *mcp.ClientCapabilities // the client's, for this request
	owner         string                  // the task's owner, with task
	srv           *Server                 // with task or startTask
	push          bool                    // with task: send input requests to the client at once (2025-11-25)
	mrtr          *mrtrRun                // in a synchronous call on a stateless session
	// startTask, if set, moves the call into a task when the guest asks to (the "task"
	// request) and returns the task's handle.
	startTask func() (*tasks.Handle, error)

	mu           sync.Mutex
	task         *tasks.Handle // nil outside a task
	lastProgress float64
	sentProgress bool
	httpRequests int    // "http" requests made so far
	onCancel     []byte // the "http_on_cancel" request's params, nil if none

	rec *callRecord // the audit line's host calls; nil: no audit trail
}

// mrtrRun is the multi round-trip state of one synchronous run of a guest. Answers
// are found by key: a guest's "input" request names its own keys, and its other
// requests for input (elicit, elicit_all, sample) get "input-1", "input-2", ... in
// the order it makes them, which is the same on every run of the same call.
type mrtrRun struct {
	cancel context.CancelFunc // ends the run when the guest asks past the answers

	mu      sync.Mutex
	answers map[string]json.RawMessage // what the client answered so far, by key
	used    map[string]json.RawMessage // the answers this run took
	seq     int                        // unkeyed requests so far
	pending []pendingInput             // what the guest asked that has no answer yet
	bad     error                      // an answer that is not what its request asks for
}

// pendingInput is a request for input that ends a synchronous round.
type pendingInput struct {
	method string
	params mcp.InputRequest
	key    string // the guest's key ("input" request), or "" for one in asking order
}

// errInputPending stops a guest whose call must first ask the client for input.
var errInputPending = errors.New("the call needs input from the client first; it will run again with the answers")

// take returns the answers to reqs, or records those not answered yet as pending
// and ends the run. An answer of the wrong shape (a roots result for an
// elicitation, say) ends the run too: the call is answered -32602.
func (r *mrtrRun) take(reqs []pendingInput) ([]json.RawMessage, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.used == nil {
		r.used = map[string]json.RawMessage{}
	}
	out := make([]json.RawMessage, len(reqs))
	var missing []pendingInput
	for i, q := range reqs {
		if q.key == "" {
			r.seq++
			q.key = fmt.Sprintf("input-%d", r.seq)
		}
		a, ok := r.answers[q.key]
		if !ok {
			missing = append(missing, q)
			continue
		}
		if err := checkAnswer(q.method, a); err != nil && r.bad == nil {
			r.bad = invalidParams("inputResponses[%q]: %v", q.key, err)
		}
		out[i] = a
		r.used[q.key] = a
	}
	if r.bad != nil {
		r.cancel()
		return nil, r.bad
	}
	if missing == nil && r.pending == nil {
		return out, nil
	}
	if r.pending == nil {
		r.pending = missing
	}
	r.cancel()
	return nil, errInputPending
}

// asked returns the pending requests and the answers the run took before them, or
// nil; and an answer of the wrong shape, if any.
func (r *mrtrRun) asked() ([]pendingInput, map[string]json.RawMessage, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bad != nil {
		return nil, nil, r.bad
	}
	if r.pending == nil {
		return nil, nil, nil
	}
	return r.pending, r.used, nil
}

// checkAnswer reports whether raw is a result of method: an ElicitResult with a known
// action, a CreateMessageResult with a role and content, a ListRootsResult with
// roots.
func checkAnswer(method string, raw json.RawMessage) error {
	switch method {
	case "elicitation/create":
		_, err := toElicitReply(raw)
		return err
	case "sampling/createMessage":
		var m struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(raw, &m) != nil || m.Role == "" || len(m.Content) == 0 {
			return errors.New("a sampling/createMessage result needs role and content")
		}
	case "roots/list":
		var m struct {
			Roots []struct {
				URI string `json:"uri"`
			} `json:"roots"`
		}
		if json.Unmarshal(raw, &m) != nil || m.Roots == nil {
			return errors.New("a roots/list result needs a roots array")
		}
		for i, r := range m.Roots {
			if r.URI == "" {
				return fmt.Errorf("roots[%d] has no uri", i)
			}
		}
	}
	return nil
}

func (b *bridge) currentTask() *tasks.Handle {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.task
}

var (
	_ sandbox.Host    = (*bridge)(nil)
	_ plugins.Waiter  = (*bridge)(nil)
	_ worker.Affinity = (*bridge)(nil)
)

// Waiting shows in a task's statusMessage that its call waits for one of the plugin's
// slots (msg), or no longer does (""). A synchronous call has no status to show it in.
func (b *bridge) Waiting(_ context.Context, msg string) {
	if t := b.currentTask(); t != nil {
		t.Note(msg)
	}
}

// Affinity keeps a client's calls in one of the plugin's worker processes, apart from
// other clients' where the plugin has several: a call that gets its worker killed
// takes down only the calls sharing it. The local user (stdio) is the only client, so
// its calls spread over the workers by load.
func (b *bridge) Affinity() string {
	if b.owner == localOwner {
		return ""
	}
	return b.owner
}

// name is what the guest serves, for logs: the tool, or the label of the request.
func (b *bridge) name() string {
	if b.tool != nil {
		return b.tool.Name
	}
	return b.label
}

// servedBy is the plugin the guest is.
func (b *bridge) servedBy() *plugins.Plugin {
	if b.tool != nil {
		return b.tool.Plugin
	}
	return b.plugin
}

var mcpLevels = map[sandbox.Level]mcp.LoggingLevel{
	sandbox.LevelDebug:   "debug",
	sandbox.LevelInfo:    "info",
	sandbox.LevelNotice:  "notice",
	sandbox.LevelWarning: "warning",
	sandbox.LevelError:   "error",
}

var slogLevels = map[sandbox.Level]slog.Level{
	sandbox.LevelDebug:   slog.LevelDebug,
	sandbox.LevelInfo:    slog.LevelInfo,
	sandbox.LevelNotice:  slog.LevelInfo,
	sandbox.LevelWarning: slog.LevelWarn,
	sandbox.LevelError:   slog.LevelError,
}

func (b *bridge) Log(ctx context.Context, level sandbox.Level, msg string) {
	b.logger.Log(ctx, slogLevels[level], "guest log", "tool", b.name(), "msg", msg)
	if b.session == nil {
		return // a resumed task: the session that asked for it is gone
	}
	// The session drops messages below the level the client set with logging/setLevel.
	err := b.session.Log(ctx, &mcp.LoggingMessageParams{Level: mcpLevels[level], Logger: b.name(), Data: msg})
	if err != nil {
		b.logger.DebugContext(ctx, "log notification not delivered", "tool", b.name(), "err", err)
	}
}

func (b *bridge) Progress(ctx context.Context, progress, total float64, msg string) {
	if b.progressToken == nil {
		return
	}
	b.mu.Lock()
	// MCP requires progress to increase; a report that does not is dropped.
	if b.sentProgress && progress <= b.lastProgress {
		b.mu.Unlock()
		return
	}
	b.lastProgress, b.sentProgress = progress, true
	b.mu.Unlock()
	p := &mcp.ProgressNotificationParams{ProgressToken: b.progressToken, Progress: progress, Message: msg}
	if total > 0 {
		p.Total = total
	}
	if err := b.session.NotifyProgress(ctx, p); err != nil {
		b.logger.DebugContext(ctx, "progress notification not delivered", "tool", b.name(), "err", err)
	}
}

func (b *bridge) Request(ctx context.Context, method string, params []byte) ([]byte, error) {
	if b.srv == nil || b.srv.tracer == nil {
		return b.request(ctx, method, params)
	}
	name, known := hostCallSpans[method]
	if !known {
		name = "host call other"
	}
	sctx, span := b.srv.tracer.Start(ctx, name)
	reply, err := b.request(sctx, method, params)
	if span != nil {
		if errors.Is(err, sandbox.ErrUnsupported) || errors.Is(err, sandbox.ErrUnavailable) {
			trace.End(span, "unavailable", nil)
		} else {
			trace.End(span, "", err)
		}
	}
	return reply, err
}

// hostCallSpans names the span of each request a guest may make (a method of its
// own is "other": a guest does not choose span names).
var hostCallSpans = map[string]string{
	"elicit": "host call elicit", "elicit_all": "host call elicit_all", "input": "host call input", "sample": "host call sample",
	"task": "host call task", "resource_updated": "host call resource_updated",
	"close_stream": "host call close_stream", "http": "host call http", "http_on_cancel": "host call http_on_cancel",
	"task_log": "host call task_log", "checkpoint_save": "host call checkpoint_save", "checkpoint_load": "host call checkpoint_load",
}

func (b *bridge) request(ctx context.Context, method string, params []byte) ([]byte, error) {
	switch method {
	case "elicit":
		return b.elicit(ctx, params)
	case "elicit_all":
		return b.elicitAll(ctx, params)
	case "input":
		return b.input(ctx, params)
	case "sample":
		return b.sample(ctx, params)
	case "task":
		return b.moveToTask()
	case "resource_updated":
		return b.resourceUpdated(ctx, params)
	case "close_stream":
		return b.closeStreamRequest(params)
	case "http":
		return b.httpRequest(ctx, params)
	case "http_on_cancel":
		return b.httpOnCancel(params)
	case "task_log":
		return b.taskLog(ctx, params)
	case "checkpoint_save":
		return b.checkpointSave(ctx, params)
	case "checkpoint_load":
		return b.checkpointLoad(ctx, params)
	}
	return nil, sandbox.ErrUnsupported
}

// moveToTask serves the "task" request: the call continues as a task where the
// server may start one now, and nothing changes elsewhere.
func (b *bridge) moveToTask() ([]byte, error) {
	if b.startTask == nil || b.currentTask() != nil {
		return []byte(`{"started":false}`), nil
	}
	h, err := b.startTask()
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.task, b.mrtr = h, nil
	b.mu.Unlock()
	return []byte(`{"started":true}`), nil
}

// ask sends requests for input the way this call can (see bridge) and returns the
// answers in order. Several requests are pending at once. The wait ends after the
// plugin's input_timeout, in a task at the latest when its ttl does: the guest's
// request then fails with "no answer within ...", which the task's statusMessage shows.
func (b *bridge) ask(ctx context.Context, reqs []pendingInput) ([]json.RawMessage, error) {
	for _, r := range reqs {
		b.rec.input(r.method)
	}
	b.mu.Lock()
	task, mrtr := b.task, b.mrtr
	b.mu.Unlock()
	if mrtr != nil && task == nil {
		return mrtr.take(reqs)
	}
	limit := b.inputTimeout(ctx, task)
	wctx, cancel := context.WithTimeoutCause(ctx, limit, errNoAnswer)
	defer cancel()
	var out []json.RawMessage
	var err error
	if task != nil {
		out, err = b.askInTask(wctx, task, reqs)
	} else {
		out, err = b.askClient(wctx, reqs)
	}
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(wctx), errNoAnswer) {
		msg := "no answer within " + shortDuration(limit)
		b.logger.InfoContext(ctx, "request for input ended unanswered", "tool", b.name(), "limit", limit)
		if task != nil {
			task.Note(msg)
		}
		return nil, errors.New(msg)
	}
	return out, err
}

// errNoAnswer ends a wait for input that took longer than input_timeout.
var errNoAnswer = errors.New("no answer within the input timeout")

// inputTimeout is how long one wait for input may last: the plugin's input_timeout,
// and in a task no longer than its ttl.
func (b *bridge) inputTimeout(ctx context.Context, task *tasks.Handle) time.Duration {
	limit := plugins.DefaultInputTimeout
	if p := b.servedBy(); p != nil && p.InputTimeout > 0 {
		limit = p.InputTimeout
	}
	if task != nil {
		if t, err := b.srv.tasks.Get(ctx, b.owner, task.ID()); err == nil && t.TTL > 0 {
			limit = min(limit, t.TTL)
		}
	}
	return limit
}

// shortDuration writes d as a person would: "1h", "90s" as "1m30s", "2s".
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// askClient sends the requests straight to the client, one after another.
func (b *bridge) askClient(ctx context.Context, reqs []pendingInput) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, len(reqs))
	for i, r := range reqs {
		var res any
		var err error
		switch p := r.params.(type) {
		case *mcp.ElicitParams:
			res, err = b.session.Elicit(ctx, p)
		case *mcp.CreateMessageParams:
			res, err = b.session.CreateMessage(ctx, p)
		case *mcp.ListRootsParams:
			res, err = b.session.ListRoots(ctx, p)
		default:
			err = fmt.Errorf("no way to send %s", r.method)
		}
		if err != nil {
			return nil, err
		}
		if out[i], err = json.Marshal(res); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// askInTask registers the requests with the task, all at once, and waits for every
// answer.
func (b *bridge) askInTask(ctx context.Context, task *tasks.Handle, reqs []pendingInput) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, len(reqs))
	errs := make([]error, len(reqs))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for i, r := range reqs {
		if b.push {
			related := mcp.Meta{relatedTaskKey: map[string]string{"taskId": task.ID()}}
			switch p := r.params.(type) {
			case *mcp.ElicitParams:
				p.Meta = related
			case *mcp.CreateMessageParams:
				p.Meta = related
			case *mcp.ListRootsParams:
				p.Meta = related
			}
		}
		raw, err := json.Marshal(r.params)
		if err != nil {
			return nil, err
		}
		var deliver func(*tasks.Input)
		if b.push {
			deliver = func(in *tasks.Input) { go b.srv.deliverInput(ctx, b.session, b.owner, task.ID(), in) }
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = task.Ask(ctx, r.method, raw, deliver)
			if errs[i] != nil {
				cancel() // one failed: the rest are moot
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// sample asks the client's model for a completion (sampling/createMessage).
func (b *bridge) sample(ctx context.Context, params []byte) ([]byte, error) {
	var p mcp.CreateMessageParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, fmt.Errorf("sample params: %w", err)
	}
	if len(p.Messages) == 0 || p.MaxTokens <= 0 {
		return nil, errors.New("sample params: messages and a positive maxTokens are required")
	}
	if b.caps == nil || b.caps.Sampling == nil {
		return nil, sandbox.ErrUnavailable
	}
	p.Meta = nil // _meta is the host's to set, never the guest's
	out, err := b.ask(ctx, []pendingInput{{method: "sampling/createMessage", params: &p}})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// elicitQuestion is the guest's form of one elicitation.
type elicitQuestion struct {
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
}

func (q elicitQuestion) params() (*mcp.ElicitParams, error) {
	if q.Message == "" {
		return nil, errors.New("message is required")
	}
	ep := &mcp.ElicitParams{Mode: "form", Message: q.Message}
	if len(q.RequestedSchema) > 0 {
		var schema map[string]any
		if err := json.Unmarshal(q.RequestedSchema, &schema); err != nil {
			return nil, fmt.Errorf("requestedSchema: %w", err)
		}
		ep.RequestedSchema = schema
	}
	return ep, nil
}

// elicitReply is the guest's form of an answer.
type elicitReply struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

func toElicitReply(raw json.RawMessage) (elicitReply, error) {
	var res mcp.ElicitResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return elicitReply{}, fmt.Errorf("elicitation reply: %w", err)
	}
	switch res.Action {
	case "accept", "decline", "cancel":
	default:
		return elicitReply{}, fmt.Errorf("elicitation reply: action %q is not accept, decline or cancel", res.Action)
	}
	return elicitReply{res.Action, res.Content}, nil
}

func (b *bridge) elicitable() bool {
	return b.caps != nil && b.caps.Elicitation != nil
}

func (b *bridge) elicit(ctx context.Context, params []byte) ([]byte, error) {
	var q elicitQuestion
	if err := json.Unmarshal(params, &q); err != nil {
		return nil, fmt.Errorf("elicit params: %w", err)
	}
	ep, err := q.params()
	if err != nil {
		return nil, fmt.Errorf("elicit params: %w", err)
	}
	if !b.elicitable() {
		return nil, sandbox.ErrUnavailable
	}
	out, err := b.ask(ctx, []pendingInput{{method: "elicitation/create", params: ep}})
	if err != nil {
		return nil, err
	}
	r, err := toElicitReply(out[0])
	if err != nil {
		return nil, err
	}
	return json.Marshal(r)
}

// maxElicitAll bounds the questions of one elicit_all.
const maxElicitAll = 16

// elicitAll asks several questions at once (elicit_all): the client sees them pending
// together. The answers come back in the order of the questions.
func (b *bridge) elicitAll(ctx context.Context, params []byte) ([]byte, error) {
	var p struct {
		Requests []elicitQuestion `json:"requests"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, fmt.Errorf("elicit_all params: %w", err)
	}
	if len(p.Requests) == 0 || len(p.Requests) > maxElicitAll {
		return nil, fmt.Errorf("elicit_all params: requests must hold 1-%d questions, not %d", maxElicitAll, len(p.Requests))
	}
	reqs := make([]pendingInput, len(p.Requests))
	for i, q := range p.Requests {
		ep, err := q.params()
		if err != nil {
			return nil, fmt.Errorf("elicit_all params: requests[%d]: %w", i, err)
		}
		reqs[i] = pendingInput{method: "elicitation/create", params: ep}
	}
	if !b.elicitable() {
		return nil, sandbox.ErrUnavailable
	}
	out, err := b.ask(ctx, reqs)
	if err != nil {
		return nil, err
	}
	var res struct {
		Results []elicitReply `json:"results"`
	}
	for _, raw := range out {
		r, err := toElicitReply(raw)
		if err != nil {
			return nil, err
		}
		res.Results = append(res.Results, r)
	}
	return json.Marshal(res)
}
