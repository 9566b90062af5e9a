package host

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/audit"
	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
)

// Grants says which tools an HTTP caller with a verified identity (go-sdk's
// TokenInfo, from the request's token; see package authn, whose Authenticator is
// one) may see and call, and how a call of any other tool is refused.
type Grants interface {
	// Allowed reports whether the identity info may see and call tool.
	Allowed(info *auth.TokenInfo, tool string) bool
	// NotGranted says how to refuse info a call of tool, which Allowed refuses:
	// a message naming the tool and what is missing; the scopes a token would
	// need for it, if a new token could have them; and then the WWW-Authenticate
	// value of an HTTP 403 asking for them (RFC 6750 insufficient_scope), "" if
	// none could.
	NotGranted(info *auth.TokenInfo, tool string) (msg string, scopes []string, challenge string)
}

// CodeNotGranted is the JSON-RPC error code of a tools/call of a tool outside the
// caller's grants (NotGrantedData): a server error of its own, not -32602, which
// says the request is wrong for anyone (go-sdk's "unknown tool", and on 2026-07-28
// HTTP 400), while this one depends on who asks, and a new token may change it.
const CodeNotGranted = -32003

// NotGrantedData is the data of a CodeNotGranted error: the tool, and the scopes a
// token needs for it when a token with other scopes could call it (OAuth).
type NotGrantedData struct {
	Tool   string   `json:"tool"`
	Scopes []string `json:"scopes,omitempty"`
}

// authorized reports whether the sender of a request with extra may see and call
// tool. Without Grants every caller may; so may a caller off HTTP (extra nil:
// stdio and other stream transports, the local user). Over HTTP a request without
// an identity may call nothing once Grants are set (deny by default).
func (s *Server) authorized(extra *mcp.RequestExtra, tool string) bool {
	if s.grants == nil || extra == nil || extra.Header == nil {
		return true
	}
	return extra.TokenInfo != nil && s.grants.Allowed(extra.TokenInfo, tool)
}

// notGranted is the JSON-RPC error of a call of tool by info, which its grants
// refuse, and the WWW-Authenticate challenge of the HTTP 403 that may answer it
// instead ("" when a token with other scopes would not help).
func (s *Server) notGranted(info *auth.TokenInfo, tool string) (*jsonrpc.Error, string) {
	msg, scopes, challenge := s.grants.NotGranted(info, tool)
	data, _ := json.Marshal(NotGrantedData{Tool: tool, Scopes: scopes}) // plain struct: cannot fail
	return &jsonrpc.Error{Code: CodeNotGranted, Message: msg, Data: data}, challenge
}

// challengeScope answers a tools/call of a catalog tool that the caller's token
// does not grant but a token with other scopes would (OAuth): HTTP 403 with
// WWW-Authenticate: Bearer error="insufficient_scope", scope="...",
// resource_metadata="..." (MCP basic/authorization, scope challenge handling: the
// client may get a token with those scopes and send the call again) and the
// JSON-RPC error CodeNotGranted as the body, in application/json so that a client
// that does not step up can read it. It reports whether it answered.
//
// It answers before go-sdk sees the request, because only here is the status still
// the server's to choose: in a session with resumable streams the priming event
// has gone out by the time a method handler runs. So the session's own checks
// (its id, its identity) have not been made: the answer depends on the token and
// the tool alone, and tells the caller nothing of the session. Everything else that
// its grants refuse (API keys, a tool no scope grants, a body liftBody does not
// read) is answered in-band by route, with the same error.
func (s *Server) challengeScope(w http.ResponseWriter, r *http.Request, call *toolCall) bool {
	if s.grants == nil || call.name == "" || len(call.id) == 0 || !s.known(call.name) {
		return false
	}
	info := auth.TokenInfoFromContext(r.Context())
	if info == nil || s.grants.Allowed(info, call.name) {
		return false
	}
	start := time.Now()
	e, challenge := s.notGranted(info, call.name)
	if challenge == "" {
		return false
	}
	w.Header().Set("WWW-Authenticate", challenge)
	writeErrorResponse(w, http.StatusForbidden, call.id, e)
	s.metrics.AuthFailure(authFailureScope)
	if s.audit != nil {
		digest, _ := argsDigest(call.args) // unreadable arguments: no digest
		s.audit.Record(audit.Record{Time: start, Identity: info.UserID, Requester: userOwner(info.UserID),
			Method: "tools/call", Tool: call.name, ArgsSHA256: digest, Outcome: audit.OutcomeError,
			ErrorCode: CodeNotGranted, HTTPStatus: http.StatusForbidden,
			DurationMS: float64(time.Since(start).Microseconds()) / 1000})
	}
	return true
}

