package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/telemetry/metrics"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// taskMetaKey is where the transport layer moves a tools/call's params.task, which the
// go-sdk would otherwise drop while decoding. A client-supplied value under this key
// is deleted first, so it can only ever hold what the client sent as params.task.
const taskMetaKey = "io.github.mcp-wasmhost/task"

// clientTasksMetaKey is where the transport layer records, in initialize params, that
// the client declared 2025-11-25's capabilities.tasks, which the go-sdk drops while
// decoding (its ClientCapabilities has no such member). A client-supplied value under
// this key is deleted first.
const clientTasksMetaKey = "io.github.mcp-wasmhost/client-tasks"

// liftClientTasks rewrites initialize params: a capabilities.tasks object is recorded
// as params._meta[clientTasksMetaKey] = true (see extensionSession). Params that are
// not a JSON object are returned unchanged, for the SDK to refuse.
func liftClientTasks(params json.RawMessage) json.RawMessage {
	var p map[string]json.RawMessage
	if err := json.Unmarshal(params, &p); err != nil || p == nil {
		return params
	}
	var meta map[string]json.RawMessage
	if raw, ok := p["_meta"]; ok {
		if err := json.Unmarshal(raw, &meta); err != nil || meta == nil {
			return params
		}
	}
	var caps map[string]json.RawMessage
	if raw, ok := p["capabilities"]; ok && json.Unmarshal(raw, &caps) != nil {
		return params
	}
	_, spoofed := meta[clientTasksMetaKey]
	tasks, declared := caps["tasks"]
	declared = declared && bytes.HasPrefix(bytes.TrimSpace(tasks), []byte("{"))
	if !spoofed && !declared {
		return params
	}
	delete(meta, clientTasksMetaKey)
	if declared {
		if meta == nil {
			meta = map[string]json.RawMessage{}
		}
		meta[clientTasksMetaKey] = json.RawMessage("true")
	}
	if meta != nil {
		b, err := json.Marshal(meta)
		if err != nil {
			return params
		}
		p["_meta"] = b
	}
	b, err := json.Marshal(p)
	if err != nil {
		return params
	}
	return b
}

// liftParams applies the lift for method to a request's params.
func liftParams(method string, params json.RawMessage) json.RawMessage {
	switch method {
	case "tools/call":
		return liftTask(params)
	case "initialize":
		return liftClientTasks(params)
	}
	return params
}

// liftTask rewrites tools/call params: params.task moves into params._meta[taskMetaKey].
// Params that are not a JSON object are returned unchanged, for the SDK to refuse.
func liftTask(params json.RawMessage) json.RawMessage {
	var p map[string]json.RawMessage
	if err := json.Unmarshal(params, &p); err != nil || p == nil {
		return params
	}
	return liftTaskOf(p, params)
}

// liftTaskOf is liftTask of params, already decoded as p (which it changes).
func liftTaskOf(p map[string]json.RawMessage, params json.RawMessage) json.RawMessage {
	var meta map[string]json.RawMessage
	if raw, ok := p["_meta"]; ok {
		if err := json.Unmarshal(raw, &meta); err != nil || meta == nil {
			return params
		}
	}
	_, spoofed := meta[taskMetaKey]
	task, isTask := p["task"]
	if !spoofed && !isTask {
		return params
	}
	delete(meta, taskMetaKey)
	delete(p, "task")
	if isTask && !bytes.Equal(bytes.TrimSpace(task), []byte("null")) {
		if meta == nil {
			meta = map[string]json.RawMessage{}
		}
		meta[taskMetaKey] = task
	}
	if meta != nil {
		b, err := json.Marshal(meta)
		if err != nil {
			return params
		}
		p["_meta"] = b
	}
	b, err := json.Marshal(p)
	if err != nil {
		return params
	}
	return b
}

// liftTransport wraps a stream transport (stdio, in-memory): it lifts params.task on
// the way in, and lets the server write notifications the SDK has no API for.
type liftTransport struct {
	inner mcp.Transport
	srv   *Server

	mu   sync.Mutex
	last *liftConn // the connection Connect made last
}

// conn returns the connection Connect made last, or nil.
func (t *liftTransport) conn() *liftConn {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

func (t *liftTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	lc := &liftConn{Connection: c, srv: t.srv}
	lc.hot.ctx, lc.hot.cancel = context.WithCancel(context.WithoutCancel(ctx))
	lc.hot.calls = map[jsonrpc.ID]hotCall{}
	t.srv.addStream(lc)
	t.mu.Lock()
	t.last = lc
	t.mu.Unlock()
	return lc, nil
}

type liftConn struct {
	mcp.Connection
	srv  *Server
	once sync.Once
	ext  atomic.Bool // its session chose the Tasks extension (extensionSession)

	mu  sync.Mutex
	hot hotConn // the requests answered below the SDK (hotpath.go)
}

// setSession records the session the SDK made of the connection: from then on the
// connection answers hot requests itself.
func (c *liftConn) setSession(ss *mcp.ServerSession) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hot.ss = ss
}

