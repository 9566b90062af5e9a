package host

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// maxRetry bounds the reconnection delay a guest may ask clients to wait.
const maxRetry = time.Minute

// eventStoreBytes bounds the messages kept for replay to reconnecting clients, across
// all sessions; the oldest are dropped first.
const eventStoreBytes = 16 << 20

// newEventStore keeps what the server sends on Streamable HTTP so that a client
// that lost a stream can reconnect with Last-Event-ID and get the rest (MCP
// 2025-11-25 resumability). With a store the SDK also opens every SSE response with a
// priming event (an id and empty data).
func newEventStore() mcp.EventStore {
	es := mcp.NewMemoryEventStore(nil)
	es.SetMaxBytes(eventStoreBytes)
	return es
}

// closeStreamOf returns the function that closes the HTTP response stream of a
// tools/call, or nil where there is none (stdio, in-memory).
func closeStreamOf(req *mcp.CallToolRequest) func(mcp.CloseSSEStreamArgs) {
	if req.Extra == nil {
		return nil
	}
	return req.Extra.CloseSSEStream
}

// closeStreamRequest serves a guest's close_stream request: the call's SSE response
// stream is closed with a retry hint, the call goes on, and what it sends afterwards
// is kept for the client's reconnection (SEP-1699 polling). Unavailable outside a
// direct tools/call over resumable Streamable HTTP (Options.ResumableStreams).
func (b *bridge) closeStreamRequest(params []byte) ([]byte, error) {
	var p struct {
		RetryMs int64 `json:"retryMs"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, fmt.Errorf("close_stream params: %w", err)
	}
	if p.RetryMs < 0 || time.Duration(p.RetryMs)*time.Millisecond > maxRetry {
		return nil, fmt.Errorf("close_stream: retryMs %d is not between 0 and %d", p.RetryMs, maxRetry.Milliseconds())
	}
	// Before 2025-11-25 a closed stream cannot be resumed: the result would be lost.
	// A stateless call (2026-07-28, b.mrtr set) has no event store to resume from.
	if b.closeStream == nil || b.currentTask() != nil || b.mrtr != nil || b.srv == nil || !b.srv.resumable || versionOf(b.session) < "2025-11-25" {
		return nil, sandbox.ErrUnavailable
	}
	b.closeStream(mcp.CloseSSEStreamArgs{RetryAfter: time.Duration(p.RetryMs) * time.Millisecond})
	return []byte("{}"), nil
}

// sessionVersion makes the protocol version a session negotiated govern its
// requests on a resumable server. A client may send an older MCP-Protocol-Version header on a request of a
// session that negotiated a newer one (the conformance suite's SSE scenarios send
// 2025-03-26 on a 2025-11-25 session); the SDK would then leave out what that
// session's version promises (priming events, retry hints). The header is replaced
// by the negotiated version; a version the server does not support is left for the
// SDK to refuse.
func (s *Server) sessionVersion(next http.Handler) http.Handler {
	if !s.resumable {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := r.Header.Get("Mcp-Protocol-Version")
		id := r.Header.Get("Mcp-Session-Id")
		if v != "" && id != "" && v < ProtocolVersions[0] && slices.Contains(ProtocolVersions, v) {
			if nv := s.negotiated(id); nv != "" && nv > v {
				r.Header.Set("Mcp-Protocol-Version", nv)
			}
		}
		next.ServeHTTP(w, r)
	})
}

// negotiated returns the protocol version of the session with this ID, or "".
func (s *Server) negotiated(id string) string {
	for ss := range s.mcp.Sessions() {
		if ss.ID() != id {
			continue
		}
		return versionOf(ss)
	}
	return ""
}

// versionOf returns the protocol version a session negotiated: the client's if the
// server offers it, else the server's newest; "" before initialize.
func versionOf(ss *mcp.ServerSession) string {
	init := ss.InitializeParams()
	if init == nil {
		return ""
	}
	if slices.Contains(ProtocolVersions, init.ProtocolVersion) {
		return init.ProtocolVersion
	}
	return ProtocolVersions[0]
}
