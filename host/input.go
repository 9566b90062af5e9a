package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// maxInputRequests bounds the requests of one "input" request.
const maxInputRequests = 16

// inputItem is one request of a guest's "input" request (ABI v1.3).
type inputItem struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// inputReply answers an "input" request: the client's results by key, and the keys
// whose capability the client did not declare (those were not asked).
type inputReply struct {
	Responses   map[string]json.RawMessage `json:"responses"`
	Unavailable []string                   `json:"unavailable,omitempty"`
}

// input serves the "input" request (ABI v1.3): up to maxInputRequests requests for
// input at once (elicitation/create, sampling/createMessage, roots/list), each under
// a key the guest chose. Where the call answers by multi round trip (2026-07-28) the
// keys are those of the InputRequiredResult, so a client sees the guest's names.
// Requests the client cannot answer (it did not declare the capability) are not
// sent and come back in "unavailable"; if none can be sent the request fails with
// sandbox.ErrUnavailable.
func (b *bridge) input(ctx context.Context, params []byte) ([]byte, error) {
	var p struct {
		Requests map[string]inputItem `json:"requests"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, fmt.Errorf("input params: %w", err)
	}
	if len(p.Requests) == 0 || len(p.Requests) > maxInputRequests {
		return nil, fmt.Errorf("input params: requests must hold 1-%d requests, not %d", maxInputRequests, len(p.Requests))
	}
	keys := make([]string, 0, len(p.Requests))
	for k := range p.Requests {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the same order on every run of the call
	var reqs []pendingInput
	var reply inputReply
	for _, k := range keys {
		if k == "" || len(k) > 64 {
			return nil, fmt.Errorf("input params: a key must be 1-64 bytes, not %q", k)
		}
		it := p.Requests[k]
		q, ok, err := b.inputRequest(it)
		if err != nil {
			return nil, fmt.Errorf("input params: requests[%q]: %w", k, err)
		}
		if !ok {
			reply.Unavailable = append(reply.Unavailable, k)
			continue
		}
		q.key = k
		reqs = append(reqs, q)
	}
	if len(reqs) == 0 {
		return nil, sandbox.ErrUnavailable
	}
	out, err := b.ask(ctx, reqs)
	if err != nil {
		return nil, err
	}
	reply.Responses = make(map[string]json.RawMessage, len(reqs))
	for i, q := range reqs {
		if err := checkAnswer(q.method, out[i]); err != nil {
			return nil, fmt.Errorf("the answer to %q: %w", q.key, err)
		}
		reply.Responses[q.key] = out[i]
	}
	return json.Marshal(reply)
}

// inputRequest checks one request of an "input" request and reports whether the
// client declared what it needs.
func (b *bridge) inputRequest(it inputItem) (pendingInput, bool, error) {
	params := it.Params
	if len(params) == 0 || string(params) == "null" {
		params = []byte("{}")
	}
	switch it.Method {
	case "elicitation/create":
		var q elicitQuestion
		if err := json.Unmarshal(params, &q); err != nil {
			return pendingInput{}, false, err
		}
		ep, err := q.params()
		if err != nil {
			return pendingInput{}, false, err
		}
		return pendingInput{method: it.Method, params: ep}, b.elicitable(), nil
	case "sampling/createMessage":
		var cp mcp.CreateMessageParams
		if err := json.Unmarshal(params, &cp); err != nil {
			return pendingInput{}, false, err
		}
		if len(cp.Messages) == 0 || cp.MaxTokens <= 0 {
			return pendingInput{}, false, errors.New("messages and a positive maxTokens are required")
		}
		cp.Meta = nil // _meta is the host's to set, never the guest's
		return pendingInput{method: it.Method, params: &cp}, b.caps != nil && b.caps.Sampling != nil, nil
	case "roots/list":
		return pendingInput{method: it.Method, params: &mcp.ListRootsParams{}}, rootsDeclared(b.caps), nil
	}
	return pendingInput{}, false, fmt.Errorf("method %q is not elicitation/create, sampling/createMessage or roots/list", it.Method)
}

// rootsDeclared reports whether caps declare roots (an empty "roots": {} included).
func rootsDeclared(caps *mcp.ClientCapabilities) bool {
	return caps != nil && (caps.RootsV2 != nil || caps.Roots.ListChanged)
}
