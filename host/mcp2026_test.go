package host_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/host"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/mcptest"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// What MCP 2026-07-28 requires of a server, each MUST with a test (docs/MCP-2026-07-28.md
// lists them). The server serves conformance/fix2026, the fixture of the 2026-07-28
// conformance scenarios, built from source (make plugins).

var shared2026 struct {
	once    sync.Once
	catalog *plugins.Catalog
	err     error
}

// newFixture2026 serves conformance/fix2026 (and taskfix, for a second plugin's
// tools) with a new server.
func newFixture2026(t *testing.T) *fixture {
	t.Helper()
	shared2026.once.Do(func() {
		ctx := context.Background()
		e, err := sandbox.NewEngine(ctx, sandbox.Options{CacheDir: testenv.CacheDir()})
		if err != nil {
			shared2026.err = err
			return
		}
		var loaded []*plugins.Plugin
		for _, name := range []string{"fix2026", "taskfix"} {
			s := testenv.Spec(t, name, "conformance/"+name+"/"+name+".wasm")
			s.Unprefixed = true
			p, err := plugins.Load(ctx, e, s)
			if err != nil {
				shared2026.err = err
				return
			}
			loaded = append(loaded, p)
		}
		shared2026.catalog, shared2026.err = plugins.NewCatalog(loaded)
	})
	if shared2026.err != nil {
		t.Fatal(shared2026.err)
	}
	srv, err := host.New(shared2026.catalog, host.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	f := &fixture{catalog: shared2026.catalog, srv: srv}
	hs := httptest.NewServer(srv.HTTPHandler())
	t.Cleanup(hs.Close)
	f.url = hs.URL + "/mcp"
	return f
}

// allCaps are the client capabilities the conformance suite declares.
var allCaps = map[string]any{"sampling": map[string]any{}, "elicitation": map[string]any{}, "roots": map[string]any{}}

// rawPost sends body to url as a 2026-07-28 request with headers (a "" value deletes
// one) and returns the HTTP status and the JSON-RPC message answered.
func rawPost(t *testing.T, url string, body string, headers map[string]string) (int, map[string]json.RawMessage) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if i := bytes.Index(b, []byte("data:")); i >= 0 { // an SSE answer: its last event
		lines := strings.Split(strings.TrimSpace(string(b[i:])), "\n")
		for j := len(lines) - 1; j >= 0; j-- {
			if d, ok := strings.CutPrefix(lines[j], "data:"); ok {
				b = []byte(d)
				break
			}
		}
	}
	var msg map[string]json.RawMessage
	json.Unmarshal(b, &msg)
	return resp.StatusCode, msg
}

func errorOf(t *testing.T, msg map[string]json.RawMessage) *jsonrpc.Error {
	t.Helper()
	var e *jsonrpc.Error
	if raw, ok := msg["error"]; ok {
		json.Unmarshal(raw, &e)
	}
	return e
}

