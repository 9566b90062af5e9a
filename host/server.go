package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/mcp-wasmhost/mcp-wasmhost/telemetry/metrics"
	"github.com/mcp-wasmhost/mcp-wasmhost/telemetry/trace"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/audit"
	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
)

// ProtocolVersions are the MCP versions offered, newest first. 2026-07-28 is stateless
// (server/discover, per-request capabilities; served on HTTP by a stateless handler
// beside the stateful one) and carries Tasks as the extension io.modelcontextprotocol/tasks.
var ProtocolVersions = []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// Options configures a Server. The zero value is valid.
type Options struct {
	Name    string        // serverInfo.name; "" means "mcp-wasmhost"
	Version string        // serverInfo.version; "" means "dev"
	Logger  *slog.Logger  // nil discards logs
	Tasks   tasks.Options // the task manager's settings; its OnChange is the server's
	// ResumableStreams keeps what Streamable HTTP sends for replay after
	// Last-Event-ID, opens every SSE response with a priming event id, and lets
	// guests close a call's stream early (close_stream). false means off (see
	// config.Server.ResumableStreams for why that is the default).
	ResumableStreams bool
	// MaxMessageBytes caps one message from a client: a stdio line or an HTTP POST
	// body. 0 means DefaultMaxMessageBytes.
	MaxMessageBytes int
	// BodyReadTimeout bounds reading one HTTP POST body. 0 means
	// DefaultBodyReadTimeout.
	BodyReadTimeout time.Duration
	// MaxSessions caps the live Streamable HTTP sessions. 0 means DefaultMaxSessions.
	MaxSessions int
	// SessionIdleTimeout closes a Streamable HTTP session that sent no request for
	// this long. 0 means DefaultSessionIdleTimeout.
	SessionIdleTimeout time.Duration
	// StateKey signs request states (mrtr.go); nil means a key drawn at start.
	// Servers that share it (LoadStateKey) accept each other's states.
	StateKey []byte
	// Nonces records accepted request states; nil means in this server's memory.
	// Servers that share StateKey share it too, so a state is accepted once.
	Nonces Nonces
	// Grants say which tools an HTTP caller with a verified identity may see and
	// call, and how a call of another is refused (auth.go). nil means every caller
	// may call every tool.
	Grants Grants
	// MaxParked caps the tasks of one authenticated identity waiting for its
	// input; while it has that many, its tools/call are refused (quota.go). 0
	// means DefaultMaxParked.
	MaxParked int
	// MaxToolConcurrency caps the running calls of one tool by one authenticated
	// identity (quota.go). 0 means DefaultMaxToolConcurrency.
	MaxToolConcurrency int
	// Audit gets the audit trail's lines (audit.go); nil means none.
	Audit *audit.Log
	// Metrics records requests, calls, tasks and the store; nil means none.
	Metrics *metrics.Metrics
	// Tracer makes a span of every request and its parts; nil means none.
	Tracer *trace.Tracer
	// ReportMeta adds each call's resource report to its result's _meta
	// (ReportMetaKey). false means metrics and the debug log only.
	ReportMeta bool
}

// Server serves a catalog of plugin tools over MCP.
type Server struct {
	mcp       *mcp.Server
	catalog   *plugins.Catalog
	resumable bool // Options.ResumableStreams
	tasks     *tasks.Manager
	logger    *slog.Logger
	states    *stateSigner
	httpReqs  httpRequests // the HTTP requests being served (httpreq.go)
	grants    Grants       // Options.Grants
	quotas    *quotas      // per identity (quota.go)
	audit     *audit.Log   // Options.Audit; nil: no audit trail

	auditStatuses taskStatuses // the last status written per task (audit.go)

	limits limits // Options' transport limits, defaults filled in

	gate     sync.Mutex // admitSession
	starting int        // stateful sessions admitted and not yet live

	statuses *statusQueue // notifications/tasks/status on their way (status.go)
	listens  listens      // the open subscriptions/listen (listen.go)
	logs     *logNotifier // notifications/resources/updated of task logs (tasklog.go)

	metrics    *metrics.Metrics // nil: none
	tracer     *trace.Tracer    // nil: none
	reportMeta bool

	mu      sync.Mutex
	streams map[*liftConn]bool // open stream connections, for notifications

	sdkLog    *slog.Logger      // the SDK's logger: warnings and errors only
	sdkNext   mcp.MethodHandler // the SDK's handler that middleware wraps
	noHotPath bool              // every request goes through the SDK (hotpath.go); for tests
	hotServed atomic.Int64      // requests the hot path answered
}

