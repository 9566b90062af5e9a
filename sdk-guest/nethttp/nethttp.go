// Package nethttp lets a Go guest reach the network, where the operator allowed it:
// [Fetch] makes one request through the host's "http" request (docs/ABI.md), the
// guest's only way out, and [Transport] puts it under net/http.
//
//	client := &http.Client{Transport: nethttp.Transport(c)}
//	resp, err := client.Get("https://api.example.com/v1/items")
//
// It is a package of its own, apart from sdk-guest, so that guests which make no
// requests neither link net/http nor change. The host follows redirects itself (re-checking each hop), so the client
// sees the final response.
package nethttp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	guest "github.com/mcp-wasmhost/mcp-wasmhost/sdk-guest"
)

// MaxRequestBody is the largest body Transport sends: the ABI carries it in the
// request's params (64 KiB), base64-encoded. The host's own limit may be lower.
const MaxRequestBody = 48 << 10

// Transport returns an http.RoundTripper that makes requests through the host for
// the call c, the one running in this instance: use it only while c runs.
func Transport(c *guest.Call) http.RoundTripper { return transport{c} }

type transport struct {
	c *guest.Call // the requests' call; the host knows it from the instance
}

var _ http.RoundTripper = transport{}

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		defer req.Body.Close()
	}
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	fr := FetchRequest{Method: req.Method, URL: req.URL.String(), Headers: map[string]string{}}
	for k, v := range req.Header {
		fr.Headers[k] = strings.Join(v, ", ")
	}
	if req.Body != nil {
		b, err := io.ReadAll(io.LimitReader(req.Body, MaxRequestBody+1))
		if err != nil {
			return nil, fmt.Errorf("read request body: %w", err)
		}
		if len(b) > MaxRequestBody {
			return nil, errors.New("request body exceeds 48 KiB")
		}
		fr.Body = b
	}
	res, err := Fetch(fr)
	if err != nil {
		return nil, err
	}
	return &http.Response{
		Status:        strconv.Itoa(res.Status) + " " + http.StatusText(res.Status),
		StatusCode:    res.Status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header(res.Headers),
		Body:          io.NopCloser(bytes.NewReader(res.Body)),
		ContentLength: int64(len(res.Body)),
		Request:       req,
	}, nil
}
