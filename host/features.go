package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// featureOptions declares what the catalog offers beyond tools: resources (with
// subscriptions), prompts and completions. Lists never change while the server
// runs, so listChanged is false.
func (s *Server) featureOptions(o *mcp.ServerOptions) {
	c := s.catalog
	if len(c.Resources()) > 0 || len(c.Templates()) > 0 || servesTaskLogs(c) {
		o.Capabilities.Resources = &mcp.ResourceCapabilities{}
		// The SDK keeps the subscriptions per session; a guest's resource_updated
		// request reaches the sessions subscribed to that URI.
		o.SubscribeHandler = s.subscribe
		o.UnsubscribeHandler = func(context.Context, *mcp.UnsubscribeRequest) error { return nil }
	}
	if len(c.Prompts()) > 0 {
		o.Capabilities.Prompts = &mcp.PromptCapabilities{}
	}
	if len(c.Prompts()) > 0 || len(c.Templates()) > 0 {
		o.CompletionHandler = s.complete
	}
}

// registerFeatures adds the catalog's resources, templates and prompts to the SDK
// server, each bound to the plugin that serves it.
func (s *Server) registerFeatures() {
	for _, r := range s.catalog.Resources() {
		mr := &mcp.Resource{URI: r.URI, Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MimeType}
		if r.Size != nil {
			mr.Size = *r.Size
		}
		mr.Annotations = annotations(r.Annotations)
		s.mcp.AddResource(mr, s.readHandler(r.Plugin))
	}
	for _, t := range s.catalog.Templates() {
		mt := &mcp.ResourceTemplate{URITemplate: t.URITemplate, Name: t.Name, Title: t.Title,
			Description: t.Description, MIMEType: t.MimeType, Annotations: annotations(t.Annotations)}
		s.mcp.AddResourceTemplate(mt, s.readHandler(t.Plugin))
	}
	for _, p := range s.catalog.Prompts() {
		mp := &mcp.Prompt{Name: p.Name, Title: p.Title, Description: p.Description}
		for _, a := range p.Arguments {
			mp.Arguments = append(mp.Arguments, &mcp.PromptArgument{Name: a.Name, Title: a.Title,
				Description: a.Description, Required: a.Required})
		}
		s.mcp.AddPrompt(mp, s.promptHandler(p))
	}
}

// annotations decodes annotations the manifest check already validated.
func annotations(raw json.RawMessage) *mcp.Annotations {
	if raw == nil {
		return nil
	}
	var a mcp.Annotations
	if json.Unmarshal(raw, &a) != nil {
		return nil
	}
	return &a
}

// readHandler serves resources/read for the resources and templates of p. The SDK
// routes only URIs that are p's resources or match p's templates here.
func (s *Server) readHandler(p *plugins.Plugin) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		if !s.pluginGranted(req.Extra, p) {
			return nil, mcp.ResourceNotFoundError(uri) // as for a resource that does not exist
		}
		b := s.featureBridge(req.Session, p, "resources/read "+uri, req.Params.GetProgressToken())
		b.rec = callerFrom(ctx, req.Session).rec
		label := "resources/read " + uri
		round, err := s.featureRound(ctx, b, label, nil, req.Params.RequestState, req.Params.InputResponses)
		if err != nil {
			return nil, err
		}
		out, err := p.Read(round.ctx(ctx), uri, b)
		if reqs, state, rerr := round.end(label, nil); rerr != nil || reqs != nil {
			return &mcp.ReadResourceResult{InputRequests: reqs, RequestState: state}, rerr
		}
		if err != nil {
			return nil, s.featureError(ctx, "resources/read", err)
		}
		var res mcp.ReadResourceResult
		if err := json.Unmarshal(out, &res); err != nil {
			return nil, s.featureError(ctx, "resources/read", malformed(p, err))
		}
		return &res, nil
	}
}

func (s *Server) promptHandler(pr *plugins.Prompt) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		if !s.pluginGranted(req.Extra, pr.Plugin) {
			return nil, invalidParams("unknown prompt %q", pr.Name) // go-sdk's answer for one that does not exist
		}
		b := s.featureBridge(req.Session, pr.Plugin, "prompts/get "+pr.Name, req.Params.GetProgressToken())
		b.rec = callerFrom(ctx, req.Session).rec
		label := "prompts/get " + pr.Name
		args, err := json.Marshal(req.Params.Arguments)
		if err != nil {
			return nil, invalidParams("arguments: %v", err)
		}
		round, err := s.featureRound(ctx, b, label, args, req.Params.RequestState, req.Params.InputResponses)
		if err != nil {
			return nil, err
		}
		out, err := pr.Get(round.ctx(ctx), req.Params.Arguments, b)
		if reqs, state, rerr := round.end(label, args); rerr != nil || reqs != nil {
			return &mcp.GetPromptResult{InputRequests: reqs, RequestState: state}, rerr
		}
		if err != nil {
			return nil, s.featureError(ctx, "prompts/get", err)
		}
		var res mcp.GetPromptResult
		if err := json.Unmarshal(out, &res); err != nil {
			return nil, s.featureError(ctx, "prompts/get", malformed(pr.Plugin, err))
		}
		return &res, nil
	}
}

