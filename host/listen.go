package host

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
)

// subscriptions/listen (MCP 2026-07-28, SEP-2575) is a long-lived request whose
// response stream carries the notifications a client asked for, and whose result
// comes only when the server ends it (at shutdown). The Tasks extension adds
// notifications.taskIds: notifications/tasks with the full task, as tasks/get returns
// it, at every stored state.
//
// go-sdk v1.8.0 serves listens itself, but knows nothing of taskIds (its decoder
// drops them), keeps one subscription per session per notification type, so two
// listens on one stdio connection overwrite each other's subscription ID, and ends a
// listen only when its request is cancelled, so an HTTP server's graceful shutdown
// waits out its timeout and then cuts the stream without the result. The host
// therefore serves every listen that reaches it through its transports (stdio,
// Connect, HTTPHandler), demultiplexed by subscription ID; go-sdk's handler is left
// only the listens of transports the host does not wrap. The honoured subset never
// includes list_changed: this server's lists are fixed for the life of its
// configuration, so it declares no listChanged and sends none.
//
// The transport layer hands the request what go-sdk would drop (listenLift, under
// listenMetaKey): the request's id, which is the subscription ID; taskIds as sent; and
// the token of the stream the listen's notifications go on (a stdio connection, or
// the HTTP response of this one request). The first message on that stream is
// notifications/subscriptions/acknowledged with the honoured subset, then each task's
// current state, then every later state in the order stored (Server.taskChanged) and
// every resource update, each with _meta[subscriptionId]. A listen ends without an
// answer when the client cancels it or goes away, and with the result
// {resultType: "complete"} when the server shuts down (EndListens) or when the client
// reads too slowly for its queue (it may listen again and read the tasks' states with
// tasks/get).

// Limits on listens.
const (
	// MaxListensPerRequester bounds the open listens of one requester (the local user
	// on stdio, an identity, or an anonymous client's network source). Past it a
	// listen is refused: -32000, and HTTP 429 with Retry-After.
	MaxListensPerRequester = 16
	// MaxListens bounds the open listens of the whole server.
	MaxListens = 1024
	// MaxListenSubjects bounds the task IDs and resource URIs one listen names.
	MaxListenSubjects = 256
	// maxListenQueue bounds the notifications waiting for one listen's stream; a
	// listen whose queue overflows ends with its result.
	maxListenQueue = 256
	// listenWriteTimeout bounds writing one notification to a listen's stream.
	listenWriteTimeout = 10 * time.Second
	// listenDrainTimeout bounds how long ServeStdio waits, at shutdown, for the final
	// results of its listens to be written.
	listenDrainTimeout = 2 * time.Second
)

// listenMetaKey is where the transport layer puts a listen's listenLift. A
// client-supplied value under this key is deleted first.
const listenMetaKey = "io.github.mcp-wasmhost/listen"

// subscriptionIDKey tags every message of a listen with its subscription ID.
const subscriptionIDKey = "io.modelcontextprotocol/subscriptionId"

// listenLift is what the transport layer knows of a listen and go-sdk would drop.
type listenLift struct {
	ID      json.RawMessage `json:"id"`                // the request's JSON-RPC id: the subscription ID
	TaskIDs json.RawMessage `json:"taskIds,omitempty"` // notifications.taskIds as sent; absent when not sent
	Stream  string          `json:"stream"`            // names the stream it is served on (listens.stream)
}