// TestErrors2026: the errors 2026-07-28 defines, with their HTTP statuses.
func TestErrors2026(t *testing.T) {
	f := newFixture2026(t)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	tests := []struct {
		name    string
		body    string
		headers map[string]string
		status  int
		code    int64
		data    string // a substring of error.data
	}{
		{"missing _meta", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`,
			map[string]string{"Mcp-Method": "server/discover"}, 400, -32602, ""},
		{"missing clientCapabilities", `{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
			map[string]string{"Mcp-Method": "server/discover"}, 400, -32602, ""},
		{"unsupported version", `{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"v999.0.0","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			map[string]string{"Mcp-Method": "server/discover", "MCP-Protocol-Version": "v999.0.0"}, 400, -32022, `"requested":"v999.0.0"`},
		{"header differs from _meta", `{"jsonrpc":"2.0","id":4,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"v999.0.0","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			map[string]string{"Mcp-Method": "server/discover"}, 400, -32020, ""},
		{"capability not declared", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"test_missing_capability","arguments":{},` + meta + `}}`,
			map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "test_missing_capability"}, 400, -32021, `"requiredCapabilities":{"sampling":{}}`},
		{"resource not found", `{"jsonrpc":"2.0","id":6,"method":"resources/read","params":{"uri":"test://nothing-here",` + meta + `}}`,
			map[string]string{"Mcp-Method": "resources/read", "Mcp-Name": "test://nothing-here"}, 200, -32602, `test://nothing-here`},
		{"unknown method", `{"jsonrpc":"2.0","id":7,"method":"unknown/method","params":{` + meta + `}}`,
			map[string]string{"Mcp-Method": "unknown/method"}, 404, -32601, ""},
	}
	for _, m := range []string{"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"} {
		tests = append(tests, struct {
			name    string
			body    string
			headers map[string]string
			status  int
			code    int64
			data    string
		}{"removed " + m, `{"jsonrpc":"2.0","id":8,"method":"` + m + `","params":{"uri":"test://stateless-static-text",` + meta + `}}`,
			map[string]string{"Mcp-Method": m}, 404, -32601, ""})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, msg := rawPost(t, f.url, tt.body, tt.headers)
			e := errorOf(t, msg)
			if e == nil || e.Code != tt.code {
				t.Fatalf("answer = %v, want error %d", msg, tt.code)
			}
			if tt.status != 200 && status != tt.status {
				t.Errorf("HTTP %d, want %d", status, tt.status)
			}
			if !strings.Contains(string(e.Data), tt.data) {
				t.Errorf("error.data = %s, want %s in it", e.Data, tt.data)
			}
			var id json.RawMessage = msg["id"]
			if !strings.Contains(tt.body, `"id":`+string(id)+`,`) {
				t.Errorf("error id = %s, not the request's", id)
			}
		})
	}
}

