package guest

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

// Fetch makes req through the host and blocks until the response has been read in
// full. A request the operator's policy refuses, or that fails, returns an error that
// says why (naming the rule); a host without the method returns ErrUnsupported.
// For net/http, use the sdk-guest/nethttp package's Transport.
func (c *Call) Fetch(req FetchRequest) (*FetchResponse, error) {
	return roundTrip[FetchResponse](c, "http", req)
}
