package host

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Who sends a request, and which Tasks wire it gets: chosen once per request
// (callerOf), then dispatched to (caller.wire; see wire.go).

// clientCapsMetaKey is where a request carries its client's capabilities (SEP-2575);
// a request may also use it to opt into an extension for itself alone.
const clientCapsMetaKey = "io.modelcontextprotocol/clientCapabilities"

// newestLegacyVersion is the last protocol version with a connection handshake; from
// 2026-07-28 on, requests are stateless and a server cannot send requests.
const newestLegacyVersion = "2025-11-25"

// localOwner owns every task created over a stream transport (stdio): the local user.
const localOwner = "local"

// owner is who a session's tasks belong to: the local user on stdio, the session on
// Streamable HTTP without authentication (callerOf puts an identity in its place).
func owner(ss *mcp.ServerSession) string {
	if id := ss.ID(); id != "" {
		return "session:" + id
	}
	return localOwner
}

// caller is what the server knows of who sent a request and how to answer it.
type caller struct {
	owner  string                  // who owns the tasks it creates and may see them
	source string                  // for an anonymous requester, its address: its share of the quota
	caps   *mcp.ClientCapabilities // the client's capabilities for this request
	wire   wire                    // the Tasks this request gets (never nil)
	slot   *slot                   // a tools/call's running-call quota (quota.go); nil if not counted
	rec    *callRecord             // what the request's guest did, for its audit line (audit.go); nil if none
}

type callerKey struct{}