func (c *liftConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if req, ok := msg.(*jsonrpc.Request); ok {
			req.Params = liftParams(req.Method, req.Params)
			c.liftListen(req)
			if req.Method == "initialize" {
				var p mcp.InitializeParams
				c.ext.Store(json.Unmarshal(req.Params, &p) == nil && extensionSession(&p))
			}
			if c.readHot(req) {
				continue
			}
		}
		return msg, err
	}
}

func (c *liftConn) Close() error {
	c.once.Do(func() {
		c.hot.cancel()
		c.srv.removeStream(c)
		c.srv.listens.drop(c)
	})
	return c.Connection.Close()
}

// notify writes a server notification on the stream.
func (c *liftConn) notify(ctx context.Context, method string, params any) error {
	b, err := json.Marshal(params)
	if err != nil {
		return err
	}
	return c.Connection.Write(ctx, &jsonrpc.Request{Method: method, Params: b})
}

// liftHTTP reads each Streamable HTTP POST body (within the body read timeout and the
// message size limit), lifts params.task from it, and sends the request to the
// stateful handler or, for 2026-07-28 (the MCP-Protocol-Version header, or a
// server/discover probe), the stateless one. On the stateful handler a POST without
// Mcp-Session-Id must be an initialize, and a new session must fit under the cap.
//
// A stateless request goes to statelessJSON, which answers with application/json,
// when it is a call whose answer cannot stream (plainCall). A tools/call that only a
// token with other scopes may make is answered here (challengeScope).
func (s *Server) liftHTTP(stateful, stateless, statelessJSON http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			stateful.ServeHTTP(w, r)
			return
		}
		next := stateful
		if v := r.Header.Get("Mcp-Protocol-Version"); v > newestLegacyVersion {
			next = stateless
		}
		body, ok := s.readBody(w, r)
		if !ok {
			return
		}
		body, call := liftBody(body)
		noSession := r.Header.Get("Mcp-Session-Id") == ""
		if next == stateful && noSession && isDiscover(body) {
			next = stateless
		}
		if next == stateless {
			if id, msg := taskNameMismatch(r.Header, body); msg != "" {
				writeHeaderMismatch(w, id, msg)
				return
			}
			if id, msg := s.paramHeaderMismatch(r.Header, body); msg != "" {
				writeHeaderMismatch(w, id, msg)
				return
			}
		}
		var done func()
		if w, body, done, ok = s.listenHTTP(w, r, body); !ok {
			return
		}
		defer done()
		if next == stateful && noSession {
			id, isInit := initializeID(body)
			if !isInit {
				// The Streamable HTTP spec (2025-11-25, session management): a
				// request without a session other than initialize gets 400.
				writeJSONError(w, http.StatusBadRequest, id, codeInvalidRequest,
					"missing Mcp-Session-Id header: send initialize first and repeat the session id it returns")
				return
			}
			release, ok := s.admitSession()
			if !ok {
				s.metrics.Refused(metrics.RefusedSessions)
				w.Header().Set("Retry-After", "60")
				writeJSONError(w, http.StatusServiceUnavailable, id, codeLimit,
					fmt.Sprintf("too many sessions: the server keeps at most %d; retry later", s.limits.maxSessions))
				return
			}
			defer release()
		}
		if call != nil && s.challengeScope(w, r, call) {
			return
		}
		if next == stateless && plainCall(s.catalog, body) {
			next = statelessJSON
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// readBody reads a POST body within the body read timeout and the message size limit.
// When it cannot, it answers (408 or 413, or 400) and reports false. The deadline is a
// read deadline on this request's connection, lifted once the body is read, so a slow
// client cannot hold a connection and a handler forever, while the response (an SSE
// stream, perhaps long) is not limited.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	rc := http.NewResponseController(w)
	// An error means the connection cannot take a deadline (such as an
	// httptest.ResponseRecorder); the size limit still holds.
	deadline := rc.SetReadDeadline(time.Now().Add(s.limits.bodyReadTimeout)) == nil
	limit := s.limits.maxMessageBytes
	body, err := io.ReadAll(io.LimitReader(r.Body, int64(limit)+1))
	if deadline {
		if err == nil && len(body) <= limit {
			rc.SetReadDeadline(time.Time{})
		} else {
			// Whatever is left of the body is not read: net/http would otherwise
			// try to drain it, at the client's pace, before closing.
			rc.SetReadDeadline(time.Now())
		}
	}
	var nerr net.Error
	switch {
	case errors.As(err, &nerr) && nerr.Timeout():
		w.Header().Set("Connection", "close")
		http.Error(w, fmt.Sprintf("request body not received within %s", s.limits.bodyReadTimeout), http.StatusRequestTimeout)
		return nil, false
	case err != nil:
		http.Error(w, "reading request body: "+err.Error(), http.StatusBadRequest)
		return nil, false
	case len(body) > limit:
		w.Header().Set("Connection", "close")
		http.Error(w, fmt.Sprintf("request body exceeds %d bytes", limit), http.StatusRequestEntityTooLarge)
		return nil, false
	}
	return body, true
}