// New creates a server offering every tool in catalog.
func New(catalog *plugins.Catalog, opts Options) (*Server, error) {
	if opts.Name == "" {
		opts.Name = "mcp-wasmhost"
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{catalog: catalog, logger: opts.Logger, streams: map[*liftConn]bool{}, states: newStateSigner(opts.StateKey, opts.Nonces),
		resumable: opts.ResumableStreams, limits: limitsOf(opts), grants: opts.Grants, statuses: newStatusQueue(),
		quotas: newQuotas(opts), audit: opts.Audit, metrics: opts.Metrics, tracer: opts.Tracer, reportMeta: opts.ReportMeta}
	s.sdkLog = slog.New(minLevel{opts.Logger.Handler(), slog.LevelWarn})
	sopts := &mcp.ServerOptions{
		Logger:                    s.sdkLog,
		SupportedProtocolVersions: ProtocolVersions,
		Capabilities: &mcp.ServerCapabilities{
			Logging: &mcp.LoggingCapabilities{},
			Tools:   &mcp.ToolCapabilities{},
			// server/discover shows it; initialize swaps it for capabilities.tasks
			// when the client did not declare it (initializeResult).
			Extensions: map[string]any{extensionID: map[string]any{}},
		},
	}
	s.featureOptions(sopts)
	if s.grants != nil {
		sopts.SetCacheable = s.cacheScope
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: opts.Name, Version: opts.Version}, sopts)
	var err error
	if s.catalog, err = s.addTools(catalog); err != nil {
		return nil, err
	}
	s.registerFeatures()
	s.mcp.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		s.sdkNext = next // the SDK's own handler, for the hot path (hotpath.go)
		return s.middleware(next)
	})
	if err := s.registerTaskMethods(); err != nil {
		return nil, err
	}
	s.registerTaskLogs()
	s.logs = newLogNotifier(func(uri string) {
		if err := s.notifyResourceUpdated(context.Background(), uri); err != nil {
			s.logger.Debug("task log notification not delivered", "uri", uri, "err", err)
		}
	})
	// The manager starts last: it may resume tasks at once (tasklog.go), and they
	// run on the catalog and the SDK server above.
	topts := opts.Tasks
	topts.Logger = opts.Logger
	if (s.metrics != nil || s.tracer != nil) && topts.Store != nil {
		topts.Store = tasks.Observe(topts.Store, storeObserver{s.metrics, s.tracer})
	}
	topts.OnChange = s.taskChanged
	topts.OnLog = s.logs.grew
	topts.Resume = s.resumeTask
	s.tasks = tasks.NewManager(topts)
	go s.statuses.run(s.sendStatus) // joined in Close
	return s, nil
}

// addTools offers every tool of catalog through go-sdk and returns the catalog to
// serve. A tool go-sdk cannot offer (AddTool panics, for example on a schema it
// cannot marshal) refuses its plugin, logged with the reason, instead of ending the
// process; the other plugins are served.
func (s *Server) addTools(catalog *plugins.Catalog) (*plugins.Catalog, error) {
	kept, refused := offer(s.mcp, catalog, s.toolHandler)
	for _, r := range refused {
		s.logger.Error("plugin refused", "plugin", r.plugin, "err", r.err)
	}
	if len(refused) == 0 {
		return catalog, nil
	}
	return plugins.NewCatalog(kept)
}

// Vet reports the plugins of catalog that New would refuse because go-sdk cannot
// offer one of their tools, each error naming the plugin; for the check command.
func Vet(catalog *plugins.Catalog) []error {
	srv := mcp.NewServer(&mcp.Implementation{Name: "vet"}, nil)
	_, refused := offer(srv, catalog, func(*plugins.Tool) mcp.ToolHandler { return nil })
	var errs []error
	for _, r := range refused {
		errs = append(errs, fmt.Errorf("plugin %q: %w", r.plugin, r.err))
	}
	return errs
}

type refusal struct {
	plugin string
	err    error
}

