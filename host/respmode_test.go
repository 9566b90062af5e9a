package host_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/mcptest"
)

// TestPlainJSONCall2026: a stateless tools/call that cannot stream is answered with
// application/json, the same answer, byte for byte, that an SSE answer carries; a call
// that may stream (a progressToken, a logLevel, a task, any other _meta key) keeps the
// SSE stream.
func TestPlainJSONCall2026(t *testing.T) {
	f := newFixture2026(t)
	c := &mcptest.Stateless{URL: f.url, Caps: allCaps}
	args := map[string]any{}
	tests := []struct {
		name      string
		tool      string
		meta      map[string]any
		task      bool
		wantJSON  bool
		wantFrame bool // the SSE answer carries notifications before it
	}{
		{"quiet call", "test_logging_tool", nil, false, true, false},
		{"quiet input required", "test_input_required_result_elicitation", nil, false, true, false},
		{"progress token", "test_logging_tool", map[string]any{"progressToken": 7}, false, false, false},
		{"log level", "test_logging_tool", map[string]any{"io.modelcontextprotocol/logLevel": "info"}, false, false, true},
		{"other meta key", "test_logging_tool", map[string]any{"example.com/x": 1}, false, false, false},
		{"task", "slow_compute", nil, true, false, false},
		// An unknown tool is an error the SDK answers as plain JSON (with its HTTP
		// status) on either handler.
		{"unknown tool", "no_such_tool", nil, false, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := map[string]any{"name": tt.tool, "arguments": args}
			if tt.meta != nil {
				p["_meta"] = tt.meta
			}
			if tt.task {
				p["arguments"] = map[string]any{"seconds": 0}
				p["task"] = map[string]any{}
			}
			r, err := c.Call("tools/call", p, nil)
			if err != nil {
				t.Fatal(err)
			}
			ct := r.Header.Get("Content-Type")
			if got := strings.HasPrefix(ct, "application/json"); got != tt.wantJSON {
				t.Errorf("tools/call %s: Content-Type %q, want JSON %v", tt.name, ct, tt.wantJSON)
			}
			if got := len(r.Frames) > 0; got != tt.wantFrame {
				t.Errorf("tools/call %s: %d notifications, want some %v", tt.name, len(r.Frames), tt.wantFrame)
			}
		})
	}

	// The same call through both paths: the only difference is a _meta key that
	// changes nothing but the answer's framing.
	for _, tool := range []string{"test_logging_tool", "test_input_required_result_elicitation", "no_such_tool"} {
		plain, err := c.Call("tools/call", map[string]any{"name": tool, "arguments": args}, nil)
		if err != nil {
			t.Fatal(err)
		}
		sse, err := c.Call("tools/call", map[string]any{"name": tool, "arguments": args,
			"_meta": map[string]any{"example.com/x": 1}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(sse.Header.Get("Content-Type"), "text/event-stream") && tool != "no_such_tool" {
			t.Errorf("%s with another _meta key: Content-Type %q, want SSE", tool, sse.Header.Get("Content-Type"))
		}
		if plain.HTTPStatus != sse.HTTPStatus || !sameJSON(plain.Result, sse.Result) || !sameJSON(jsonOf(plain.Error), jsonOf(sse.Error)) {
			t.Errorf("%s: plain JSON answered %d %s %s, SSE %d %s %s", tool, plain.HTTPStatus, plain.Result, jsonOf(plain.Error),
				sse.HTTPStatus, sse.Result, jsonOf(sse.Error))
		}
	}
}

func jsonOf(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// sameJSON compares two JSON texts byte for byte after compaction, ignoring the
// requestState an InputRequiredResult signs afresh for every request.
func sameJSON(a, b []byte) bool {
	norm := func(x []byte) []byte {
		var m map[string]any
		if json.Unmarshal(x, &m) == nil {
			delete(m, "requestState")
			x, _ = json.Marshal(m)
		}
		var out bytes.Buffer
		json.Compact(&out, x)
		return out.Bytes()
	}
	return bytes.Equal(norm(a), norm(b))
}
