package nethttp

import (
	"encoding/json"
	"errors"
	"fmt"
)

// FetchRequest is an HTTP request the host makes for the guest (the ABI's "http"
// request). The host allows only the origins its operator granted the plugin in
// config.toml ([[plugins.net]]), and adds the credentials the operator configured
// there itself: the guest never sees them and may not set those headers.
type FetchRequest struct {
	Method  string            `json:"method,omitempty"` // "" means GET
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    []byte            `json:"body,omitempty"` // base64 on the wire
}

// FetchResponse is the answer, after the host followed any redirects.
type FetchResponse struct {
	Status  int                 `json:"status"`
	Headers map[string][]string `json:"headers"`
	Body    []byte              `json:"body"` // base64 on the wire
}

// ErrUnsupported is returned by a host without the "http" request, and outside a
// WebAssembly guest.
var ErrUnsupported = errors.New("the host does not make http requests")

// Fetch makes req through the host and blocks until the response has been read in
// full. A request the operator's policy refuses, or that fails, returns an error
// that says why (naming the rule).
func Fetch(req FetchRequest) (*FetchResponse, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode http request: %w", err)
	}
	reply, err := request("http", b)
	if err != nil {
		return nil, err
	}
	var r FetchResponse
	if err := json.Unmarshal(reply, &r); err != nil {
		return nil, fmt.Errorf("decode http reply: %w", err)
	}
	return &r, nil
}

// OnCancel registers req for the host to make itself if this call is cancelled
// (tasks/cancel, the client of a synchronous call going away): the guest gets no
// chance to run then, so this is how it cancels remote work it started, such as
// DELETE on a job. The policy checks req at once and refuses it with the same error
// as Fetch. One request per call: registering again replaces it, and nil clears it.
// If the call ends any other way (a result, an error, its time limit) the host
// drops it unsent. ABI request "http_on_cancel" (docs/ABI.md).
func OnCancel(req *FetchRequest) error {
	b := []byte("null")
	if req != nil {
		var err error
		if b, err = json.Marshal(req); err != nil {
			return fmt.Errorf("encode http_on_cancel request: %w", err)
		}
	}
	_, err := request("http_on_cancel", b)
	return err
}
