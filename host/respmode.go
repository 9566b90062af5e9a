package host

import (
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
)

// quietMeta are the _meta keys of a 2026-07-28 request that make nothing stream: who
// the client is and what it can do. Any other key (progressToken, the logLevel that
// asks for log notifications, a task, a listen) may, so it keeps the SSE answer.
var quietMeta = map[string]bool{
	clientCapsMetaKey:                         true,
	"io.modelcontextprotocol/clientInfo":      true,
	"io.modelcontextprotocol/protocolVersion": true,
}

// plainCall reports whether a 2026-07-28 (stateless) POST body is a synchronous
// tools/call whose answer can be nothing but its one response, which is then sent as
// application/json instead of as an SSE stream of one event (Streamable HTTP lets the
// server choose per request). On a stateless request the server sends no requests (a
// guest's request for input becomes an InputRequiredResult) and no notifications but
// progress (only with a progressToken) and log messages (only with the logLevel
// _meta key); so a call qualifies when its _meta holds only quietMeta keys, it asks
// for no task, and its tool exists and can neither require a task nor start one. The
// envelope is read by decodeLine, which reads it as the SDK does, and params and its
// _meta by the same scanner, with keys matched exactly as the SDK matches them (a key
// with an escape, or a repeated name, is not quiet). Anything else answers as before.
//
// The stateful handler (2025-11-25 sessions) has no such choice: go-sdk's JSONResponse
// is one option per handler, and a session's requests must all reach the handler that
// holds the session.
func plainCall(catalog *plugins.Catalog, body []byte) bool {
	msg, reply := decodeLine(body)
	req, ok := msg.(*jsonrpc.Request)
	if reply != nil || !ok || !req.IsCall() || req.Method != "tools/call" {
		return false
	}
	quiet, named := true, 0
	var name string
	ok = members(req.Params, func(key []byte, escaped bool, raw []byte) {
		switch {
		case escaped:
			quiet = false // a key the SDK may read as one of these
		case string(key) == "task":
			quiet = false
		case string(key) == "name":
			var plain bool
			name, plain = plainString(raw)
			if named++; !plain {
				quiet = false
			}
		case string(key) == "_meta":
			isObject := members(raw, func(key []byte, escaped bool, _ []byte) {
				if escaped || !quietMeta[string(key)] {
					quiet = false
				}
			})
			if !isObject && string(raw) != "null" {
				quiet = false
			}
		}
	})
	if !ok || !quiet || named != 1 {
		return false
	}
	t, found := catalog.Lookup(name)
	return found && t.TaskSupport != plugins.TaskRequired && !t.GuestStartsTask
}