// admitSession reserves room for a new stateful session, if there is any: the live
// sessions with an ID, plus those being created, stay under the cap. release ends the
// reservation once the session is live (and counted) or gone.
func (s *Server) admitSession() (release func(), ok bool) {
	s.gate.Lock()
	defer s.gate.Unlock()
	n := s.starting
	for ss := range s.mcp.Sessions() {
		if ss.ID() != "" {
			n++
		}
	}
	if n >= s.limits.maxSessions {
		return nil, false
	}
	s.starting++
	return func() {
		s.gate.Lock()
		defer s.gate.Unlock()
		s.starting--
	}, true
}

// initializeID reports whether body is one initialize request, and its id (nil when
// unreadable).
func initializeID(body []byte) (json.RawMessage, bool) {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(body, &msg) != nil {
		return nil, false
	}
	return msg.ID, msg.Method == "initialize" && len(msg.ID) > 0
}

// writeJSONError answers status with a JSON-RPC error response for id (nil: null).
func writeJSONError(w http.ResponseWriter, status int, id json.RawMessage, code int64, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(errorLine(id, code, msg))
}

// toolCall is what liftBody read of a tools/call request on its way: its id, the
// tool's name and its arguments, as sent.
type toolCall struct {
	id   json.RawMessage
	name string
	args json.RawMessage
}

// liftBody lifts params.task in a single JSON-RPC tools/call message, and a
// declared capabilities.tasks in an initialize (liftParams). For a tools/call
// request it also returns what it read of the call (nil otherwise), so that the
// body is decoded once.
func liftBody(body []byte) ([]byte, *toolCall) {
	// Most requests (tasks/get, ...) are left undecoded; a body with any JSON escape
	// is decoded, since the method name could be written with escapes.
	if !bytes.Contains(body, []byte("tools/call")) && !bytes.Contains(body, []byte("initialize")) &&
		!bytes.Contains(body, []byte(`\`)) {
		return body, nil
	}
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(body, &msg); err != nil {
		return body, nil
	}
	var method string
	if json.Unmarshal(msg["method"], &method) != nil || (method != "tools/call" && method != "initialize") || msg["params"] == nil {
		return body, nil
	}
	var call *toolCall
	if method == "initialize" {
		msg["params"] = liftClientTasks(msg["params"])
	} else {
		var p map[string]json.RawMessage
		if err := json.Unmarshal(msg["params"], &p); err != nil || p == nil {
			return body, nil // for the SDK to refuse
		}
		call = &toolCall{id: msg["id"], args: p["arguments"]}
		if json.Unmarshal(p["name"], &call.name) != nil {
			call.name = ""
		}
		msg["params"] = liftTaskOf(p, msg["params"])
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return body, nil
	}
	return b, call
}

// isDiscover reports whether body is a server/discover request, which only the
// stateless handler answers (the stateful one refuses 2026-07-28 requests).
func isDiscover(body []byte) bool {
	if !bytes.Contains(body, []byte("server/discover")) && !bytes.Contains(body, []byte(`\`)) {
		return false
	}
	var msg struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(body, &msg) == nil && msg.Method == "server/discover"
}

// taskNameMismatch checks the Mcp-Name header of a tasks/* request (2026-07-28,
// SEP-2243): when present it must equal params.taskId (surrounding blanks aside). The
// go-sdk checks Mcp-Method for every method and Mcp-Name for the standard ones, but
// not for custom methods. It returns the request's id and what is wrong, or "".
func taskNameMismatch(h http.Header, body []byte) (json.RawMessage, string) {
	values, ok := h["Mcp-Name"]
	if !ok || !bytes.Contains(body, []byte("tasks/")) && !bytes.Contains(body, []byte(`\`)) {
		return nil, ""
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			TaskID string `json:"taskId"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || !strings.HasPrefix(msg.Method, "tasks/") {
		return nil, ""
	}
	name := strings.Trim(strings.Join(values, ","), " \t")
	if name != msg.Params.TaskID {
		return msg.ID, fmt.Sprintf("header mismatch: Mcp-Name header value %q does not match params.taskId %q", name, msg.Params.TaskID)
	}
	return nil, ""
}

// writeHeaderMismatch answers HTTP 400 with JSON-RPC error -32020.
func writeHeaderMismatch(w http.ResponseWriter, id json.RawMessage, msg string) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": codeHeaderMismatch, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	w.Write(b)
}