// TestResults2026: resultType on every result; ttlMs and cacheScope on discover, the
// lists and reads; serverInfo in discover's _meta; no InputRequiredResult on methods
// other than tools/call, prompts/get and resources/read.
func TestResults2026(t *testing.T) {
	f := newFixture2026(t)
	c := &mcptest.Stateless{URL: f.url, Caps: allCaps}
	type result struct {
		ResultType string         `json:"resultType"`
		TTLMs      *int64         `json:"ttlMs"`
		CacheScope string         `json:"cacheScope"`
		Meta       map[string]any `json:"_meta"`
		Tools      []struct{ Name string }
	}
	tests := []struct {
		method string
		params map[string]any
		cached bool
	}{
		{"server/discover", nil, true},
		{"tools/list", nil, true},
		{"prompts/list", nil, true},
		{"resources/list", nil, true},
		{"resources/templates/list", nil, true},
		{"resources/read", map[string]any{"uri": "test://stateless-static-text"}, true},
		{"tools/call", map[string]any{"name": "about", "arguments": map[string]any{}}, false},
		{"prompts/get", map[string]any{"name": "test_input_required_result_prompt",
			"inputResponses": map[string]any{"user_context": map[string]any{"action": "accept", "content": map[string]any{"context": "x"}}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			var r result
			must(t, c, tt.method, tt.params, &r)
			if r.ResultType != "complete" {
				t.Errorf("resultType = %q, want complete", r.ResultType)
			}
			if tt.cached && (r.TTLMs == nil || *r.TTLMs < 0 || (r.CacheScope != "public" && r.CacheScope != "private")) {
				t.Errorf("ttlMs = %v, cacheScope = %q; want both", r.TTLMs, r.CacheScope)
			}
			if tt.method == "server/discover" {
				if si, _ := r.Meta["io.modelcontextprotocol/serverInfo"].(map[string]any); si["name"] == nil || si["version"] == nil {
					t.Errorf("discover _meta = %v, want serverInfo", r.Meta)
				}
			}
			if tt.method == "tools/list" && (len(r.Tools) == 0 || r.Tools[0].Name != "about") {
				t.Errorf("first tool = %v, want the no-argument about (the header scenario calls tools[0] with {})", r.Tools)
			}
		})
	}
}

// TestClientInfoOptional2026: a request without clientInfo in its _meta is served.
func TestClientInfoOptional2026(t *testing.T) {
	f := newFixture2026(t)
	status, msg := rawPost(t, f.url, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"about","arguments":{},`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "about"})
	if status != 200 || msg["result"] == nil {
		t.Errorf("tools/call without clientInfo: HTTP %d, %v", status, msg)
	}
}

// TestHeaderWhitespace2026: leading and trailing whitespace (OWS) in header values is
// not part of the value.
func TestHeaderWhitespace2026(t *testing.T) {
	f := newFixture2026(t)
	c := &mcptest.Stateless{URL: f.url}
	pad := func(s string) *string { s = " \t" + s + " "; return &s }
	r, err := c.Call("tools/call", map[string]any{"name": "about", "arguments": map[string]any{}},
		map[string]*string{"Mcp-Method": pad("tools/call"), "Mcp-Name": pad("about"), "MCP-Protocol-Version": pad("2026-07-28")})
	if err != nil || r.Error != nil || r.HTTPStatus != 200 {
		t.Fatalf("padded headers: %v, %+v", err, r)
	}
	r, err = c.Call("tools/call", map[string]any{"name": "test_header_param", "arguments": map[string]any{"region": "eu-west"}},
		map[string]*string{"Mcp-Param-Region": pad("eu-west")})
	if err != nil || r.Error != nil {
		t.Fatalf("padded Mcp-Param-Region: %v, %+v", err, r)
	}
	// Not a licence to differ: another value is still -32020.
	other := "us-east"
	mustFail(t, c, "tools/call", map[string]any{"name": "test_header_param", "arguments": map[string]any{"region": "eu-west"}},
		map[string]*string{"Mcp-Param-Region": &other}, -32020)
}

// TestLogging2026: notifications/message only when the request's _meta sets a
// logLevel, on that request's stream, at or above the level.
func TestLogging2026(t *testing.T) {
	f := newFixture2026(t)
	c := &mcptest.Stateless{URL: f.url}
	logs := func(meta map[string]any) []string {
		t.Helper()
		p := map[string]any{"name": "test_logging_tool", "arguments": map[string]any{}}
		if meta != nil {
			p["_meta"] = meta
		}
		r, err := c.Call("tools/call", p, nil)
		if err != nil || r.Error != nil {
			t.Fatalf("test_logging_tool: %v, %+v", err, r)
		}
		var out []string
		for _, fr := range r.Frames {
			var m struct {
				Method string `json:"method"`
				Params struct {
					Level string `json:"level"`
				} `json:"params"`
			}
			if json.Unmarshal(fr, &m) == nil && m.Method == "notifications/message" {
				out = append(out, m.Params.Level)
			}
		}
		return out
	}
	if got := logs(nil); len(got) != 0 {
		t.Errorf("without logLevel: %v, want no log messages", got)
	}
	if got := logs(map[string]any{"io.modelcontextprotocol/logLevel": "info"}); strings.Join(got, ",") != "info,warning,info" {
		t.Errorf("logLevel info: %v, want info,warning,info", got)
	}
	if got := logs(map[string]any{"io.modelcontextprotocol/logLevel": "warning"}); strings.Join(got, ",") != "warning" {
		t.Errorf("logLevel warning: %v, want warning", got)
	}
	for _, bad := range []any{"loud", 5} {
		mustFail(t, c, "tools/call", map[string]any{"name": "test_logging_tool", "arguments": map[string]any{},
			"_meta": map[string]any{"io.modelcontextprotocol/logLevel": bad}}, nil, jsonrpc.CodeInvalidParams)
	}
}

// TestNoServerRequests2026: on 2026-07-28 the server sends no requests, over HTTP nor
// over stdio: a guest's request for input becomes an InputRequiredResult, and the
// stream carries only notifications before it.
func TestNoServerRequests2026(t *testing.T) {
	f := newFixture2026(t)
	c := &mcptest.Stateless{URL: f.url, Caps: map[string]any{"elicitation": map[string]any{}}}
	r, err := c.Call("tools/call", map[string]any{"name": "test_streaming_elicitation", "arguments": map[string]any{},
		"_meta": map[string]any{"progressToken": "p1"}}, nil)
	if err != nil || r.Error != nil {
		t.Fatalf("test_streaming_elicitation: %v, %+v", err, r)
	}
	progress := 0
	for _, fr := range r.Frames {
		var m struct {
			Method string          `json:"method"`
			ID     json.RawMessage `json:"id"`
		}
		json.Unmarshal(fr, &m)
		if m.ID != nil || !strings.HasPrefix(m.Method, "notifications/") {
			t.Errorf("the server sent %s on the stream", fr)
		}
		if m.Method == "notifications/progress" {
			progress++
		}
	}
	var res toolResult
	json.Unmarshal(r.Result, &res)
	if res.ResultType != "input_required" || res.InputRequests["user_name"] == nil || progress != 1 {
		t.Errorf("result %s after %d progress notifications, want input_required with user_name after 1", r.Result, progress)
	}

	// stdio: go-sdk's client on 2026-07-28 with its own multi round trip off, so
	// that a handler runs only for a request the server sent.
	var mu sync.Mutex
	var asked []string
	cl := mcp.NewClient(&mcp.Implementation{Name: "new", Version: "1"}, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, "elicitation/create")
			mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "X"}}, nil
		},
	})
	cs, err := cl.Connect(context.Background(), f.stream(t), &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	sres, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "test_input_required_result_elicitation", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !sres.NeedsInput() || sres.InputRequests["user_name"] == nil || len(asked) != 0 {
		t.Errorf("stdio 2026-07-28: %+v, requests sent to the client %v; want input_required and none", sres, asked)
	}
}

// TestInputRequired2026: the multi round trip of SEP-2322 on tools/call, prompts/get
// and resources/read, with the keys the guest chose.
func TestInputRequired2026(t *testing.T) {
	f := newFixture2026(t)
	c := &mcptest.Stateless{URL: f.url, Caps: allCaps}
	accept := func(content map[string]any) map[string]any {
		return map[string]any{"action": "accept", "content": content}
	}
	sampled := map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "Paris"}, "model": "m"}
	roots := map[string]any{"roots": []any{map[string]any{"uri": "file:///work", "name": "work"}}}
	type round struct {
		responses map[string]any
		wantKeys  []string // of the InputRequiredResult; nil: complete
		wantText  string
	}
	// send makes a call of method (tools/call, prompts/get, resources/read) with the
	// answers and state so far and returns the result's decoded fields.
	send := func(t *testing.T, method string, base map[string]any, responses map[string]any, state string) (map[string]json.RawMessage, *jsonrpc.Error) {
		t.Helper()
		p := map[string]any{}
		for k, v := range base {
			p[k] = v
		}
		if responses != nil {
			p["inputResponses"] = responses
		}
		if state != "" {
			p["requestState"] = state
		}
		r, err := c.Call(method, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		json.Unmarshal(r.Result, &m)
		return m, r.Error
	}
	tests := []struct {
		name   string
		method string
		base   map[string]any
		rounds []round
	}{
		{"elicitation", "tools/call", map[string]any{"name": "test_input_required_result_elicitation", "arguments": map[string]any{}},
			[]round{{nil, []string{"user_name"}, ""}, {map[string]any{"user_name": accept(map[string]any{"name": "Alice"})}, nil, "Hello, Alice!"}}},
		{"sampling", "tools/call", map[string]any{"name": "test_input_required_result_sampling", "arguments": map[string]any{}},
			[]round{{nil, []string{"capital_question"}, ""}, {map[string]any{"capital_question": sampled}, nil, "Paris"}}},
		{"roots", "tools/call", map[string]any{"name": "test_input_required_result_list_roots", "arguments": map[string]any{}},
			[]round{{nil, []string{"client_roots"}, ""}, {map[string]any{"client_roots": roots}, nil, "file:///work"}}},
		{"three at once", "tools/call", map[string]any{"name": "test_input_required_result_multiple_inputs", "arguments": map[string]any{}},
			[]round{{nil, []string{"client_roots", "greeting", "user_name"}, ""},
				{map[string]any{"user_name": accept(map[string]any{"name": "Bo"}), "greeting": sampled, "client_roots": roots}, nil, "name: Bo; greeting: Paris; roots: file:///work"}}},
		{"a missing answer is asked again", "tools/call", map[string]any{"name": "test_input_required_result_multiple_inputs", "arguments": map[string]any{}},
			[]round{{nil, []string{"client_roots", "greeting", "user_name"}, ""},
				{map[string]any{"user_name": accept(map[string]any{"name": "Bo"}), "unknown": roots}, []string{"client_roots", "greeting"}, ""},
				{map[string]any{"greeting": sampled, "client_roots": roots}, nil, "name: Bo; greeting: Paris"}}},
		{"three rounds", "tools/call", map[string]any{"name": "test_input_required_result_multi_round", "arguments": map[string]any{}},
			[]round{{nil, []string{"step1"}, ""}, {map[string]any{"step1": accept(map[string]any{"name": "Alice"})}, []string{"step2"}, ""},
				{map[string]any{"step2": accept(map[string]any{"color": "blue"})}, nil, "Alice likes blue"}}},
		{"answers before being asked", "tools/call", map[string]any{"name": "test_input_required_result_elicitation", "arguments": map[string]any{}},
			[]round{{map[string]any{"user_name": accept(map[string]any{"name": "Eve"}), "extra": accept(nil)}, nil, "Hello, Eve!"}}},
		{"prompt", "prompts/get", map[string]any{"name": "test_input_required_result_prompt"},
			[]round{{nil, []string{"user_context"}, ""}, {map[string]any{"user_context": accept(map[string]any{"context": "tests"})}, nil, "Use this context: tests"}}},
		{"resource", "resources/read", map[string]any{"uri": "test://with-input"},
			[]round{{nil, []string{"greeting_word"}, ""}, {map[string]any{"greeting_word": accept(map[string]any{"word": "Hi"})}, nil, "Hi, world"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := ""
			for i, r := range tt.rounds {
				m, e := send(t, tt.method, tt.base, r.responses, state)
				if e != nil {
					t.Fatalf("round %d: error %d %s", i+1, e.Code, e.Message)
				}
				var rt string
				json.Unmarshal(m["resultType"], &rt)
				if r.wantKeys == nil {
					if rt != "complete" || !strings.Contains(string(m["content"])+string(m["messages"])+string(m["contents"]), r.wantText) {
						t.Fatalf("round %d = %v, want complete with %q", i+1, m, r.wantText)
					}
					continue
				}
				var reqs map[string]json.RawMessage
				json.Unmarshal(m["inputRequests"], &reqs)
				var keys []string
				for k := range reqs {
					keys = append(keys, k)
				}
				if rt != "input_required" || strings.Join(sortStrings(keys), ",") != strings.Join(r.wantKeys, ",") {
					t.Fatalf("round %d = %v, want input_required for %v", i+1, m, r.wantKeys)
				}
				for _, k := range []string{"content", "contents", "messages", "ttlMs", "cacheScope"} {
					if _, ok := m[k]; ok {
						t.Errorf("round %d: an InputRequiredResult with %s", i+1, k)
					}
				}
				json.Unmarshal(m["requestState"], &state)
			}
		})
	}

	t.Run("tampered state", func(t *testing.T) {
		base := map[string]any{"name": "test_input_required_result_tampered_state", "arguments": map[string]any{}}
		m, _ := send(t, "tools/call", base, nil, "")
		var state string
		json.Unmarshal(m["requestState"], &state)
		_, e := send(t, "tools/call", base, map[string]any{"confirm": accept(map[string]any{"ok": true})}, state+"-TAMPERED")
		if e == nil || e.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("tampered requestState = %v, want -32602", e)
		}
	})
	t.Run("answer of the wrong kind", func(t *testing.T) {
		base := map[string]any{"name": "test_input_required_result_elicitation", "arguments": map[string]any{}}
		if _, e := send(t, "tools/call", base, map[string]any{"user_name": roots}, ""); e == nil || e.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("a roots result for an elicitation = %v, want -32602", e)
		}
	})
	t.Run("only declared capabilities", func(t *testing.T) {
		sc := &mcptest.Stateless{URL: f.url, Caps: map[string]any{"sampling": map[string]any{}}}
		var res toolResult
		must(t, sc, "tools/call", map[string]any{"name": "test_input_required_result_capabilities", "arguments": map[string]any{}}, &res)
		if res.ResultType != "input_required" || len(res.InputRequests) != 1 || res.InputRequests["greeting"] == nil {
			t.Errorf("sampling-only client got %v, want only the sampling request", res.InputRequests)
		}
	})
	t.Run("roots declared without listChanged", func(t *testing.T) {
		rc := &mcptest.Stateless{URL: f.url, Caps: map[string]any{"roots": map[string]any{}}}
		var res toolResult
		must(t, rc, "tools/call", map[string]any{"name": "test_input_required_result_list_roots", "arguments": map[string]any{}}, &res)
		if res.ResultType != "input_required" || res.InputRequests["client_roots"] == nil {
			t.Errorf(`"roots": {} client got %+v, want the roots/list request`, res)
		}
	})
}

func sortStrings(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

// TestDeprecatedFeatures2025: roots, sampling and elicitation (and log lines) reach a
// 2025-11-25 client as requests and notifications on its session, as before; on
// 2026-07-28 the same guest's requests reach the client only inside an
// InputRequiredResult (SEP-2577 deprecates roots, sampling and logging).
func TestDeprecatedFeatures2025(t *testing.T) {
	f := newFixture2026(t)
	var mu sync.Mutex
	var asked []string
	c := mcp.NewClient(&mcp.Implementation{Name: "old", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, "elicitation/create")
			mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Old"}}, nil
		},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			mu.Lock()
			asked = append(asked, "sampling/createMessage")
			mu.Unlock()
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "Hi"}}, nil
		},
	})
	c.AddRoots(&mcp.Root{URI: "file:///old", Name: "old"})
	cs, err := c.Connect(context.Background(), f.stream(t), &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res := call(t, cs, "test_input_required_result_multiple_inputs", map[string]any{})
	if got := text(t, res); got != "name: Old; greeting: Hi; roots: file:///old" {
		t.Errorf("2025-11-25 result = %q", got)
	}
	mu.Lock()
	got := strings.Join(sortStrings(asked), ",")
	mu.Unlock()
	if got != "elicitation/create,sampling/createMessage" {
		t.Errorf("requests the 2025-11-25 client answered = %s", got)
	}

	// The same call on 2026-07-28: nothing sent, everything in the result.
	sc := &mcptest.Stateless{URL: f.url, Caps: allCaps}
	r, err := sc.Call("tools/call", map[string]any{"name": "test_input_required_result_multiple_inputs", "arguments": map[string]any{}}, nil)
	if err != nil || r.Error != nil {
		t.Fatalf("2026-07-28: %v %+v", err, r)
	}
	var ir toolResult
	json.Unmarshal(r.Result, &ir)
	if ir.ResultType != "input_required" || len(ir.InputRequests) != 3 || len(r.Frames) != 0 {
		t.Errorf("2026-07-28 = %s with frames %s, want an InputRequiredResult of 3 and nothing else", r.Result, r.Frames)
	}
}
