package host

import (
	"context"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
)

// Authorize says whether the identity in info (go-sdk's, from the HTTP request's
// verified token; see package authn) may see and call the tool named tool.
type Authorize func(info *auth.TokenInfo, tool string) bool

// authorized reports whether the sender of a request with extra may see and call
// tool. Without an Authorize every caller may; so may a caller off HTTP (extra nil:
// stdio and other stream transports, the local user). Over HTTP a request without
// an identity may call nothing once Authorize is set (deny by default).
func (s *Server) authorized(extra *mcp.RequestExtra, tool string) bool {
	if s.authorize == nil || extra == nil || extra.Header == nil {
		return true
	}
	return extra.TokenInfo != nil && s.authorize(extra.TokenInfo, tool)
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

// visibleTools drops from r the tools its caller may not call.
func (s *Server) visibleTools(r *mcp.ListToolsResult, extra *mcp.RequestExtra) *mcp.ListToolsResult {
	if s.authorize == nil {
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

// errNotGranted answers a tools/call of a tool outside the caller's grants: the same
// code and message as go-sdk's answer for a tool that does not exist (-32602
// "unknown tool"), so that a caller cannot learn which tools exist beyond its own.
func errNotGranted(name string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", name)}
}

// pluginGranted reports whether the sender of a request with extra may use p's
// resources, templates and prompts: it is granted at least one of p's tools (grants
// name tools; a plugin's other features go with them).
func (s *Server) pluginGranted(extra *mcp.RequestExtra, p *plugins.Plugin) bool {
	if s.authorize == nil || extra == nil || extra.Header == nil {
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
	if s.authorize == nil {
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
