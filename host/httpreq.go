package host

import (
	"context"
	"crypto/rand"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The go-sdk hands a request's handler the HTTP headers of the POST that carried it
// (RequestExtra.Header), but not that POST's context or the client's address: its
// handlers run on the session's connection, whose context never ends with one HTTP
// request (jsonrpc2 wraps it in notDone on purpose). So a sync call went on after its
// client had gone, and an anonymous stateless request could not be told apart from
// another one.
//
// httpRequests closes the gap: every HTTP request gets the header requestHeader, set
// by the server over anything the client sent, naming the request in a registry for
// as long as it is served. From the header a handler finds the HTTP request: its
// context (it ends when the client closes the connection or the stream) and the
// client's address.

// requestHeader names the HTTP request a message came in; only the server sets it.
const requestHeader = "Mcp-Wasmhost-Http-Request"

// httpRequest is what the server knows of the HTTP request a message came in.
type httpRequest struct {
	ctx    context.Context // ends when the client goes away, or the request has been served
	source netip.Prefix    // the client's address: its IPv4 address, or its IPv6 /64
	// refused is the Retry-After (seconds) of a quota refusal answered in this
	// request, 0 if none: the response then goes out as 429 (refusedWriter).
	refused atomic.Int64
}

// refuse marks hr's response as a quota refusal: 429 with Retry-After seconds,
// if its status has not gone out yet. A nil hr (not over HTTP) does nothing.
func (hr *httpRequest) refuse(retryAfter int) {
	if hr != nil {
		hr.refused.Store(int64(max(1, retryAfter)))
	}
}

// refusedWriter turns the 200 of a response that answers a quota refusal into 429
// with Retry-After. A response whose status already went out (a resumable stream's
// priming event) keeps it: its JSON-RPC error alone says it.
type refusedWriter struct {
	http.ResponseWriter
	hr    *httpRequest
	wrote bool
}

func (w *refusedWriter) WriteHeader(code int) {
	if !w.wrote {
		w.wrote = true
		if ra := w.hr.refused.Load(); ra > 0 && code == http.StatusOK {
			w.Header().Set("Retry-After", strconv.FormatInt(ra, 10))
			code = http.StatusTooManyRequests
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *refusedWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *refusedWriter) Flush() {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection (read deadlines).
func (w *refusedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// httpRequests is the registry of the HTTP requests being served. The zero value is
// ready.
type httpRequests struct {
	mu sync.Mutex
	m  map[string]*httpRequest
}

// track registers each request while next serves it.
func (r *httpRequests) track(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		token := rand.Text()
		hr := &httpRequest{ctx: req.Context(), source: sourceOf(req.RemoteAddr)}
		r.mu.Lock()
		if r.m == nil {
			r.m = map[string]*httpRequest{}
		}
		r.m[token] = hr
		r.mu.Unlock()
		defer func() {
			r.mu.Lock()
			delete(r.m, token)
			r.mu.Unlock()
		}()
		req.Header.Set(requestHeader, token) // replaces whatever the client sent
		next.ServeHTTP(&refusedWriter{ResponseWriter: w, hr: hr}, req)
	})
}

// of returns the HTTP request a message came in, or nil (not over HTTP, or already
// served).
func (r *httpRequests) of(extra *mcp.RequestExtra) *httpRequest {
	if extra == nil || extra.Header == nil {
		return nil
	}
	token := extra.Header.Get(requestHeader)
	if token == "" {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m[token]
}

// sourceOf is the client of remoteAddr as quotas count it: an IPv4 address, or the
// /64 an IPv6 address is in (one host commonly holds a whole /64, and could
// otherwise take as many shares as it likes). Unparsable is the zero Prefix, one
// source for all such.
func sourceOf(remoteAddr string) netip.Prefix {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Prefix{}
	}
	a = a.Unmap()
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.WithZone("").Prefix(bits)
	return p
}