// liftListen rewrites subscriptions/listen params: the request's id, its
// notifications.taskIds and the stream token go into params._meta[listenMetaKey].
// Params that are not a JSON object are returned unchanged, for go-sdk to refuse.
func liftListen(params, id json.RawMessage, stream string) json.RawMessage {
	var p map[string]json.RawMessage
	if len(params) == 0 {
		p = map[string]json.RawMessage{}
	} else if err := json.Unmarshal(params, &p); err != nil || p == nil {
		return params
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := p["_meta"]; ok {
		if err := json.Unmarshal(raw, &meta); err != nil || meta == nil {
			return params
		}
	}
	delete(meta, listenMetaKey)
	l := listenLift{ID: id, Stream: stream}
	var n map[string]json.RawMessage
	if json.Unmarshal(p["notifications"], &n) == nil {
		l.TaskIDs = n["taskIds"]
	}
	b, err := json.Marshal(l)
	if err != nil {
		return params
	}
	meta[listenMetaKey] = b
	if p["_meta"], err = json.Marshal(meta); err != nil {
		return params
	}
	if b, err = json.Marshal(p); err != nil {
		return params
	}
	return b
}

// listenStream is where a listen's notifications are written: a stream connection
// (*liftConn) or one HTTP response (*sseStream).
type listenStream interface {
	notify(ctx context.Context, method string, params any) error
}

// listens is the server's registry of listens. The zero value is ready.
type listens struct {
	mu       sync.Mutex
	streams  map[string]listenStream
	tokens   map[listenStream]string
	byTask   map[string]map[*listener]bool       // task ID -> listeners naming it
	byURI    map[string]map[*listener]bool       // resource URI -> listeners naming it
	onStream map[listenStream]map[*listener]bool // stream -> listeners on it
	ended    map[listenStream]bool               // streams whose listens end (endStream)
	open     map[string]int                      // requester -> open listens
	total    int
	answers  map[listenStream]map[string]bool // results due on stream connections: id -> mute (cancelled: not written)
	ending   chan struct{}                    // closed by end
	changed  chan struct{}                    // closed and renewed when total or answers shrink
	endOnce  sync.Once
}

func (ls *listens) initLocked() {
	if ls.streams == nil {
		ls.streams = map[string]listenStream{}
		ls.tokens = map[listenStream]string{}
		ls.byTask = map[string]map[*listener]bool{}
		ls.byURI = map[string]map[*listener]bool{}
		ls.onStream = map[listenStream]map[*listener]bool{}
		ls.ended = map[listenStream]bool{}
		ls.open = map[string]int{}
		ls.answers = map[listenStream]map[string]bool{}
		ls.ending = make(chan struct{})
		ls.changed = make(chan struct{})
	}
}

// token returns the token of st, registering it.
func (ls *listens) token(st listenStream) string {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.initLocked()
	if tok, ok := ls.tokens[st]; ok {
		return tok
	}
	tok := rand.Text() // unguessable, though only the transport layer ever sets one
	ls.streams[tok] = st
	ls.tokens[st] = tok
	return tok
}

// drop forgets st.
func (ls *listens) drop(st listenStream) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if tok, ok := ls.tokens[st]; ok {
		delete(ls.tokens, st)
		delete(ls.streams, tok)
	}
	delete(ls.ended, st)
	if len(ls.answers[st]) > 0 {
		delete(ls.answers, st)
		ls.signalLocked()
	}
}

func (ls *listens) stream(tok string) listenStream {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.streams[tok]
}

// reserve counts a new listen of requester, within the limits; release uncounts it.
func (ls *listens) reserve(requester string) (release func(), err error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.initLocked()
	switch {
	case ls.open[requester] >= MaxListensPerRequester:
		return nil, fmt.Errorf("too many open listens: at most %d per requester (MaxListensPerRequester); end one first", MaxListensPerRequester)
	case ls.total >= MaxListens:
		return nil, fmt.Errorf("too many open listens: the server keeps at most %d (MaxListens); retry later", MaxListens)
	}
	ls.open[requester]++
	ls.total++
	var once sync.Once
	return func() {
		once.Do(func() {
			ls.mu.Lock()
			defer ls.mu.Unlock()
			if ls.open[requester]--; ls.open[requester] == 0 {
				delete(ls.open, requester)
			}
			ls.total--
			ls.signalLocked()
		})
	}, nil
}

func (ls *listens) signalLocked() {
	close(ls.changed)
	ls.changed = make(chan struct{})
}

// endCh is closed when the server ends its listens.
func (ls *listens) endCh() <-chan struct{} {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.initLocked()
	return ls.ending
}

// end makes every listen, open or to come, end with its result.
func (ls *listens) end() {
	ls.mu.Lock()
	ls.initLocked()
	ls.mu.Unlock()
	ls.endOnce.Do(func() { close(ls.ending) })
}