// offer adds every tool of catalog to srv, plugin by plugin. A plugin with a tool srv
// refuses is taken out whole.
func offer(srv *mcp.Server, catalog *plugins.Catalog, handler func(*plugins.Tool) mcp.ToolHandler) ([]*plugins.Plugin, []refusal) {
	var kept []*plugins.Plugin
	var refused []refusal
	for _, p := range catalog.Plugins() {
		var added []string
		err := func() error {
			for _, t := range p.Tools {
				mt, err := mcpTool(t)
				if err != nil {
					return err
				}
				if err := addTool(srv, mt, handler(t)); err != nil {
					return err
				}
				added = append(added, t.Name)
			}
			return nil
		}()
		if err != nil {
			srv.RemoveTools(added...)
			refused = append(refused, refusal{p.Name, err})
			continue
		}
		kept = append(kept, p)
	}
	return kept, refused
}

// addTool is srv.AddTool, with its panic (how go-sdk refuses a tool) as the error.
// go-sdk v1.8.0 panics only in its checks, before it takes a lock or changes anything,
// so the server is as it was.
func addTool(srv *mcp.Server, t *mcp.Tool, h mcp.ToolHandler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("go-sdk refused tool %q: %v", t.Name, r)
		}
	}()
	srv.AddTool(t, h)
	return nil
}

// Close cancels the tasks still running and waits for them.
func (s *Server) Close(ctx context.Context) error {
	err := s.tasks.Close(ctx) // may still change tasks: their notifications go out first
	s.logs.close()
	return errors.Join(err, s.statuses.close(ctx))
}

func mcpTool(t *plugins.Tool) (*mcp.Tool, error) {
	mt := &mcp.Tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema}
	if t.OutputSchema != nil {
		mt.OutputSchema = t.OutputSchema
	}
	if t.Annotations != nil {
		mt.Annotations = new(mcp.ToolAnnotations)
		if err := json.Unmarshal(t.Annotations, mt.Annotations); err != nil {
			return nil, fmt.Errorf("tool %q: annotations: %w", t.Name, err)
		}
	}
	return mt, nil
}

// ServeStdio serves one client over a stdio pair (the process's stdin and stdout) until
// it disconnects or ctx ends. Lines that are not messages are answered with an error
// and skipped (stdioTransport); when in ends, the requests already read are answered
// first.
func (s *Server) ServeStdio(ctx context.Context, in io.ReadCloser, out io.WriteCloser) error {
	lt := &liftTransport{srv: s}
	// When the input ends, the connection's listens end with their results, which
	// the drain then writes like any answer.
	t := &stdioTransport{in: in, out: out, maxBytes: s.limits.maxMessageBytes, logger: s.logger,
		onEOF: func() { s.listens.endStream(lt.conn()) }}
	lt.inner = t
	// When ctx ends, the listens end with their results, written before the
	// connection closes (listenDrainTimeout at most).
	run, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	ended := context.AfterFunc(ctx, func() {
		s.EndListens()
		wait, cancel := context.WithTimeout(run, listenDrainTimeout)
		defer cancel()
		s.listens.wait(wait)
		stop()
	})
	defer ended()
	// As mcp.Server.Run, keeping the session for the hot path (hotpath.go).
	ss, err := s.mcp.Connect(run, lt, nil)
	if err != nil {
		return err
	}
	lt.conn().setSession(ss)
	closed := make(chan error, 1)
	go func() { closed <- ss.Wait() }()
	select {
	case <-run.Done():
		ss.Close()
		<-closed
		s.sdkLog.Error("server run cancelled", "error", run.Err())
		return run.Err()
	case err := <-closed:
		if err != nil {
			s.sdkLog.Error("server session ended with error", "error", err)
		}
		return err
	}
}

// Connect serves one client over a stream transport t (such as in-memory), as stdio is
// served: the client is the local user. It is how tests and embedders use other
// transports.
func (s *Server) Connect(ctx context.Context, t mcp.Transport) (*mcp.ServerSession, error) {
	lt := &liftTransport{inner: t, srv: s}
	ss, err := s.mcp.Connect(ctx, lt, nil)
	if err != nil {
		return nil, err
	}
	lt.conn().setSession(ss)
	return ss, nil
}

