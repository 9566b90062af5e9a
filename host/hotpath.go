package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The stream transports (stdio, in-memory) answer the hot tasks/* requests below the
// SDK: tasks/get, tasks/cancel and tasks/list of an initialized 2025-11-25 session,
// whose params have the plain shape every client sends. Nothing changes on the
// wire: such a request goes through the same middleware (caller, wire, metrics,
// traces) and the same handler as through the SDK; only the SDK's decoding of its
// params (a fresh decoder with a 32 KiB buffer per decode, twice per request; see
// docs/upstream/go-sdk-json-decoder.md) and its dispatch are skipped. Anything else,
// and any request the SDK would treat specially, goes to the SDK:
//   - the session is not yet initialized (the SDK refuses such requests);
//   - the params are not exactly {"taskId": "..."} (get, cancel) or {} or
//     {"cursor": "..."} (list): no _meta (so no 2026-07-28 per-request protocol),
//     no escapes, no other members;
//   - the request reuses the id of a request the SDK is still answering (the SDK
//     refuses it).
//
// A request reusing the id of a hot request still being answered is dropped
// unanswered, as the SDK drops one reusing the id of its own.
// hotpath_test.go holds the two paths to the same bytes.

// hotConn is what a stream connection keeps for the hot path.
type hotConn struct {
	ctx    context.Context // the connection's: ends when it closes
	cancel context.CancelFunc
	ss     *mcp.ServerSession // set once Connect returned; nil before

	// calls are the ids of the client's requests read and not yet answered: true
	// for those answered here, false for the SDK's.
	calls map[jsonrpc.ID]bool
}

// hotParams is what a hot request carries.
type hotParams struct {
	taskID string
	cursor string
}

// readHot serves req if it is a hot request and reports whether it did (then the
// SDK must not see it). It runs in the connection's reader: the answer is computed
// in a goroutine of its own, as the SDK runs every call.
func (c *liftConn) readHot(req *jsonrpc.Request) bool {
	if !req.IsCall() {
		return false
	}
	c.mu.Lock()
	hot, seen := c.hot.calls[req.ID]
	if seen {
		c.mu.Unlock()
		// A reused id: the SDK drops the request unanswered (jsonrpc2's
		// acceptRequest clears its id, making it a notification that failed).
		// Its own requests' duplicates go to it; a hot request's are dropped here.
		return hot
	}
	ss := c.hot.ss
	p, ok := hotParamsOf(req.Method, req.Params)
	ok = ok && ss != nil && !c.srv.noHotPath && ss.InitializeParams() != nil
	c.hot.calls[req.ID] = ok
	c.mu.Unlock()
	if !ok {
		return false
	}
	c.srv.hotServed.Add(1)
	go c.serveHot(ss, req.ID, req.Method, p)
	return true
}

// serveHot answers one hot request as the SDK would: through the server's middleware
// into the handler registerTaskMethods registers for it.
func (c *liftConn) serveHot(ss *mcp.ServerSession, id jsonrpc.ID, method string, p hotParams) {
	var req mcp.Request
	switch method {
	case "tasks/list":
		req = &mcp.ServerRequest[*listTasksParams]{Session: ss, Params: &listTasksParams{Cursor: p.cursor}}
	default:
		req = &mcp.ServerRequest[*taskIDParams]{Session: ss, Params: &taskIDParams{TaskID: p.taskID}}
	}
	res, err := c.srv.middleware(c.srv.taskMethod)(c.hot.ctx, method, req)
	c.answer(id, res, err)
}

// taskMethod is the handler of the tasks/* methods the hot path serves: those
// registerTaskMethods registers with the SDK.
func (s *Server) taskMethod(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	switch r := req.(type) {
	case *mcp.ServerRequest[*taskIDParams]:
		if method == "tasks/cancel" {
			return s.taskCancel(ctx, ss, r.Params)
		}
		return s.taskGet(ctx, ss, r.Params)
	case *mcp.ServerRequest[*listTasksParams]:
		return s.taskList(ctx, ss, r.Params)
	}
	return nil, fmt.Errorf("%s: no hot handler", method) // unreachable: readHot chose the method
}

// answer writes the response to a hot request as the SDK's connection does
// (jsonrpc2's processResult): a result marshalled without HTML escaping, or the
// error, which the encoder turns into its wire form.
func (c *liftConn) answer(id jsonrpc.ID, res mcp.Result, err error) {
	resp := &jsonrpc.Response{ID: id}
	switch {
	case err != nil:
		resp.Error = err
	case res == nil:
		resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error: no result"}
	default:
		b, merr := marshalResult(res)
		if merr != nil {
			resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("internal error: a malformed result: %v", merr)}
		} else {
			resp.Result = b
		}
	}
	if werr := c.Write(c.hot.ctx, resp); werr != nil && !errors.Is(werr, context.Canceled) {
		c.srv.logger.Debug("answer not written", "err", werr)
	}
}

// answered forgets a client request once its response is written.
func (c *liftConn) answered(id jsonrpc.ID) {
	c.mu.Lock()
	delete(c.hot.calls, id)
	c.mu.Unlock()
}

// marshalResult is jsonrpc2's marshalling of a result: encoding/json without HTML
// escaping.
func marshalResult(res mcp.Result) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(res); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// hotParamsOf reports whether method with params is a hot request, and its params.
// The accepted shapes are those every field of which the SDK's decoder reads the
// same way: an object whose members are exactly the method's (taskId for get and
// cancel, at most cursor for list), each a string without escapes or control
// characters.
func hotParamsOf(method string, params json.RawMessage) (hotParams, bool) {
	var want string
	switch method {
	case "tasks/get", "tasks/cancel":
		want = "taskId"
	case "tasks/list":
		want = "cursor"
	default:
		return hotParams{}, false
	}
	var p hotParams
	b := skipSpace(params)
	if len(b) == 0 || b[0] != '{' {
		return p, false
	}
	b = skipSpace(b[1:])
	got := false
	if len(b) > 0 && b[0] == '"' {
		var key, val string
		var ok bool
		if key, b, ok = hotString(b); !ok || key != want {
			return p, false
		}
		b = skipSpace(b)
		if len(b) == 0 || b[0] != ':' {
			return p, false
		}
		if val, b, ok = hotString(skipSpace(b[1:])); !ok {
			return p, false
		}
		b, got = skipSpace(b), true
		if want == "taskId" {
			p.taskID = val
		} else {
			p.cursor = val
		}
	}
	if len(b) == 0 || b[0] != '}' || len(skipSpace(b[1:])) != 0 {
		return p, false
	}
	return p, got || want == "cursor"
}

// hotString reads a JSON string at the start of b that has no escapes and no
// control characters, and returns it and what follows.
func hotString(b []byte) (string, []byte, bool) {
	if len(b) == 0 || b[0] != '"' {
		return "", b, false
	}
	for i := 1; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return string(b[1:i]), b[i+1:], true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return "", b, false // escapes and non-ASCII: the SDK's decoder decides
		}
	}
	return "", b, false
}

func skipSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	return b
}
