package guest

import (
	"encoding/json"
	"fmt"
	"slices"
)

// MaxInputRequests is the most requests one [Call.Ask] may make.
const MaxInputRequests = 16

// InputRequest is one request of [Call.Ask]: elicitation/create, sampling/createMessage
// or roots/list, with its params. Make one with [ElicitInput], [SampleInput] or
// [RootsInput].
type InputRequest struct {
	Method string `json:"method"`
	Params any    `json:"params,omitempty"`
}

// ElicitInput asks the user for input, as [Call.Elicit] does.
func ElicitInput(message string, schema any) InputRequest {
	return InputRequest{Method: "elicitation/create", Params: ElicitRequest{Message: message, RequestedSchema: schema}}
}

// SampleInput asks the client's model for a completion, as [Call.Sample] does.
func SampleInput(req SampleRequest) InputRequest {
	return InputRequest{Method: "sampling/createMessage", Params: req}
}

// RootsInput asks the client for its roots (MCP roots/list), as [Call.ListRoots] does.
func RootsInput() InputRequest {
	return InputRequest{Method: "roots/list", Params: struct{}{}}
}

// Root is a directory or file the client offers the server (MCP roots).
type Root struct {
	URI  string `json:"uri"`
	Name string `json:"name,omitempty"`
}

// Answers are the client's answers to a [Call.Ask], by the keys the guest chose.
type Answers struct {
	Responses map[string]json.RawMessage `json:"responses"`
	// Unavailable lists the keys whose requests the client cannot answer (it did
	// not declare the capability); they were not asked.
	Unavailable []string `json:"unavailable,omitempty"`
}

// Available reports whether the request under key was asked.
func (a *Answers) Available(key string) bool { return !slices.Contains(a.Unavailable, key) }

// Elicit returns the answer to the elicitation under key.
func (a *Answers) Elicit(key string) (*ElicitResult, error) { return answer[ElicitResult](a, key) }

// Sample returns the answer to the sampling request under key.
func (a *Answers) Sample(key string) (*SampleResult, error) { return answer[SampleResult](a, key) }

// Roots returns the answer to the roots/list request under key.
func (a *Answers) Roots(key string) ([]Root, error) {
	r, err := answer[struct {
		Roots []Root `json:"roots"`
	}](a, key)
	if err != nil {
		return nil, err
	}
	return r.Roots, nil
}

func answer[R any](a *Answers, key string) (*R, error) {
	raw, ok := a.Responses[key]
	if !ok {
		if !a.Available(key) {
			return nil, ErrUnavailable
		}
		return nil, fmt.Errorf("no answer under %q", key)
	}
	r := new(R)
	if err := json.Unmarshal(raw, r); err != nil {
		return nil, fmt.Errorf("answer %q: %w", key, err)
	}
	return r, nil
}

// Ask makes several requests for input at once (ABI v1.3), each under a key of the
// guest's choosing (1-64 bytes): on MCP 2026-07-28 a client sees these keys in the
// InputRequiredResult. It blocks until every request the client can answer is
// answered; those it cannot (a capability it did not declare) are listed in
// Answers.Unavailable, and if it can answer none, Ask returns ErrUnavailable. A host
// older than ABI v1.3 answers ErrUnsupported.
func (c *Call) Ask(reqs map[string]InputRequest) (*Answers, error) {
	if len(reqs) == 0 || len(reqs) > MaxInputRequests {
		return nil, fmt.Errorf("ask: 1-%d requests, not %d", MaxInputRequests, len(reqs))
	}
	a, err := roundTrip[Answers](c, "input", struct {
		Requests map[string]InputRequest `json:"requests"`
	}{reqs})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// ListRoots asks the client for its roots. It returns ErrUnavailable when the
// client declared no roots capability. Roots are deprecated in MCP 2026-07-28
// (SEP-2577); on that version they reach the client only by multi round trip.
func (c *Call) ListRoots() ([]Root, error) {
	a, err := c.Ask(map[string]InputRequest{"roots": RootsInput()})
	if err != nil {
		return nil, err
	}
	return a.Roots("roots")
}
