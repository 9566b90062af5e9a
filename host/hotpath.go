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

// The stream transports (stdio, in-memory) decode the hot requests of an initialized
// 2025-11-25 session themselves: tools/call, tasks/get, tasks/cancel and tasks/list
// whose params have the plain shape every client sends. Such a request then goes
// through the same middleware and into the same SDK handler (the one our middleware
// wraps, s.sdkNext) as it would through the SDK; only the SDK's decoding of its
// params (a fresh decoder with a 32 KiB buffer per decode, twice per request; see
// docs/upstream/go-sdk-json-decoder.md) and its dispatch are skipped. Anything else,
// and any request the SDK would treat specially, goes to the SDK:
//   - the session is not yet initialized (the SDK refuses such requests);
//   - the params are not exactly the method's plain members (hotParamsOf): for
//     tools/call a plain name, an arguments object and a _meta of plain values (no
//     2026-07-28 per-request protocol: those keys name a protocol version, which
//     the SDK checks); for get and cancel a plain taskId; for list at most a plain
//     cursor; no escapes, no repeated or other members;
//   - the request reuses the id of a request the SDK is still answering (the SDK
//     drops it).
//
// A request reusing the id of a hot request still being answered is dropped
// unanswered, as the SDK drops one reusing the id of its own, and
// notifications/cancelled naming a hot request cancels it, as the SDK's canceller
// does its own (and goes on to the SDK, which finds nothing to cancel).
// hotpath_test.go holds the two paths to the same bytes.

// hotConn is what a stream connection keeps for the hot path.
type hotConn struct {
	ctx    context.Context // the connection's: ends when it closes
	cancel context.CancelFunc
	ss     *mcp.ServerSession // set once Connect returned; nil before

	// calls are the client's requests read and not yet answered.
	calls map[jsonrpc.ID]hotCall
}

// hotCall is a client request in flight: answered here (with its cancel) or by
// the SDK (cancel nil).
type hotCall struct {
	cancel context.CancelFunc
}

// hotParams is what a hot request carries.
type hotParams struct {
	taskID string
	cursor string
	call   *mcp.CallToolParamsRaw
}

// readHot serves req if it is a hot request and reports whether it did (then the
// SDK must not see it). It runs in the connection's reader: the answer is computed
// in a goroutine of its own, as the SDK runs every call.
func (c *liftConn) readHot(req *jsonrpc.Request) bool {
	if !req.IsCall() {
		if req.Method == "notifications/cancelled" {
			c.cancelHot(req.Params)
		}
		return false
	}
	c.mu.Lock()
	call, seen := c.hot.calls[req.ID]
	if seen {
		c.mu.Unlock()
		// A reused id: the SDK drops the request unanswered (jsonrpc2's
		// acceptRequest clears its id, making it a notification that failed).
		// Its own requests' duplicates go to it; a hot request's are dropped here.
		return call.cancel != nil
	}
	ss := c.hot.ss
	p, ok := hotParamsOf(req.Method, req.Params)
	if !ok || ss == nil || c.srv.noHotPath || ss.InitializeParams() == nil {
		c.hot.calls[req.ID] = hotCall{}
		c.mu.Unlock()
		return false
	}
	ctx, cancel := context.WithCancel(c.hot.ctx)
	c.hot.calls[req.ID] = hotCall{cancel: cancel}
	c.mu.Unlock()
	c.srv.hotServed.Add(1)
	go c.serveHot(ctx, ss, req.ID, req.Method, p)
	return true
}

// cancelHot cancels the hot request a notifications/cancelled names, if any.
func (c *liftConn) cancelHot(params json.RawMessage) {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil {
		return
	}
	c.mu.Lock()
	call := c.hot.calls[id]
	c.mu.Unlock()
	if call.cancel != nil {
		call.cancel()
	}
}