// wait waits until no listen is open and every result due on a stream connection
// is written, or ctx ends.
func (ls *listens) wait(ctx context.Context) {
	for {
		ls.mu.Lock()
		ls.initLocked()
		due := 0
		for _, ids := range ls.answers {
			due += len(ids)
		}
		idle, changed := ls.total == 0 && due == 0, ls.changed
		ls.mu.Unlock()
		if idle {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// due records that the response to listen id on st is about to be written (mute
// false) or must not be (mute true: it was cancelled).
func (ls *listens) due(st listenStream, id string, mute bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.initLocked()
	if _, ok := ls.tokens[st]; !ok {
		return
	}
	if ls.answers[st] == nil {
		ls.answers[st] = map[string]bool{}
	}
	ls.answers[st][id] = mute
}

// answered is told of every response written on st: it reports whether the
// response must be dropped (a cancelled listen's).
func (ls *listens) answered(st listenStream, id string) (mute bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ids := ls.answers[st]
	mute, ok := ids[id]
	if ok {
		delete(ids, id)
		if len(ids) == 0 {
			delete(ls.answers, st)
		}
		ls.signalLocked()
	}
	return mute
}

func (ls *listens) add(l *listener) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.initLocked()
	if ls.onStream[l.st] == nil {
		ls.onStream[l.st] = map[*listener]bool{}
	}
	ls.onStream[l.st][l] = true
	if ls.ended[l.st] {
		l.endOnce.Do(func() { close(l.end) })
	}
	for id := range l.tasks {
		if ls.byTask[id] == nil {
			ls.byTask[id] = map[*listener]bool{}
		}
		ls.byTask[id][l] = true
	}
	for uri := range l.uris {
		if ls.byURI[uri] == nil {
			ls.byURI[uri] = map[*listener]bool{}
		}
		ls.byURI[uri][l] = true
	}
}

func (ls *listens) remove(l *listener) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if delete(ls.onStream[l.st], l); len(ls.onStream[l.st]) == 0 {
		delete(ls.onStream, l.st)
	}
	for id := range l.tasks {
		if delete(ls.byTask[id], l); len(ls.byTask[id]) == 0 {
			delete(ls.byTask, id)
		}
	}
	for uri := range l.uris {
		if delete(ls.byURI[uri], l); len(ls.byURI[uri]) == 0 {
			delete(ls.byURI, uri)
		}
	}
}

// endStream makes the listens on st, open or to come, end with their results.
func (ls *listens) endStream(st listenStream) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if _, ok := ls.tokens[st]; !ok {
		return // no listen was ever opened on it
	}
	ls.ended[st] = true
	for l := range ls.onStream[st] {
		l.endOnce.Do(func() { close(l.end) })
	}
}

// taskChanged queues t for the listeners of its owner that name it. The task manager
// calls it (through Server.taskChanged) under the task's lock, in the order of the
// task's changes; it never blocks.
func (ls *listens) taskChanged(t tasks.Task) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for l := range ls.byTask[t.ID] {
		if l.owner == t.Owner {
			l.push(listenItem{task: &t})
		}
	}
}

// resourceUpdated queues a resource update for the listeners that name uri.
func (ls *listens) resourceUpdated(uri string) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for l := range ls.byURI[uri] {
		l.push(listenItem{uri: uri})
	}
}

// listener is one open listen.
type listener struct {
	st       listenStream
	end      chan struct{} // closed when its stream ends (endStream)
	endOnce  sync.Once
	owner    string
	tasks    map[string]bool
	uris     map[string]bool
	queue    chan listenItem
	overflow chan struct{} // closed when the queue overflowed
	once     sync.Once
}

// listenItem is one notification due: a task's state or a resource update.
type listenItem struct {
	task *tasks.Task
	uri  string
}

func (l *listener) push(it listenItem) {
	select {
	case l.queue <- it:
	default:
		l.once.Do(func() { close(l.overflow) })
	}
}