// withCaller puts c in ctx, for the custom method handlers, which get no request.
func withCaller(ctx context.Context, c caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// callerFrom returns the caller the middleware stored, or one derived from the
// session alone.
func callerFrom(ctx context.Context, ss *mcp.ServerSession) caller {
	if c, ok := ctx.Value(callerKey{}).(caller); ok {
		return c
	}
	return callerOf(ss, nil, nil)
}

// callerOf describes the sender of one request: its session, the request's _meta and
// its HTTP extras (nil off HTTP).
//
// Which Tasks a request gets (caller.wire, chosen here and nowhere else):
//   - 2026-07-28 (stateless): the extension's wire (extWire) if the request declares
//     the extension (capabilities are per request there); if not, noTasks: -32021
//     for task methods and required-task tools, and optional tools run
//     synchronously.
//   - a stateful (2025-11-25 or older) session chooses at initialize, once
//     (extensionSession): the extension (extSessionWire) if its client declared it
//     in capabilities.extensions, did not declare 2025-11-25's capabilities.tasks and
//     is not the MCP Inspector (which declares it there without speaking it); its
//     requests are then answered as on 2026-07-28, with what the 2025-11-25 schema
//     requires of the messages both share. Otherwise 2025-11-25 Tasks (wire2025),
//     where a request may still declare the extension for itself in _meta (SEP-2575's
//     per-request capabilities) and is then answered on the extension's wire
//     (extSessionWire with optIn).
//
// The task model is one: a task is its owner's whichever wire created it, and each
// request reads it in its own wire's form.
//
// The owner of tasks is the requester as far as the server can tell it apart: the
// local user on stdio; the authenticated identity on HTTP when the request carries a
// verified token (package authn), on either line, from any session; else the session
// on stateful HTTP (2025-11-25 and older), and on stateless HTTP (2026-07-28) one
// shared "anonymous" requester, since nothing else in a stateless request identifies
// its sender (clientInfo is whatever the client says).
// For anonymous requesters the unguessable task ID (192 random bits) is the capability,
// and this line has no tasks/list that could reveal IDs. Tasks of one owner are never
// visible to another, whichever wire created or asks for them.
//
// Anonymous requesters share an owner but not a quota: each network source (an IPv4
// address, an IPv6 /64; see sourceOf) may have max_per_client unfinished tasks, and
// all anonymous requesters together max_anonymous (tasks.Requester). One client then
// cannot use up the others' quota, and all of them cannot take the server from
// authenticated users. The middleware fills in the source (anonymousSource).
func callerOf(ss *mcp.ServerSession, meta mcp.Meta, extra *mcp.RequestExtra) caller {
	c := caller{owner: owner(ss), wire: wire2025{}}
	init := ss.InitializeParams()
	if init == nil {
		return c
	}
	c.caps = init.Capabilities
	stateless := init.ProtocolVersion > newestLegacyVersion
	if stateless && ss.ID() == "" && extra != nil && extra.Header != nil {
		c.owner = anonymousOwner
	}
	// An authenticated caller owns its tasks whichever session or stateless
	// request it uses (go-sdk binds a session to the identity that opened it).
	if extra != nil && extra.TokenInfo != nil && extra.TokenInfo.UserID != "" {
		c.owner = userOwner(extra.TokenInfo.UserID)
	}
	// The SDK puts a 2026-07-28 request's capabilities in its session; a request
	// that restates them in _meta (on stdio, say) is taken at its word too.
	optIn := false
	if raw, ok := meta[clientCapsMetaKey]; ok {
		var caps mcp.ClientCapabilities
		if b, err := json.Marshal(raw); err == nil && json.Unmarshal(b, &caps) == nil {
			// ClientCapabilities keeps "roots" only as RootsV2, which its own
			// decoding leaves nil (go-sdk #607): a client that declares "roots": {}
			// would not be seen to.
			var roots struct {
				Roots *mcp.RootCapabilities `json:"roots"`
			}
			if json.Unmarshal(b, &roots) == nil && roots.Roots != nil {
				caps.RootsV2, caps.Roots = roots.Roots, *roots.Roots
			}
			c.caps = &caps
			optIn = hasExtension(&caps)
		}
	}
	switch {
	case stateless && hasExtension(c.caps):
		c.wire = extWire{}
	case stateless:
		c.wire = noTasks{}
	case extensionSession(init):
		c.wire = extSessionWire{}
	case optIn: // 2025-11-25 Tasks, but this request declared the extension
		c.wire = extSessionWire{optIn: true}
	}
	return c
}

// userOwner is the owner of an authenticated caller's tasks.
func userOwner(id string) string { return "user:" + id }

// anonymousOwner owns the tasks of unauthenticated stateless HTTP requests.
const anonymousOwner = "anonymous"

// anonymousSource tells an anonymous requester apart for the quotas: the network
// source of the HTTP request that carried extra. A request the registry does not know
// (it cannot happen over HTTP) counts as one "unknown" source.
func (s *Server) anonymousSource(extra *mcp.RequestExtra) string {
	if hr := s.httpReqs.of(extra); hr != nil && hr.source.IsValid() {
		return hr.source.String()
	}
	return "unknown"
}

func hasExtension(caps *mcp.ClientCapabilities) bool {
	if caps == nil {
		return false
	}
	_, ok := caps.Extensions[extensionID]
	return ok
}

// extensionSession reports whether a stateful (2025-11-25 or older) session is on the
// Tasks extension's line, from its initialize: its client declared the extension in
// capabilities.extensions, did not declare 2025-11-25's capabilities.tasks (a client
// that declares both speaks 2025-11-25 Tasks, the session's own version), and is not
// one known to declare the extension without speaking it before 2026-07-28
// (extensionIgnoredBy). Every other stateful session gets 2025-11-25 Tasks.
//
// The 2025-11-25 schema has no capabilities.extensions (SEP-2133 extensions arrive with
// 2026-07-28), so on such a session the member is a non-standard capability that a
// client may mean or not: the conformance suite's stateful client means it; the MCP
// Inspector 2.x does not (see extensionIgnoredBy). Nothing else in their initialize
// tells them apart.
func extensionSession(init *mcp.InitializeParams) bool {
	if init == nil || init.ProtocolVersion > newestLegacyVersion || !hasExtension(init.Capabilities) {
		return false
	}
	if _, legacy := init.Meta[clientTasksMetaKey]; legacy {
		return false
	}
	return init.ClientInfo == nil || !slices.Contains(extensionIgnoredBy, init.ClientInfo.Name)
}

// extensionIgnoredBy names (clientInfo.name) clients that declare the Tasks extension
// in a 2025-11-25 initialize but speak 2025-11-25 Tasks there: the MCP Inspector 2.x
// (2.12.0 checked) declares every extension it knows by default, "harmless on legacy
// (extensions ignored)" in its source, and on a 2025-11-25 connection follows only
// capabilities.tasks. Served the extension, its CLI sends a required-task tool call
// without params.task, takes the extension's task handle for the tool's result and
// prints it (empty content); the task's outcome is lost. Its CLI, TUI and web client.
var extensionIgnoredBy = []string{"inspector-cli", "inspector-tui", "mcp-inspector"}
