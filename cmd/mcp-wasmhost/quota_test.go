package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/mcptest"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
)

// twoKeys is an api_keys [server.auth] with keys "key-a" (identity a) and "key-b"
// (b), both granted every tool, and extra lines in [server.auth]; tasks holds
// extra [tasks] lines.
func twoKeys(t *testing.T, auth, tasks string) string {
	sum := func(k string) string { s := sha256.Sum256([]byte(k)); return hex.EncodeToString(s[:]) }
	return writeConfig(t, fmt.Sprintf("[server]\ncache_dir = %q\n\n[tasks]\ndata_dir = %q\n%s\n", testenv.CacheDir(), t.TempDir(), tasks)+
		fmt.Sprintf(`[server.auth]
mode = "api_keys"
%s
[[server.auth.keys]]
name = "a"
sha256 = %q
scopes = ["all"]

[[server.auth.keys]]
name = "b"
sha256 = %q
scopes = ["all"]

[[server.auth.grants]]
scope = "all"
tools = ["*"]

`, auth, sum("key-a"), sum("key-b"))+pluginTOML(t, "toolbox", "plugins/toolbox/toolbox.wasm", ""))
}

// refusedBy checks that resp is the quota refusal of quota with limit: HTTP 429,
// Retry-After, JSON-RPC -32000 naming the limit, data {quota, limit, retryAfter}.
func refusedBy(t *testing.T, what string, resp *mcptest.Response, quota string, limit float64) {
	t.Helper()
	if resp.Error == nil {
		t.Errorf("%s = %s, want refused by %s", what, resp.Result, quota)
		return
	}
	var data struct {
		Quota      string  `json:"quota"`
		Limit      float64 `json:"limit"`
		RetryAfter int     `json:"retryAfter"`
	}
	err := json.Unmarshal(resp.Error.Data, &data)
	if resp.Error.Code != -32000 || !strings.Contains(resp.Error.Message, quota) || err != nil ||
		data.Quota != quota || data.Limit != limit || data.RetryAfter < 1 {
		t.Errorf("%s = %d %q data %s, want -32000 naming %s with data {quota %s, limit %g, retryAfter >= 1}",
			what, resp.Error.Code, resp.Error.Message, resp.Error.Data, quota, quota, limit)
	}
	if ra, _ := strconv.Atoi(resp.Header.Get("Retry-After")); resp.HTTPStatus != http.StatusTooManyRequests || ra < 1 {
		t.Errorf("%s: HTTP %d Retry-After %q, want 429 with a positive Retry-After", what, resp.HTTPStatus, resp.Header.Get("Retry-After"))
	}
}

// served checks that resp is a result over HTTP 200 and returns its task id, if any.
func served(t *testing.T, what string, resp *mcptest.Response, err error) string {
	t.Helper()
	if err != nil || resp.Error != nil || resp.HTTPStatus != http.StatusOK {
		t.Fatalf("%s = %+v, %v, want served", what, resp, err)
	}
	var created struct {
		TaskID string `json:"taskId"`
	}
	json.Unmarshal(resp.Result, &created)
	return created.TaskID
}