// listenFilter is a listen's notifications, as asked and as acknowledged.
type listenFilter struct {
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
	TaskIDs               []string `json:"taskIds,omitempty"`
}

type listenAck struct {
	Meta          mcp.Meta     `json:"_meta"`
	Notifications listenFilter `json:"notifications"`
}

type resourceUpdate struct {
	Meta mcp.Meta `json:"_meta"`
	URI  string   `json:"uri"`
}

// listenResult ends a listen gracefully.
type listenResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
}

// listen serves a subscriptions/listen that came through the host's transports (see
// above); others go to next, go-sdk's handler.
func (s *Server) listen(ctx context.Context, req *mcp.SubscriptionsListenRequest, c caller, next mcp.MethodHandler) (mcp.Result, error) {
	lift := takeListenLift(req.Params)
	if lift == nil {
		return next(ctx, "subscriptions/listen", req)
	}
	st := s.listens.stream(lift.Stream)
	sse, onHTTP := st.(*sseStream)
	if st == nil {
		return next(ctx, "subscriptions/listen", req)
	}
	if req.Params == nil || req.Params.Notifications == nil {
		return nil, invalidParams("subscriptions/listen: notifications is required")
	}
	var taskIDs []string
	if lift.TaskIDs != nil {
		if !hasExtension(c.caps) {
			return nil, missingExtension("subscriptions/listen: notifications.taskIds needs the Tasks extension (%s) in the request's client capabilities", extensionID)
		}
		if err := json.Unmarshal(lift.TaskIDs, &taskIDs); err != nil || slices.Contains(taskIDs, "") {
			return nil, invalidParams("subscriptions/listen: notifications.taskIds must be an array of task IDs (non-empty strings)")
		}
	}
	uris := req.Params.Notifications.ResourceSubscriptions
	if n := len(taskIDs) + len(uris); n > MaxListenSubjects {
		return nil, invalidParams("subscriptions/listen: %d task IDs and resource URIs; at most %d (MaxListenSubjects)", n, MaxListenSubjects)
	}
	if !onHTTP { // over HTTP the transport layer counted it (listenHTTP)
		release, err := s.listens.reserve(c.owner + "|" + c.source)
		if err != nil {
			return nil, &jsonrpc.Error{Code: codeLimit, Message: err.Error()}
		}
		defer release()
	}

	id := lift.ID
	meta := func() mcp.Meta { return mcp.Meta{subscriptionIDKey: id} }
	l := &listener{st: st, end: make(chan struct{}), owner: c.owner, tasks: map[string]bool{}, uris: map[string]bool{},
		queue: make(chan listenItem, maxListenQueue), overflow: make(chan struct{})}
	ack := listenAck{Meta: meta()}
	for _, tid := range taskIDs {
		if !l.tasks[tid] {
			l.tasks[tid] = true
			// Every ID asked is acknowledged: whether a task exists, and whose it
			// is, shows nowhere.
			ack.Notifications.TaskIDs = append(ack.Notifications.TaskIDs, tid)
		}
	}
	for _, uri := range uris {
		if !l.uris[uri] && s.subscribe(ctx, &mcp.SubscribeRequest{Params: &mcp.SubscribeParams{URI: uri}, Extra: req.Extra}) == nil {
			l.uris[uri] = true
			ack.Notifications.ResourceSubscriptions = append(ack.Notifications.ResourceSubscriptions, uri)
		}
	}
	s.listens.add(l)
	defer s.listens.remove(l)
	// The current states, read after the listener is registered: no later state
	// is missed, and sendTask drops what is not newer than what was sent.
	var current []tasks.Task
	for tid := range l.tasks {
		if t, err := s.tasks.Get(ctx, c.owner, tid); err == nil {
			current = append(current, t)
		}
	}
	slices.SortFunc(current, func(a, b tasks.Task) int { return a.CreatedAt.Compare(b.CreatedAt) })

	done := ctx.Done()
	var gone <-chan struct{}
	if hr := s.httpReqs.of(req.Extra); hr != nil {
		gone = hr.ctx.Done()
	}
	w := &listenWriter{s: s, st: st, owner: c.owner, meta: meta, sent: map[string]tasks.Task{}}
	// cancelled ends the listen without an answer.
	cancelled := func(err error) (mcp.Result, error) {
		if onHTTP {
			sse.mute()
		} else {
			s.listens.due(st, string(id), true)
		}
		return nil, err
	}
	// complete ends it with its result.
	complete := func() (mcp.Result, error) {
		if !onHTTP {
			s.listens.due(st, string(id), false)
		}
		return &listenResult{ResultBase: mcp.ResultBase{Meta: meta()}, ResultType: "complete"}, nil
	}
	if err := w.write(ctx, "notifications/subscriptions/acknowledged", ack); err != nil {
		return cancelled(err)
	}
	for _, t := range current {
		if err := w.task(ctx, t); err != nil {
			return cancelled(err)
		}
	}
	if len(l.tasks) == 0 && len(l.uris) == 0 {
		return complete() // nothing honoured: nothing will ever come (as go-sdk answers)
	}
	ending := s.listens.endCh()
	for {
		select {
		case <-l.overflow: // before what is queued: the listen ends now
			s.logger.Warn("listen ended: its client reads too slowly", "subscription", string(id), "queued", maxListenQueue)
			return complete()
		default:
		}
		select {
		case <-done:
			return cancelled(ctx.Err())
		case <-gone:
			return cancelled(context.Canceled)
		case <-ending:
			return complete()
		case <-l.end:
			return complete()
		case <-l.overflow:
			s.logger.Warn("listen ended: its client reads too slowly", "subscription", string(id), "queued", maxListenQueue)
			return complete()
		case it := <-l.queue:
			if err := ctx.Err(); err != nil { // cancelled meanwhile: nothing more is sent
				return cancelled(err)
			}
			var err error
			if it.task != nil {
				err = w.task(ctx, *it.task)
			} else {
				err = w.write(ctx, "notifications/resources/updated", resourceUpdate{Meta: meta(), URI: it.uri})
			}
			if err != nil {
				return cancelled(err)
			}
		}
	}
}