// complete serves completion/complete: the reference names a prompt or a resource
// template, and the plugin that offers it completes the argument.
func (s *Server) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	p := req.Params
	if p == nil || p.Ref == nil {
		return nil, invalidParams("completion/complete: ref is required")
	}
	cr := plugins.CompleteRequest{Value: p.Argument.Value, Argument: p.Argument.Name}
	if p.Context != nil {
		cr.Context = p.Context.Arguments
	}
	var owner *plugins.Plugin
	switch p.Ref.Type {
	case "ref/prompt":
		pr, ok := s.catalog.Prompt(p.Ref.Name)
		if !ok || !s.pluginGranted(req.Extra, pr.Plugin) {
			return nil, invalidParams("completion/complete: unknown prompt %q", p.Ref.Name)
		}
		cr.Prompt, owner = pr, pr.Plugin
	case "ref/resource":
		t, ok := s.catalog.Template(p.Ref.URI)
		if !ok || !s.pluginGranted(req.Extra, t.Plugin) {
			return nil, invalidParams("completion/complete: %q is not a resource template of this server", p.Ref.URI)
		}
		cr.Template, owner = t, t.Plugin
	default:
		return nil, invalidParams("completion/complete: ref type %q is not ref/prompt or ref/resource", p.Ref.Type)
	}
	b := s.featureBridge(req.Session, owner, "completion/complete", nil)
	out, err := owner.Complete(ctx, cr, b)
	if err != nil {
		return nil, s.featureError(ctx, "completion/complete", err)
	}
	var res mcp.CompleteResult
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, s.featureError(ctx, "completion/complete", malformed(owner, err))
	}
	return &res, nil
}

// subscribe accepts a subscription to any resource this server offers; the SDK
// records it for the session.
func (s *Server) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	if handled, err := s.subscribeTaskLog(ctx, req); handled {
		return err
	}
	uri := req.Params.URI
	if r, ok := s.catalog.Resource(uri); ok && s.pluginGranted(req.Extra, r.Plugin) {
		return nil
	}
	for _, t := range s.catalog.Templates() {
		if t.Match(uri) && s.pluginGranted(req.Extra, t.Plugin) {
			return nil
		}
	}
	return mcp.ResourceNotFoundError(uri)
}

// featureMRTR is the multi round trip of one resources/read or prompts/get on
// 2026-07-28 (SEP-2322 allows InputRequiredResult on both): the guest runs again
// with the answers, as a tool's does (see callSync). nil elsewhere, where the
// bridge asks the client on the session.
type featureMRTR struct {
	s      *Server
	c      caller
	run    *mrtrRun
	runCtx context.Context
}

// featureRound prepares b for a multi round trip where the caller's wire has one.
func (s *Server) featureRound(ctx context.Context, b *bridge, label string, args json.RawMessage, state string, responses mcp.InputResponseMap) (*featureMRTR, error) {
	c := callerFrom(ctx, b.session)
	b.caps = c.caps
	if !c.wire.stateless() {
		return nil, nil
	}
	answers, err := s.replayedAnswers(label, args, state, responses, c)
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	b.mrtr = &mrtrRun{answers: answers, cancel: cancel}
	return &featureMRTR{s: s, c: c, run: b.mrtr, runCtx: runCtx}, nil
}

// ctx is the context the guest runs in: one the round can end.
func (f *featureMRTR) ctx(parent context.Context) context.Context {
	if f == nil {
		return parent
	}
	return f.runCtx
}

// end returns the input requests and signed state that end this round, if the
// guest asked for input the client has not given yet, or the error of an answer of
// the wrong shape. The middleware renders them as the wire's InputRequiredResult
// (no contents, messages, ttlMs or cacheScope).
func (f *featureMRTR) end(label string, args json.RawMessage) (mcp.InputRequestMap, string, error) {
	if f == nil {
		return nil, "", nil
	}
	defer f.run.cancel()
	pending, prior, bad := f.run.asked()
	if bad != nil {
		return nil, "", bad
	}
	if pending == nil {
		return nil, "", nil
	}
	return f.s.inputRequired(label, args, f.c, pending, prior)
}

// featureBridge carries the guest requests of a resource read, prompt or completion
// to the session that asked.
func (s *Server) featureBridge(ss *mcp.ServerSession, p *plugins.Plugin, label string, progressToken any) *bridge {
	return &bridge{session: ss, plugin: p, label: label, logger: s.logger, progressToken: progressToken, srv: s}
}

func malformed(p *plugins.Plugin, err error) error {
	return &sandbox.GuestError{Kind: sandbox.KindOutput, Message: fmt.Sprintf("plugin %q returned a malformed result: %v", p.Name, err)}
}

// featureError maps the failure of a resource read, prompt or completion to a
// JSON-RPC error: refused parameters are -32602; a guest that failed is -32603 with
// a message a person understands.
func (s *Server) featureError(ctx context.Context, method string, err error) error {
	var pe *plugins.ParamsError
	if errors.As(err, &pe) {
		return invalidParams("%s", pe.Reason)
	}
	if busy := busyError(ctx, s, err); busy != nil {
		return busy
	}
	var ge *sandbox.GuestError
	if errors.As(err, &ge) {
		s.logger.WarnContext(ctx, "guest failed", "method", method, "kind", ge.Kind, "err", ge.Message)
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: ge.Message}
	}
	s.logger.ErrorContext(ctx, method+" failed", "err", err)
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

// resourceUpdated serves a guest's resource_updated request: clients subscribed to
// the URI are told it changed. A plugin may announce only its own resources.
func (b *bridge) resourceUpdated(ctx context.Context, params []byte) ([]byte, error) {
	var p struct {
		URI string `json:"uri"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, fmt.Errorf("resource_updated params: %w", err)
	}
	owner := b.servedBy()
	if p.URI == "" || owner == nil || !owner.Owns(p.URI) {
		return nil, fmt.Errorf("resource_updated: %q is not a resource of this plugin", p.URI)
	}
	if b.srv == nil {
		return nil, sandbox.ErrUnavailable
	}
	if err := b.srv.notifyResourceUpdated(context.WithoutCancel(ctx), p.URI); err != nil {
		return nil, err
	}
	return []byte("{}"), nil
}