// waitTask polls id until its status is want.
func waitTask(t *testing.T, s *mcptest.Stateless, id, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := s.Call("tasks/get", map[string]any{"taskId": id}, nil)
		if err == nil && resp.Error == nil && strings.Contains(string(resp.Result), `"status":"`+want+`"`) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s never %s: %+v, %v", id, want, resp, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestAuthQuotas: one identity at each of its quotas is refused (429, -32000 with
// the quota's data) while another identity is served, and served again once below.
func TestAuthQuotas(t *testing.T) {
	clients := func(url string) (a, b *mcptest.Stateless) {
		mk := func(key string) *mcptest.Stateless {
			return &mcptest.Stateless{URL: url, Caps: mcptest.TasksExtension(), Client: &http.Client{Transport: bearer{key}}}
		}
		return mk("key-a"), mk("key-b")
	}
	call := func(s *mcptest.Stateless, tool string, args map[string]any) (*mcptest.Response, error) {
		return s.Call("tools/call", map[string]any{"name": tool, "arguments": args}, nil)
	}
	slow := map[string]any{"to": 600, "delay_ms": 100} // a minute: cancelled below
	format := map[string]any{"json": "{}"}
	note := map[string]any{"name": "q.txt", "text": "parked"}

	t.Run("max_parked", func(t *testing.T) {
		url, _ := startHTTP(t, twoKeys(t, "max_parked = 1", ""))
		a, b := clients(url)
		r, err := call(a, "toolbox_write_note", note)
		parked := served(t, "a's write_note", r, err)
		if parked == "" {
			t.Fatalf("a's write_note = %s, want a task", r.Result)
		}
		waitTask(t, a, parked, "input_required")
		r, err = call(a, "toolbox_json_format", format)
		if err != nil {
			t.Fatal(err)
		}
		refusedBy(t, "a's json_format with a task parked", r, "max_parked", 1)
		r, err = call(b, "toolbox_json_format", format)
		served(t, "b's json_format", r, err)
		r, err = a.Call("tasks/cancel", map[string]any{"taskId": parked}, nil)
		served(t, "a's tasks/cancel", r, err)
		r, err = call(a, "toolbox_json_format", format)
		served(t, "a's json_format after cancelling", r, err)
	})

	t.Run("max_tool_concurrency", func(t *testing.T) {
		url, _ := startHTTP(t, twoKeys(t, "max_tool_concurrency = 1", ""))
		a, b := clients(url)
		r, err := call(a, "toolbox_slow_count", slow)
		running := served(t, "a's first slow_count", r, err)
		if running == "" {
			t.Fatalf("a's slow_count = %s, want a task", r.Result)
		}
		r, err = call(a, "toolbox_slow_count", slow)
		if err != nil {
			t.Fatal(err)
		}
		refusedBy(t, "a's second slow_count", r, "max_tool_concurrency", 1)
		r, err = call(a, "toolbox_json_format", format)
		served(t, "a's json_format (another tool)", r, err)
		// A 2025-11-25 session of a's counts with its stateless requests: go-sdk's
		// client sees the 429 as a transient refusal and keeps the session.
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "q", Version: "1"}, nil).Connect(t.Context(),
			&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{"key-a"}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "toolbox_slow_count", Arguments: map[string]any{"to": 1}}); err == nil || !strings.Contains(err.Error(), "Too Many Requests") {
			t.Errorf("a's session call of slow_count = %v, want refused with 429", err)
		}
		if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "toolbox_json_format", Arguments: format}); err != nil {
			t.Errorf("a's session after the refusal: %v, want served", err)
		}
		r, err = call(b, "toolbox_slow_count", slow)
		if id := served(t, "b's slow_count", r, err); id != "" {
			b.Call("tasks/cancel", map[string]any{"taskId": id}, nil)
		}
		r, err = a.Call("tasks/cancel", map[string]any{"taskId": running}, nil)
		served(t, "a's tasks/cancel", r, err)
		// The slot goes back when the task's run has ended.
		deadline := time.Now().Add(10 * time.Second)
		for {
			r, err = call(a, "toolbox_slow_count", map[string]any{"to": 1, "delay_ms": 0})
			if err == nil && r.Error == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a's slow_count after cancelling = %+v, %v, want served", r, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})

	t.Run("max_per_client", func(t *testing.T) {
		url, _ := startHTTP(t, twoKeys(t, "", "max_per_client = 1"))
		a, b := clients(url)
		r, err := call(a, "toolbox_slow_count", slow)
		running := served(t, "a's slow_count", r, err)
		r, err = call(a, "toolbox_timer", map[string]any{"seconds": 60})
		if err != nil {
			t.Fatal(err)
		}
		refusedBy(t, "a's second task", r, "max_per_client", 1)
		r, err = call(b, "toolbox_timer", map[string]any{"seconds": 60})
		if id := served(t, "b's task", r, err); id != "" {
			b.Call("tasks/cancel", map[string]any{"taskId": id}, nil)
		}
		a.Call("tasks/cancel", map[string]any{"taskId": running}, nil)
	})
}

// TestAuthRateLimitJSONRPC: a request over its identity's rate limit gets 429 with
// Retry-After and the JSON-RPC error of every quota refusal for its own id; another
// identity is served meanwhile.
func TestAuthRateLimitJSONRPC(t *testing.T) {
	url, _ := startHTTP(t, twoKeys(t, "rate_limit = 0.1\nrate_burst = 1", ""))
	post := func(key string, id any) (*http.Response, []byte) {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": map[string]any{
			"_meta": map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
				"io.modelcontextprotocol/clientInfo": map[string]any{"name": "raw", "version": "1"}, "io.modelcontextprotocol/clientCapabilities": map[string]any{}}}})
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/list")
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, b
	}
	if resp, body := post("key-a", 1); resp.StatusCode != 200 {
		t.Fatalf("a's first request = %d %s, want 200", resp.StatusCode, body)
	}
	for _, id := range []any{"req-7", 8} {
		resp, body := post("key-a", id)
		var answer struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   struct {
				Code    int64  `json:"code"`
				Message string `json:"message"`
				Data    struct {
					Quota      string  `json:"quota"`
					Limit      float64 `json:"limit"`
					RetryAfter int     `json:"retryAfter"`
				} `json:"data"`
			} `json:"error"`
		}
		err := json.Unmarshal(body, &answer)
		wantID, _ := json.Marshal(id)
		ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		if resp.StatusCode != 429 || ra < 1 || err != nil || answer.JSONRPC != "2.0" || string(answer.ID) != string(wantID) ||
			answer.Error.Code != -32000 || !strings.Contains(answer.Error.Message, "rate_limit") ||
			answer.Error.Data.Quota != "rate_limit" || answer.Error.Data.Limit != 0.1 || answer.Error.Data.RetryAfter != ra ||
			resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("a over its rate (id %v) = %d Retry-After %q %s (%v), want 429 and a -32000 rate_limit error for id %s",
				id, resp.StatusCode, resp.Header.Get("Retry-After"), body, err, wantID)
		}
	}
	if resp, body := post("key-b", 1); resp.StatusCode != 200 {
		t.Errorf("b's request while a is limited = %d %s, want 200", resp.StatusCode, body)
	}
}