// listenWriter writes one listen's notifications.
type listenWriter struct {
	s     *Server
	st    listenStream
	owner string
	meta  func() mcp.Meta
	sent  map[string]tasks.Task // the last state sent of each task
}

func (w *listenWriter) write(ctx context.Context, method string, params any) error {
	ctx, cancel := context.WithTimeout(ctx, listenWriteTimeout)
	defer cancel()
	return w.st.notify(ctx, method, params)
}

// task sends notifications/tasks with t, rendered as tasks/get renders it on the
// extension's wire, unless it is not newer than the state last sent.
func (w *listenWriter) task(ctx context.Context, t tasks.Task) error {
	if last, ok := w.sent[t.ID]; ok {
		if last.Status.Terminal() || t.LastUpdatedAt.Before(last.LastUpdatedAt) ||
			t.LastUpdatedAt.Equal(last.LastUpdatedAt) && t.Status == last.Status && t.StatusMessage == last.StatusMessage {
			return nil
		}
	}
	w.sent[t.ID] = t
	var inputs []*tasks.Input
	if t.Status == tasks.InputRequired {
		if now, in, _, err := w.s.tasks.Watch(ctx, w.owner, t.ID); err == nil && now.Status == tasks.InputRequired {
			inputs = in
		}
	}
	d := detailed(t, inputs)
	d.Meta = w.meta()
	return w.write(ctx, "notifications/tasks", d)
}

// takeListenLift removes the listenLift from a listen's _meta.
func takeListenLift(p *mcp.SubscriptionsListenParams) *listenLift {
	if p == nil {
		return nil
	}
	raw, ok := p.Meta[listenMetaKey]
	if !ok {
		return nil
	}
	delete(p.Meta, listenMetaKey)
	b, err := json.Marshal(raw)
	if err != nil {
		return nil
	}
	var l listenLift
	if json.Unmarshal(b, &l) != nil || len(l.ID) == 0 {
		return nil
	}
	return &l
}