func (s *Server) addStream(c *liftConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.streams[c] = true
}

func (s *Server) removeStream(c *liftConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.streams, c)
}

// taskChanged sends notifications/tasks/status where the transport allows a server
// notification outside a request: on stream transports, whose tasks the local user
// owns, except to sessions on the Tasks extension, where this 2025-11-25 notification
// does not exist. The go-sdk has no API for it on Streamable HTTP; the spec makes it
// optional.
//
// The task manager calls it under the task's lock, in the order of the task's changes:
// it only queues the state; sendStatus writes it.
func (s *Server) taskChanged(t tasks.Task) {
	s.quotas.taskChanged(t)
	s.auditStatus(t)
	s.listens.taskChanged(t)
	s.metrics.TaskChanged(t)
	if t.Owner != localOwner {
		return
	}
	if !s.statuses.push(t) {
		s.logger.Debug("task status notifications dropped: the client does not read them", "queued", maxQueuedStatuses)
	}
}

// sendStatus writes notifications/tasks/status of t to every stream connection that
// takes it.
func (s *Server) sendStatus(t tasks.Task) {
	s.mu.Lock()
	conns := make([]*liftConn, 0, len(s.streams))
	for c := range s.streams {
		if !c.ext.Load() {
			conns = append(conns, c)
		}
	}
	s.mu.Unlock()
	for _, c := range conns {
		if err := c.notify(context.Background(), "notifications/tasks/status", toWire(t)); err != nil {
			s.logger.Debug("task status notification not sent", "task", t.ID, "err", err)
		}
	}
}

// HTTPHandler serves Streamable HTTP at /mcp. Requests arriving on a loopback address
// with a non-loopback Host header are refused (DNS-rebinding protection), and so are
// cross-origin browser requests.
//
// Two go-sdk handlers serve the one endpoint: a stateful one (sessions, for 2025-11-25
// and older) and a stateless one (2026-07-28, which the SDK serves only statelessly).
// A POST whose MCP-Protocol-Version header is 2026-07-28 or later, or that asks
// server/discover, goes to the stateless one; everything else to the stateful one.
func (s *Server) HTTPHandler() http.Handler {
	logger := slog.New(minLevel{s.logger.Handler(), slog.LevelWarn})
	get := func(*http.Request) *mcp.Server { return s.mcp }
	maxBody := int64(s.limits.maxMessageBytes)
	hopts := &mcp.StreamableHTTPOptions{Logger: logger, MaxRequestBodyBytes: maxBody,
		SessionTimeout: s.limits.sessionIdle}
	if s.resumable {
		hopts.EventStore = newEventStore()
	}
	stateful := mcp.NewStreamableHTTPHandler(get, hopts)
	// Stateless requests have no session to resume: no event store.
	stateless := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Logger: logger, Stateless: true,
		MaxRequestBodyBytes: maxBody})
	// The same, answering with application/json: for stateless calls that cannot
	// stream (plainCall).
	statelessJSON := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Logger: logger, Stateless: true,
		MaxRequestBodyBytes: maxBody, JSONResponse: true})
	mux := http.NewServeMux()
	mux.Handle("/mcp", http.NewCrossOriginProtection().Handler(s.sessionVersion(s.httpReqs.track(s.liftHTTP(stateful, stateless, statelessJSON)))))
	return mux
}

// toolHandler runs a plugin tool for one tools/call.
func (s *Server) toolHandler(t *plugins.Tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := s.checkArguments(ctx, t, req.Params.Arguments); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
		}
		c := callerFrom(ctx, req.Session)
		res, err := s.callSync(ctx, req, t, c, false)
		if err != nil {
			return nil, err
		}
		switch r := res.(type) {
		case *mcp.CallToolResult:
			return r, nil
		case *inputRequiredResult:
			return &mcp.CallToolResult{InputRequests: r.InputRequests, RequestState: r.RequestState}, nil
		}
		return nil, fmt.Errorf("tool %q: unexpected result %T", t.Name, res)
	}
}