// serveHot answers one hot request as the SDK would: through the server's
// middleware into the SDK's handler for it.
func (c *liftConn) serveHot(ctx context.Context, ss *mcp.ServerSession, id jsonrpc.ID, method string, p hotParams) {
	var req mcp.Request
	switch method {
	case "tools/call":
		req = &mcp.CallToolRequest{Session: ss, Params: p.call}
	case "tasks/list":
		req = &mcp.ServerRequest[*listTasksParams]{Session: ss, Params: &listTasksParams{Cursor: p.cursor}}
	default:
		req = &mcp.ServerRequest[*taskIDParams]{Session: ss, Params: &taskIDParams{TaskID: p.taskID}}
	}
	res, err := c.srv.middleware(c.srv.sdkNext)(ctx, method, req)
	c.answer(id, res, err)
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
	call := c.hot.calls[id]
	delete(c.hot.calls, id)
	c.mu.Unlock()
	if call.cancel != nil {
		call.cancel() // frees the request's context
	}
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
// The accepted shapes are those the SDK's decoder reads to the same values: an
// object whose members are the method's, no key with an escape, no member twice,
// strings without escapes (plainString), and for tools/call an arguments object
// (kept as its bytes, as the SDK keeps them) and a _meta of plain values
// (plainMeta), which encoding/json then decodes as the SDK's decoder does.
func hotParamsOf(method string, params json.RawMessage) (hotParams, bool) {
	var p hotParams
	switch method {
	case "tasks/get", "tasks/cancel", "tasks/list", "tools/call":
	default:
		return p, false
	}
	if method == "tools/call" {
		p.call = &mcp.CallToolParamsRaw{}
	}
	sc := scanner{b: params}
	sc.ws()
	if sc.i >= len(params) || params[sc.i] != '{' {
		return p, false
	}
	ok := true
	seen := map[string]bool{}
	r := sc.object(0, func(key []byte, escaped bool, raw []byte) {
		k := string(key)
		if !ok || escaped || seen[k] {
			ok = false
			return
		}
		seen[k] = true
		switch {
		case k == "taskId" && (method == "tasks/get" || method == "tasks/cancel"):
			p.taskID, ok = plainString(raw)
		case k == "cursor" && method == "tasks/list":
			p.cursor, ok = plainString(raw)
		case k == "name" && method == "tools/call":
			p.call.Name, ok = plainString(raw)
		case k == "arguments" && method == "tools/call":
			ok = raw[0] == '{'
			p.call.Arguments = bytes.Clone(raw)
		case k == "_meta" && method == "tools/call":
			ok = plainMeta(raw, 0) && json.Unmarshal(raw, &p.call.Meta) == nil
		default:
			ok = false
		}
	})
	sc.ws()
	if r != scanOK || sc.i != len(params) || !ok {
		return p, false
	}
	switch method {
	case "tasks/get", "tasks/cancel":
		return p, seen["taskId"]
	case "tools/call":
		return p, seen["name"]
	}
	return p, true
}

// plainMeta reports whether raw, a JSON value the scanner accepted, is made of
// values both decoders read alike: objects (two levels deep at most) whose keys
// have no escapes, plain strings, integers of at most 15 digits (exact as
// float64), true, false and null.
func plainMeta(raw []byte, depth int) bool {
	switch c := raw[0]; {
	case c == '{':
		if depth >= 2 {
			return false
		}
		ok := true
		members(raw, func(key []byte, escaped bool, v []byte) {
			ok = ok && !escaped && plainMeta(v, depth+1)
		})
		return ok
	case c == '"':
		_, ok := plainString(raw)
		return ok
	case c == '-' || (c >= '0' && c <= '9'):
		digits := bytes.TrimPrefix(raw, []byte("-"))
		if len(digits) == 0 || len(digits) > 15 {
			return false
		}
		for _, d := range digits {
			if d < '0' || d > '9' {
				return false
			}
		}
		return true
	}
	s := string(raw)
	return s == "true" || s == "false" || s == "null"
}