// EndListens ends every listen, open or to come, with its result
// {resultType: "complete"}: the graceful shutdown of SEP-2575. An HTTP server calls
// it as its Shutdown begins (http.Server.RegisterOnShutdown), so that the listens'
// responses end and Shutdown need not wait for them; ServeStdio calls it when its
// context ends.
func (s *Server) EndListens() { s.listens.end() }

// liftListen lifts a listen read from a stream connection (liftListen, the
// function) with the connection as its stream.
func (c *liftConn) liftListen(req *jsonrpc.Request) {
	if req.Method != "subscriptions/listen" || !req.IsCall() {
		return
	}
	id, err := json.Marshal(req.ID.Raw())
	if err != nil {
		return
	}
	req.Params = liftListen(req.Params, id, c.srv.listens.token(c))
}

// Write writes msg on the connection, except the response to a listen the client
// cancelled, which gets none.
func (c *liftConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.ID.IsValid() {
		c.answered(resp.ID)
		if id, err := json.Marshal(resp.ID.Raw()); err == nil {
			mute := c.srv.listens.answered(c, string(id))
			if mute {
				return nil
			}
		}
	}
	return c.Connection.Write(ctx, msg)
}

// listenHTTP prepares a Streamable HTTP POST that is a subscriptions/listen: it counts
// the listen against the limits (answering 429 past them) and lifts it onto a
// response writer the listen's notifications can be written to. It returns the
// writer and body to serve, and done, to call once served; ok false means it answered.
func (s *Server) listenHTTP(w http.ResponseWriter, r *http.Request, body []byte) (_ http.ResponseWriter, _ []byte, done func(), ok bool) {
	if !bytes.Contains(body, []byte("subscriptions/listen")) && !bytes.Contains(body, []byte(`\`)) {
		return w, body, func() {}, true
	}
	var msg map[string]json.RawMessage
	var method string
	if json.Unmarshal(body, &msg) != nil || json.Unmarshal(msg["method"], &method) != nil ||
		method != "subscriptions/listen" || len(msg["id"]) == 0 {
		return w, body, func() {}, true
	}
	requester := anonymousOwner + "|" + sourceOf(r.RemoteAddr).String()
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil && ti.UserID != "" {
		requester = userOwner(ti.UserID)
	}
	release, err := s.listens.reserve(requester)
	if err != nil {
		w.Header().Set("Retry-After", "60")
		writeJSONError(w, http.StatusTooManyRequests, msg["id"], codeLimit, err.Error())
		return nil, nil, nil, false
	}
	sse := &sseStream{ResponseWriter: w}
	tok := s.listens.token(sse)
	msg["params"] = liftListen(msg["params"], msg["id"], tok)
	lifted, err := json.Marshal(msg)
	if err != nil {
		lifted = body
	}
	return sse, lifted, func() {
		s.listens.drop(sse)
		release()
	}, true
}

// sseStream is the HTTP response of one listen: go-sdk writes its SSE events and its
// result through it, and the listen writes its notifications, one event at a time.
type sseStream struct {
	http.ResponseWriter
	mu    sync.Mutex
	muted bool // the listen was cancelled: nothing more is written
}

var errListenEnded = errors.New("listen ended")

func (w *sseStream) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.muted {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

func (w *sseStream) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.muted {
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *sseStream) FlushError() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *sseStream) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *sseStream) mute() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.muted = true
}

// notify writes one notification as an SSE event, within listenWriteTimeout.
func (w *sseStream) notify(_ context.Context, method string, params any) error {
	p, err := json.Marshal(params)
	if err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(&jsonrpc.Request{Method: method, Params: p})
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.muted {
		return errListenEnded
	}
	rc := http.NewResponseController(w.ResponseWriter)
	rc.SetWriteDeadline(time.Now().Add(listenWriteTimeout))
	defer rc.SetWriteDeadline(time.Time{})
	var b bytes.Buffer
	b.WriteString("event: message\ndata: ")
	b.Write(data)
	b.WriteString("\n\n")
	if _, err := w.ResponseWriter.Write(b.Bytes()); err != nil {
		return err
	}
	return rc.Flush()
}