// runTool runs a tool whose arguments were checked, directly or as a task's work.
// Every run logs one info line (tool, took, outcome) and one debug line with the sizes.
func (s *Server) runTool(ctx context.Context, t *plugins.Tool, args json.RawMessage, b *bridge) (res *mcp.CallToolResult, err error) {
	start := time.Now()
	if s.observing(ctx) {
		rep, outer := &sandbox.Report{}, ctx
		var run oteltrace.SpanID // the guest's run span: host calls' spans are its children
		ctx, run = s.tracer.GuestCall(ctx)
		ctx = sandbox.WithReport(ctx, rep)
		defer func() { s.callObserved(outer, t, start, rep, run, res, err) }()
	}
	out, err := t.Call(ctx, args, b)
	// A resumable task whose worker died under it starts again from its last
	// checkpoint, in a fresh instance, up to max_resumes times in all: the task's
	// one count, which resumes after a server stopped add to too (tasklog.go).
	for task := b.currentTask(); err != nil && task != nil && t.Resumable && restartable(err) && ctx.Err() == nil; {
		_, n, rerr := task.Restart(ctx)
		if rerr != nil {
			s.logger.WarnContext(ctx, "resumable task not started again", "tool", t.Name, "task", task.ID(), "resumes", n, "err", rerr)
			var ge *sandbox.GuestError
			var limit *tasks.ResumeLimitError
			if errors.As(err, &ge) && errors.As(rerr, &limit) {
				ge.Message = fmt.Sprintf("its worker process stopped under it, and it is not started again: %v (%s)", limit, ge.Message)
			}
			break
		}
		s.logger.WarnContext(ctx, "resumable task's guest stopped under it; starting it again from its last checkpoint",
			"tool", t.Name, "task", task.ID(), "resume", n, "err", err)
		out, err = t.Call(ctx, args, b)
	}
	b.onCancelled(ctx)
	took := time.Since(start)
	res, err = s.toolResult(ctx, t, out, err)
	s.logger.InfoContext(ctx, "call", "tool", t.Name, "took", took.Round(time.Microsecond), "outcome", runOutcome(ctx, res, err))
	s.logger.DebugContext(ctx, "call sizes", "tool", t.Name, "argument_bytes", len(args), "result_bytes", len(out))
	return res, err
}

// toolResult decodes a guest's result, or turns its failure into one.
func (s *Server) toolResult(ctx context.Context, t *plugins.Tool, out []byte, err error) (*mcp.CallToolResult, error) {
	if err != nil {
		return s.failure(ctx, t, err)
	}
	if res, ok := fastToolResult(out); ok {
		return res, nil
	}
	res := &mcp.CallToolResult{}
	if err := json.Unmarshal(out, res); err != nil {
		return s.failure(ctx, t, &sandbox.GuestError{Kind: sandbox.KindOutput,
			Message: fmt.Sprintf("tool %q returned a malformed result: %v", t.Name, err)})
	}
	return res, nil
}

// runOutcome names how a run ended, for its log line: "ok", "tool_error" (a result
// with isError, from the tool or from a guest failure), "cancelled", or "error" (a
// JSON-RPC error: a protocol error, a busy plugin, a host failure). (outcomeOf names
// a request's outcome for the audit line.)
func runOutcome(ctx context.Context, res *mcp.CallToolResult, err error) string {
	switch {
	case ctx.Err() != nil:
		return "cancelled"
	case err != nil:
		return "error"
	case res.IsError:
		return "tool_error"
	}
	return "ok"
}

// failure turns a guest failure into an isError result; a guest's protocol error
// becomes that JSON-RPC error; anything else stays an error.
func (s *Server) failure(ctx context.Context, t *plugins.Tool, err error) (*mcp.CallToolResult, error) {
	var pe *plugins.ProtocolError
	if errors.As(err, &pe) {
		return nil, &jsonrpc.Error{Code: pe.Code, Message: pe.Message, Data: pe.Data}
	}
	if busy := busyError(ctx, s, err); busy != nil {
		return nil, busy
	}
	var ge *sandbox.GuestError
	if !errors.As(err, &ge) {
		s.logger.ErrorContext(ctx, "tool call failed", "tool", t.Name, "err", err)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	s.logger.WarnContext(ctx, "guest failed", "tool", t.Name, "kind", ge.Kind, "err", ge.Message)
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: ge.Message}}}, nil
}

// minLevel passes on records at or above min: the SDK logs every session's start and
// end at info, which would drown the server's own log.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(attrs []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(attrs), h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.min}
}