// authFailureScope is the metrics reason of a request refused for its token's
// scopes (authn.RefuseScope's value; host does not import authn).
const authFailureScope = "insufficient_scope"

// writeErrorResponse answers status with the JSON-RPC error response e for id.
func writeErrorResponse(w http.ResponseWriter, status int, id json.RawMessage, e *jsonrpc.Error) {
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *jsonrpc.Error  `json:"error"`
	}{"2.0", id, e}) // valid JSON in every part: cannot fail
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// visibleTools drops from r the tools its caller may not call.
func (s *Server) visibleTools(r *mcp.ListToolsResult, extra *mcp.RequestExtra) *mcp.ListToolsResult {
	if s.grants == nil {
		return r
	}
	kept := *r
	kept.Tools = nil
	for _, t := range r.Tools {
		if s.authorized(extra, t.Name) {
			kept.Tools = append(kept.Tools, t)
		}
	}
	return &kept
}

// cacheScope makes "private" the cacheScope (2026-07-28) of what a checked caller
// lists or reads: with grants, tools/list, resources/list, resources/templates/list
// and prompts/list show each caller its own (visibleTools, visibleFeatures), and
// resources/read answers only a caller granted the resource's plugin, so no cache
// may serve one caller's answer to another. server/discover is the same for every
// caller and stays "public"; so does everything off HTTP (the local user).
// go-sdk calls it for every result that carries a cacheScope, with its server's
// lock held: it must not call back into the server.
func (s *Server) cacheScope(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
	if _, discover := req.(*mcp.ServerRequest[*mcp.DiscoverParams]); discover {
		return
	}
	if extra := req.GetExtra(); extra != nil && extra.Header != nil {
		c.CacheScope = "private"
	}
}

// known reports whether tool is one of the catalog's: a call of any other is
// answered as go-sdk answers an unknown tool, whatever the caller's grants.
func (s *Server) known(tool string) bool {
	_, ok := s.catalog.Lookup(tool)
	return ok
}

// pluginGranted reports whether the sender of a request with extra may use p's
// resources, templates and prompts: it is granted at least one of p's tools (grants
// name tools; a plugin's other features go with them).
func (s *Server) pluginGranted(extra *mcp.RequestExtra, p *plugins.Plugin) bool {
	if s.grants == nil || extra == nil || extra.Header == nil {
		return true
	}
	for _, t := range p.Tools {
		if s.authorized(extra, t.Name) {
			return true
		}
	}
	return false
}

// visibleFeatures drops from a resources/list, resources/templates/list or
// prompts/list result what belongs to plugins its caller is granted nothing of.
func (s *Server) visibleFeatures(res mcp.Result, extra *mcp.RequestExtra) mcp.Result {
	if s.grants == nil {
		return res
	}
	switch r := res.(type) {
	case *mcp.ListResourcesResult:
		kept := *r
		kept.Resources = slices.DeleteFunc(slices.Clone(r.Resources), func(x *mcp.Resource) bool {
			c, ok := s.catalog.Resource(x.URI)
			return !ok || !s.pluginGranted(extra, c.Plugin)
		})
		return &kept
	case *mcp.ListResourceTemplatesResult:
		kept := *r
		kept.ResourceTemplates = slices.DeleteFunc(slices.Clone(r.ResourceTemplates), func(x *mcp.ResourceTemplate) bool {
			c, ok := s.catalog.Template(x.URITemplate)
			return !ok || !s.pluginGranted(extra, c.Plugin)
		})
		return &kept
	case *mcp.ListPromptsResult:
		kept := *r
		kept.Prompts = slices.DeleteFunc(slices.Clone(r.Prompts), func(x *mcp.Prompt) bool {
			c, ok := s.catalog.Prompt(x.Name)
			return !ok || !s.pluginGranted(extra, c.Plugin)
		})
		return &kept
	}
	return res
}
