package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/mcptest"
)

// testAS is an authorization server inside the test: a JWKS endpoint with keys made
// here, and token minting with go-jose.
type testAS struct {
	srv    *httptest.Server
	issuer string
	rsa    *rsa.PrivateKey
	jwks   atomic.Pointer[[]byte]
	mux    *http.ServeMux // serves the JWKS at any path; tests may add endpoints
	// fetches counts the JWKS requests.
	fetches atomic.Int32
}

const testResource = "http://rs.test/mcp"

func newTestAS(t testing.TB) *testAS {
	t.Helper()
	as := &testAS{}
	var err error
	if as.rsa, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	as.serve(jose.JSONWebKey{Key: as.rsa.Public(), KeyID: "k1", Algorithm: "RS256", Use: "sig"})
	as.mux = http.NewServeMux()
	as.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		as.fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write(*as.jwks.Load())
	})
	as.srv = httptest.NewServer(as.mux)
	t.Cleanup(as.srv.Close)
	as.issuer = as.srv.URL
	return as
}

func (as *testAS) serve(keys ...jose.JSONWebKey) {
	b, _ := json.Marshal(jose.JSONWebKeySet{Keys: keys})
	as.jwks.Store(&b)
}

// claims are a token's claims; mint fills in what is zero.
type claims struct {
	jwt.Claims
	Scope string `json:"scope,omitempty"`
}

// mint signs c with key (nil: the served RSA key) under kid and alg.
func (as *testAS) mint(t testing.TB, c claims, alg jose.SignatureAlgorithm, key any, kid string) string {
	t.Helper()
	if key == nil {
		key = as.rsa
	}
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(sig).Claims(c).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// user is a valid token's claims for subject sub with scope.
func (as *testAS) user(sub, scope string) claims {
	now := time.Now()
	return claims{Claims: jwt.Claims{Issuer: as.issuer, Subject: sub, Audience: jwt.Audience{testResource},
		Expiry: jwt.NewNumericDate(now.Add(time.Hour)), IssuedAt: jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now.Add(-time.Minute))}, Scope: scope}
}

// bearer is a RoundTripper that sends token.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func oauthConfig(t testing.TB, as *testAS) string {
	return writeConfig(t, serverTOML(t)+fmt.Sprintf(`[server.auth]
mode = "oauth"
issuer = %q
resource = %q
jwks_url = %q
clock_skew = "5s"
required_scopes = ["mcp"]

[[server.auth.grants]]
scope = "tools:slow"
tools = ["toolbox_slow_*", "toolbox_timer"]

[[server.auth.grants]]
scope = "tools:json"
tools = ["toolbox_json_format"]

[[server.auth.grants]]
scope = "tools:notes"
tools = ["toolbox_write_note"]

`, as.issuer, testResource, as.srv.URL+"/jwks")+pluginTOML(t, "toolbox", "plugins/toolbox/toolbox.wasm", ""))
}

// postStatus sends a stateless tools/list with the Authorization header auth ("" for
// none) and returns the status and WWW-Authenticate.
func postStatus(t testing.TB, url, auth string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/list")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
}

// TestAuthRefusesTokens: every bad token is refused with 401 and a challenge that
// names the RFC 9728 document; a good one without the required scope gets 403
// insufficient_scope; a good one passes.
func TestAuthRefusesTokens(t *testing.T) {
	as := newTestAS(t)
	url, _ := startHTTP(t, oauthConfig(t, as))
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	pubDER, _ := x509.MarshalPKIXPublicKey(as.rsa.Public())
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	good := as.user("alice", "mcp tools:slow")
	with := func(f func(c *claims)) claims { c := as.user("alice", "mcp tools:slow"); f(&c); return c }
	b64 := base64.RawURLEncoding.EncodeToString
	payload, _ := json.Marshal(good)
	const meta = `resource_metadata="http://rs.test/.well-known/oauth-protected-resource/mcp"`
	tests := []struct {
		name      string
		auth      string
		status    int
		challenge []string
	}{
		{"missing", "", 401, []string{meta}},
		{"not bearer", "Basic YTpi", 401, []string{meta}},
		{"garbage", "Bearer not.a.token", 401, []string{meta, `error="invalid_token"`}},
		{"expired", "Bearer " + as.mint(t, with(func(c *claims) { c.Expiry = jwt.NewNumericDate(time.Now().Add(-time.Minute)) }), jose.RS256, nil, "k1"), 401, []string{meta, `error="invalid_token"`}},
		{"no exp", "Bearer " + as.mint(t, with(func(c *claims) { c.Expiry = nil }), jose.RS256, nil, "k1"), 401, []string{`error="invalid_token"`}},
		{"not yet valid", "Bearer " + as.mint(t, with(func(c *claims) { c.NotBefore = jwt.NewNumericDate(time.Now().Add(time.Minute)) }), jose.RS256, nil, "k1"), 401, []string{meta, `error="invalid_token"`}},
		{"issued in the future", "Bearer " + as.mint(t, with(func(c *claims) { c.IssuedAt = jwt.NewNumericDate(time.Now().Add(time.Minute)) }), jose.RS256, nil, "k1"), 401, []string{`error="invalid_token"`}},
		{"wrong audience", "Bearer " + as.mint(t, with(func(c *claims) { c.Audience = jwt.Audience{"http://other.test/mcp"} }), jose.RS256, nil, "k1"), 401, []string{meta, `error="invalid_token"`}},
		{"wrong issuer", "Bearer " + as.mint(t, with(func(c *claims) { c.Issuer = "http://evil.test" }), jose.RS256, nil, "k1"), 401, []string{meta, `error="invalid_token"`}},
		{"alg none", "Bearer " + b64([]byte(`{"alg":"none","kid":"k1"}`)) + "." + b64(payload) + ".", 401, []string{meta, `error="invalid_token"`}},
		{"HMAC with the public key", "Bearer " + as.mint(t, good, jose.HS256, pubPEM, "k1"), 401, []string{meta, `error="invalid_token"`}},
		{"unknown key", "Bearer " + as.mint(t, good, jose.RS256, other, "k9"), 401, []string{meta, `error="invalid_token"`}},
		{"known kid, other key", "Bearer " + as.mint(t, good, jose.RS256, other, "k1"), 401, []string{`error="invalid_token"`}},
		{"alg not the key's", "Bearer " + as.mint(t, good, jose.ES256, ec, "k1"), 401, []string{`error="invalid_token"`}},
		{"no required scope", "Bearer " + as.mint(t, as.user("alice", "tools:slow"), jose.RS256, nil, "k1"), 403, []string{meta, `error="insufficient_scope"`, `scope="mcp"`}},
		{"good", "Bearer " + as.mint(t, good, jose.RS256, nil, "k1"), 200, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, challenge := postStatus(t, url, tt.auth)
			if status != tt.status {
				t.Errorf("POST = %d (%s), want %d", status, challenge, tt.status)
			}
			for _, c := range tt.challenge {
				if !strings.HasPrefix(challenge, "Bearer") || !strings.Contains(challenge, c) {
					t.Errorf("WWW-Authenticate = %q, want it to hold %s", challenge, c)
				}
			}
		})
	}

	t.Run("metadata", func(t *testing.T) {
		base := strings.TrimSuffix(url, "/mcp")
		for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
			resp, err := http.Get(base + path)
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Resource             string   `json:"resource"`
				AuthorizationServers []string `json:"authorization_servers"`
				ScopesSupported      []string `json:"scopes_supported"`
			}
			err = json.NewDecoder(resp.Body).Decode(&doc)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 || doc.Resource != testResource || !slices.Equal(doc.AuthorizationServers, []string{as.issuer}) {
				t.Errorf("GET %s = %d %+v (%v), want the resource %s and issuer %s", path, resp.StatusCode, doc, err, testResource, as.issuer)
			}
		}
	})
}

// toolNames lists the tools a stateless caller sees.
func toolNames(t *testing.T, s *mcptest.Stateless) []string {
	t.Helper()
	resp, err := s.Call("tools/list", nil, nil)
	if err != nil || resp.Error != nil {
		t.Fatalf("tools/list = %+v, %v", resp, err)
	}
	var r mcp.ListToolsResult
	json.Unmarshal(resp.Result, &r)
	var names []string
	for _, tl := range r.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// cacheScope returns the cacheScope of a stateless caller's method (no params).
func cacheScope(t *testing.T, s *mcptest.Stateless, method string) string {
	t.Helper()
	resp, err := s.Call(method, nil, nil)
	if err != nil || resp.Error != nil {
		t.Fatalf("%s = %+v, %v", method, resp, err)
	}
	var r struct {
		CacheScope string `json:"cacheScope"`
	}
	json.Unmarshal(resp.Result, &r)
	return r.CacheScope
}

// TestAuthGrantsAndOwners: a caller sees and may call only the tools its scopes are
// granted (a call of another gets the scope challenge); lists vary per caller, so
// their cacheScope is private; a task belongs to its subject, on both wires:
// visible to that subject from a new session or a stateless request, and answered
// and cancelled from another session of its, by no one else.
func TestAuthGrantsAndOwners(t *testing.T) {
	as := newTestAS(t)
	url, _ := startHTTP(t, oauthConfig(t, as))
	aliceTok := as.mint(t, as.user("alice", "mcp tools:slow"), jose.RS256, nil, "k1")
	bobTok := as.mint(t, as.user("bob", "mcp tools:slow tools:json"), jose.RS256, nil, "k1")
	stateless := func(tok string) *mcptest.Stateless {
		return &mcptest.Stateless{URL: url, Caps: mcptest.TasksExtension(), Client: &http.Client{Transport: bearer{tok}}}
	}
	session := func(tok string) *mcptest.Client {
		return mcptest.Dial(t, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{tok}}}, nil)
	}
	alice, bob := stateless(aliceTok), stateless(bobTok)

	t.Run("tools/list", func(t *testing.T) {
		if got, want := toolNames(t, alice), []string{"toolbox_slow_count", "toolbox_timer"}; !slices.Equal(got, want) {
			t.Errorf("alice's tools/list = %v, want %v", got, want)
		}
		if got, want := toolNames(t, bob), []string{"toolbox_json_format", "toolbox_slow_count", "toolbox_timer"}; !slices.Equal(got, want) {
			t.Errorf("bob's tools/list = %v, want %v", got, want)
		}
		var r mcp.ListToolsResult
		session(aliceTok).MustCall("tools/list", map[string]any{}, &r)
		if len(r.Tools) != 2 {
			t.Errorf("alice's session tools/list = %d tools, want 2", len(r.Tools))
		}
		// The list varies per caller: no cache may serve alice's to bob.
		for who, s := range map[string]*mcptest.Stateless{"alice": alice, "bob": bob} {
			if got := cacheScope(t, s, "tools/list"); got != "private" {
				t.Errorf("%s's tools/list cacheScope = %q, want private", who, got)
			}
		}
		if got := cacheScope(t, alice, "server/discover"); got != "public" {
			t.Errorf("server/discover cacheScope = %q, want public (the same for every caller)", got)
		}
	})
	t.Run("tools/call outside the grant", func(t *testing.T) {
		// A token without the scope gets MCP's scope challenge: 403 with the
		// scopes that would grant the tool and the RFC 9728 document, and the
		// JSON-RPC error naming both, stateless and in a session alike.
		const meta = `resource_metadata="http://rs.test/.well-known/oauth-protected-resource/mcp"`
		check := func(what string, status int, header http.Header, e *jsonrpc.Error) {
			t.Helper()
			ch := header.Get("WWW-Authenticate")
			if status != http.StatusForbidden || !strings.HasPrefix(ch, "Bearer ") {
				t.Errorf("%s = HTTP %d, WWW-Authenticate %q; want 403 with a Bearer challenge", what, status, ch)
			}
			for _, want := range []string{`error="insufficient_scope"`, `scope="mcp tools:json"`, meta} {
				if !strings.Contains(ch, want) {
					t.Errorf("%s: WWW-Authenticate = %q, want it to hold %s", what, ch, want)
				}
			}
			var data struct {
				Tool   string   `json:"tool"`
				Scopes []string `json:"scopes"`
			}
			if e == nil || e.Code != -32003 || !strings.Contains(e.Message, `"toolbox_json_format"`) || !strings.Contains(e.Message, `"tools:json"`) ||
				json.Unmarshal(e.Data, &data) != nil || data.Tool != "toolbox_json_format" || !slices.Equal(data.Scopes, []string{"mcp", "tools:json"}) {
				t.Errorf("%s: error = %+v, want -32003 naming the tool and its scope, data {tool, scopes [mcp tools:json]}", what, e)
			}
		}
		format := map[string]any{"name": "toolbox_json_format", "arguments": map[string]any{"json": "{}"}}
		resp, err := alice.Call("tools/call", format, nil)
		if err != nil {
			t.Fatalf("alice's tools/call(toolbox_json_format): %v", err)
		}
		check("alice's stateless tools/call(toolbox_json_format)", resp.HTTPStatus, resp.Header, resp.Error)

		ctx := context.Background()
		auth := map[string]string{"Authorization": "Bearer " + aliceTok}
		init := rawPost(ctx, t, http.DefaultClient, url, auth, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize",
			"params": map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "raw", "version": "1"}}})
		init.Body.Close()
		auth["Mcp-Session-Id"], auth["MCP-Protocol-Version"] = init.Header.Get("Mcp-Session-Id"), "2025-11-25"
		hr := rawPost(ctx, t, http.DefaultClient, url, auth, map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": format})
		var answer struct {
			ID    int            `json:"id"`
			Error *jsonrpc.Error `json:"error"`
		}
		err = json.NewDecoder(hr.Body).Decode(&answer)
		hr.Body.Close()
		if err != nil || answer.ID != 2 || hr.Header.Get("Content-Type") != "application/json" {
			t.Errorf("alice's session tools/call: %s body, id %d, %v; want the JSON-RPC error for id 2", hr.Header.Get("Content-Type"), answer.ID, err)
		}
		check("alice's session tools/call(toolbox_json_format)", hr.StatusCode, hr.Header, answer.Error)

		// A tool that does not exist is unknown to everyone: no challenge.
		resp, err = alice.Call("tools/call", map[string]any{"name": "toolbox_nope", "arguments": map[string]any{}}, nil)
		if err != nil || resp.Error == nil || resp.Error.Code != -32602 || !strings.Contains(resp.Error.Message, "unknown tool") || resp.Header.Get("WWW-Authenticate") != "" {
			t.Errorf("alice's tools/call(toolbox_nope) = %+v, %v, want -32602 unknown tool and no challenge", resp, err)
		}
		resp, err = bob.Call("tools/call", format, nil)
		if err != nil || resp.Error != nil {
			t.Errorf("bob's tools/call(toolbox_json_format) = %+v, %v, want a result", resp, err)
		}
	})

	t.Run("session bound to its identity", func(t *testing.T) {
		ctx := context.Background()
		resp := rawPost(ctx, t, http.DefaultClient, url, map[string]string{"Authorization": "Bearer " + aliceTok},
			map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{"protocolVersion": "2025-11-25",
				"capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "raw", "version": "1"}}})
		resp.Body.Close()
		id := resp.Header.Get("Mcp-Session-Id")
		if id == "" {
			t.Fatalf("initialize: no session (%d)", resp.StatusCode)
		}
		resp = rawPost(ctx, t, http.DefaultClient, url, map[string]string{"Authorization": "Bearer " + bobTok, "Mcp-Session-Id": id,
			"MCP-Protocol-Version": "2025-11-25"}, map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("bob's request in alice's session = %d, want refused", resp.StatusCode)
		}
	})

	slow := map[string]any{"to": 200, "delay_ms": 100}
	t.Run("extension task", func(t *testing.T) {
		resp, err := alice.Call("tools/call", map[string]any{"name": "toolbox_slow_count", "arguments": slow}, nil)
		var created struct {
			TaskID string `json:"taskId"`
		}
		if err != nil || resp.Error != nil || json.Unmarshal(resp.Result, &created) != nil || created.TaskID == "" {
			t.Fatalf("alice's tools/call = %+v, %v, want a task", resp, err)
		}
		if got, _ := alice.Call("tasks/get", map[string]any{"taskId": created.TaskID}, nil); got == nil || got.Error != nil {
			t.Errorf("alice's tasks/get = %+v, want her task", got)
		}
		if got, _ := bob.Call("tasks/get", map[string]any{"taskId": created.TaskID}, nil); got == nil || got.Error == nil {
			t.Errorf("bob's tasks/get of alice's task = %+v, want an error", got)
		}
		if got, _ := bob.Call("tasks/cancel", map[string]any{"taskId": created.TaskID}, nil); got == nil || got.Error == nil {
			t.Errorf("bob's tasks/cancel of alice's task = %+v, want an error", got)
		}
		// From a 2025-11-25 session of alice's too: one owner.
		if e := session(bobTok).CallErr("tasks/get", map[string]any{"taskId": created.TaskID}); e == nil {
			t.Errorf("bob's session tasks/get of alice's task = nil error, want one")
		}
		session(aliceTok).Get(created.TaskID)
	})
	t.Run("input from a second session", func(t *testing.T) {
		// alice starts toolbox_write_note in one session (the Tasks extension on
		// 2025-11-25); it asks her to confirm. From a second session of hers she
		// sees the request, answers it, and cancels another such task; bob can
		// do neither.
		notesTok := as.mint(t, as.user("alice", "mcp tools:notes"), jose.RS256, nil, "k1")
		ext := func(tok string) *mcptest.Client {
			return mcptest.DialWith(t, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{tok}}},
				nil, mcptest.TasksExtension())
		}
		a1, a2, b := ext(notesTok), ext(notesTok), ext(bobTok)
		start := func(name string) string {
			var created extTask
			a1.MustCall("tools/call", map[string]any{"name": "toolbox_write_note", "arguments": map[string]any{"name": name, "text": "x"}}, &created)
			if created.ResultType != "task" || created.TaskID == "" {
				t.Fatalf("alice's tools/call(toolbox_write_note) = %+v, want a task", created)
			}
			return created.TaskID
		}
		answered, cancelled := start("answered.txt"), start("cancelled.txt")
		got := pollExt(t, a2, answered, 30*time.Second, func(x extTask) bool { return x.Status == "input_required" && len(x.InputRequests) == 1 })
		var key string
		for k := range got.InputRequests {
			key = k
		}
		decline := map[string]any{"taskId": answered, "inputResponses": map[string]any{key: map[string]any{"action": "decline"}}}
		if e := b.CallErr0("tasks/update", decline); e == nil {
			t.Errorf("bob's tasks/update of alice's task = nil error, want one")
		}
		if e := b.CallErr0("tasks/cancel", map[string]any{"taskId": cancelled}); e == nil {
			t.Errorf("bob's tasks/cancel of alice's task = nil error, want one")
		}
		a2.MustCall("tasks/update", decline, nil)
		pollExt(t, a2, answered, 30*time.Second, func(x extTask) bool { return x.Status == "completed" })
		var done json.RawMessage
		a2.MustCall("tasks/get", map[string]any{"taskId": answered}, &done)
		if !strings.Contains(string(done), `Not written: the user answered \"decline\"`) {
			t.Errorf("alice's answered task = %s, want the guest to have read her answer (decline)", done)
		}

		pollExt(t, a2, cancelled, 30*time.Second, func(x extTask) bool { return x.Status == "input_required" })
		a2.MustCall("tasks/cancel", map[string]any{"taskId": cancelled}, nil)
		if x := pollExt(t, a1, cancelled, 30*time.Second, func(x extTask) bool { return x.Status != "input_required" }); x.Status != "cancelled" {
			t.Errorf("alice's task cancelled from her second session = %s, want cancelled (seen from the first)", x.Status)
		}
	})
	t.Run("2025-11-25 task", func(t *testing.T) {
		a := session(aliceTok)
		task := a.CreateTask("toolbox_slow_count", slow, map[string]any{}, nil)
		// A new session of alice's sees it, and lists it.
		a2 := session(aliceTok)
		a2.Get(task.TaskID)
		var list struct {
			Tasks []mcptest.Task `json:"tasks"`
		}
		a2.MustCall("tasks/list", map[string]any{}, &list)
		if !slices.ContainsFunc(list.Tasks, func(x mcptest.Task) bool { return x.TaskID == task.TaskID }) {
			t.Errorf("alice's new session tasks/list = %v, want %s in it", list.Tasks, task.TaskID)
		}
		b := session(bobTok)
		if e := b.CallErr("tasks/get", map[string]any{"taskId": task.TaskID}); e == nil {
			t.Errorf("bob's tasks/get of alice's task = nil error, want one")
		}
		b.MustCall("tasks/list", map[string]any{}, &list)
		if slices.ContainsFunc(list.Tasks, func(x mcptest.Task) bool { return x.TaskID == task.TaskID }) {
			t.Errorf("bob's tasks/list = %v, want no task of alice's", list.Tasks)
		}
		if e := b.CallErr("tasks/cancel", map[string]any{"taskId": task.TaskID}); e == nil {
			t.Errorf("bob's tasks/cancel of alice's task = nil error, want one")
		}
		if got, _ := alice.Call("tasks/get", map[string]any{"taskId": task.TaskID}, nil); got == nil || got.Error != nil {
			t.Errorf("alice's stateless tasks/get of her session's task = %+v, want it", got)
		}
	})
}

// TestAuthAPIKeys: a configured API key is an identity; a tool outside its grants
// gets an error naming the key; a wrong key is 401.
func TestAuthAPIKeys(t *testing.T) {
	const key = "s3cret-key-for-ci"
	sum := sha256.Sum256([]byte(key))
	cfg := writeConfig(t, serverTOML(t)+fmt.Sprintf(`[server.auth]
mode = "api_keys"

[[server.auth.keys]]
name = "ci"
sha256 = %q

[[server.auth.grants]]
key = "ci"
tools = ["toolbox_timer"]

`, hex.EncodeToString(sum[:]))+pluginTOML(t, "toolbox", "plugins/toolbox/toolbox.wasm", ""))
	url, _ := startHTTP(t, cfg)
	if status, ch := postStatus(t, url, "Bearer "+key); status != 200 {
		t.Errorf("the right key: %d (%s), want 200", status, ch)
	}
	if got := toolNames(t, &mcptest.Stateless{URL: url, Client: &http.Client{Transport: bearer{key}}}); !slices.Equal(got, []string{"toolbox_timer"}) {
		t.Errorf("tools/list = %v, want [toolbox_timer]", got)
	}
	// A tool outside the key's grants: the JSON-RPC error names the key. A key's
	// scopes are the operator's to change, so there is no challenge to step up
	// from: the answer is in-band (HTTP 200), in a session as stateless.
	stateless := &mcptest.Stateless{URL: url, Client: &http.Client{Transport: bearer{key}}}
	resp, err := stateless.Call("tools/call", map[string]any{"name": "toolbox_json_format", "arguments": map[string]any{"json": "{}"}}, nil)
	const notGranted = `tool "toolbox_json_format" is not granted to key "ci"`
	if err != nil || resp.HTTPStatus != 200 || resp.Error == nil || resp.Error.Code != -32003 || resp.Error.Message != notGranted || resp.Header.Get("WWW-Authenticate") != "" {
		t.Errorf("stateless tools/call outside the grant = %+v, %v; want HTTP 200, -32003 %q, no challenge", resp, err, notGranted)
	}
	session := mcptest.Dial(t, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{key}}}, nil)
	if e := session.CallErr("tools/call", map[string]any{"name": "toolbox_json_format", "arguments": map[string]any{"json": "{}"}}); e.Code != -32003 || e.Message != notGranted {
		t.Errorf("session tools/call outside the grant = %v, want -32003 %q", e, notGranted)
	}
	for _, auth := range []string{"", "Bearer " + key + "x", "Bearer " + strings.ToUpper(key)} {
		if status, ch := postStatus(t, url, auth); status != 401 || !strings.HasPrefix(ch, "Bearer") {
			t.Errorf("Authorization %q: %d (%s), want 401 with a Bearer challenge", auth, status, ch)
		}
	}
}

// TestAuthExposure: HTTP on a non-loopback address without auth needs
// insecure_no_auth, and is then logged as a warning.
func TestAuthExposure(t *testing.T) {
	plugin := pluginTOML(t, "toolbox", "plugins/toolbox/toolbox.wasm", "")
	out, err := exec.Command(binary, "--config", writeConfig(t, serverTOML(t)+plugin), "--http", "0.0.0.0:0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "non-loopback address needs [server.auth]") {
		t.Errorf("no auth on 0.0.0.0: %v\n%s\nwant refused", err, out)
	}
	cfg := writeConfig(t, serverTOML(t)+"[server.auth]\ninsecure_no_auth = true\n\n"+plugin)
	log := startHTTPAt(t, cfg, "0.0.0.0:0")
	if waitLog(t, log, regexp.MustCompile(`level=WARN msg="serving HTTP on a non-loopback address without authentication`)) == nil {
		t.Errorf("insecure_no_auth: no warning in the log:\n%s", log)
	}
}

// TestAuthRateLimit: each identity has its own token bucket; past it, 429 with
// Retry-After, and other identities go on.
func TestAuthRateLimit(t *testing.T) {
	sum := func(k string) string { s := sha256.Sum256([]byte(k)); return hex.EncodeToString(s[:]) }
	cfg := writeConfig(t, serverTOML(t)+fmt.Sprintf(`[server.auth]
mode = "api_keys"
rate_limit = 0.1
rate_burst = 2

[[server.auth.keys]]
name = "a"
sha256 = %q

[[server.auth.keys]]
name = "b"
sha256 = %q

[[server.auth.grants]]
key = "a"
tools = ["*"]

`, sum("key-a"), sum("key-b"))+pluginTOML(t, "toolbox", "plugins/toolbox/toolbox.wasm", ""))
	url, _ := startHTTP(t, cfg)
	for i, want := range []int{200, 200, 429} {
		if status, _ := postStatus(t, url, "Bearer key-a"); status != want {
			t.Errorf("a's request %d = %d, want %d", i, status, want)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer key-a")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ra := resp.Header.Get("Retry-After"); resp.StatusCode != 429 || ra == "" || ra == "0" {
		t.Errorf("a over its limit = %d Retry-After %q, want 429 with a positive Retry-After", resp.StatusCode, ra)
	}
	if status, _ := postStatus(t, url, "Bearer key-b"); status != 200 {
		t.Errorf("b's first request = %d, want 200 (its own bucket)", status)
	}
}

// TestAuthRequestStateBound: a 2026-07-28 requestState issued to one identity is
// refused to another and accepted from the same identity's next request.
func TestAuthRequestStateBound(t *testing.T) {
	sum := func(k string) string { s := sha256.Sum256([]byte(k)); return hex.EncodeToString(s[:]) }
	b, err := os.ReadFile(bundledConfig(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(string(b), "[server.auth]\n", "[server.auth]\nmode = \"api_keys\"\n", 1)
	doc = strings.Replace(doc, "\nmode = \"\"\n", "\n", 1)
	doc = strings.Replace(doc, "rate_burst = 0\n", fmt.Sprintf(`rate_burst = 0
[[server.auth.keys]]
name = "alice"
sha256 = %q
[[server.auth.keys]]
name = "bob"
sha256 = %q
[[server.auth.grants]]
scope = "all"
tools = ["*"]
`, sum("key-alice"), sum("key-bob")), 1)
	doc = strings.Replace(doc, "name = \"alice\"\n", "name = \"alice\"\nscopes = [\"all\"]\n", 1)
	doc = strings.Replace(doc, "name = \"bob\"\n", "name = \"bob\"\nscopes = [\"all\"]\n", 1)
	url, _ := startHTTP(t, writeConfig(t, doc))
	caps := map[string]any{"elicitation": map[string]any{}}
	alice := &mcptest.Stateless{URL: url, Caps: caps, Client: &http.Client{Transport: bearer{"key-alice"}}}
	bob := &mcptest.Stateless{URL: url, Caps: caps, Client: &http.Client{Transport: bearer{"key-bob"}}}
	args := map[string]any{"name": "bound.txt", "text": "alice's"}
	r, err := alice.Call("tools/call", map[string]any{"name": "toolbox_write_note", "arguments": args}, nil)
	if err != nil || r.Error != nil {
		t.Fatalf("round 1 = %+v, %v", r, err)
	}
	var r1 struct {
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	json.Unmarshal(r.Result, &r1)
	if len(r1.InputRequests) != 1 || r1.RequestState == "" {
		t.Fatalf("round 1 = %s, want an InputRequiredResult", r.Result)
	}
	var key string
	for k := range r1.InputRequests {
		key = k
	}
	again := map[string]any{"name": "toolbox_write_note", "arguments": args, "requestState": r1.RequestState,
		"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}}
	if r, err := bob.Call("tools/call", again, nil); err != nil || r.Error == nil || !strings.Contains(r.Error.Message, "requester") {
		t.Errorf("round 2 by bob = %+v, %v; want refused (another requester)", r, err)
	}
	if r, err := alice.Call("tools/call", again, nil); err != nil || r.Error != nil || !strings.Contains(string(r.Result), `"resultType":"complete"`) {
		t.Errorf("round 2 by alice = %+v, %v; want complete", r, err)
	}
}

// TestAuthStdioUnchecked: stdio is the local user: [server.auth] does not apply.
func TestAuthStdioUnchecked(t *testing.T) {
	cs, _ := connectStdio(t, "--config", oauthConfig(t, newTestAS(t)))
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(res.Tools) != 8 {
		t.Fatalf("tools/list over stdio = %d tools, %v; want all 8", len(res.Tools), err)
	}
	if got := callText(t, cs, "toolbox_json_format", map[string]any{"json": "{}"}); got == "" {
		t.Errorf("toolbox_json_format over stdio = %q, want a result", got)
	}
}

// TestAuthFeatures: a plugin's resources, templates and prompts go with its tools: a
// caller granted none of its tools neither lists nor reads them.
func TestAuthFeatures(t *testing.T) {
	sum := func(k string) string { s := sha256.Sum256([]byte(k)); return hex.EncodeToString(s[:]) }
	fixture := pluginTOML(t, "fixture", "conformance/fixture/fixture.wasm", "")
	fixture = strings.Replace(fixture, "name = \"fixture\"\n", "name = \"fixture\"\nprefix = \"\"\n", 1)
	cfg := writeConfig(t, serverTOML(t)+fmt.Sprintf(`[server.auth]
mode = "api_keys"

[[server.auth.keys]]
name = "other"
sha256 = %q

[[server.auth.keys]]
name = "fix"
sha256 = %q

[[server.auth.grants]]
key = "other"
tools = ["toolbox_*"]

[[server.auth.grants]]
key = "fix"
tools = ["test_simple_text"]

`, sum("key-other"), sum("key-fix"))+fixture+pluginTOML(t, "toolbox", "plugins/toolbox/toolbox.wasm", ""))
	url, _ := startHTTP(t, cfg)
	as := func(key string) *mcptest.Stateless {
		return &mcptest.Stateless{URL: url, Client: &http.Client{Transport: bearer{key}}}
	}
	count := func(s *mcptest.Stateless, method, field string) int {
		r, err := s.Call(method, nil, nil)
		if err != nil || r.Error != nil {
			t.Fatalf("%s = %+v, %v", method, r, err)
		}
		var m map[string]json.RawMessage
		json.Unmarshal(r.Result, &m)
		var list []json.RawMessage
		json.Unmarshal(m[field], &list)
		return len(list)
	}
	lists := []struct{ method, field string }{{"resources/list", "resources"}, {"resources/templates/list", "resourceTemplates"}, {"prompts/list", "prompts"}}
	for _, l := range lists {
		if n := count(as("key-other"), l.method, l.field); n != 0 {
			t.Errorf("%s without a grant of the plugin = %d, want 0", l.method, n)
		}
		if n := count(as("key-fix"), l.method, l.field); n == 0 {
			t.Errorf("%s with a grant of the plugin = 0, want the plugin's", l.method)
		}
		if got := cacheScope(t, as("key-fix"), l.method); got != "private" {
			t.Errorf("%s cacheScope = %q, want private (it varies per caller)", l.method, got)
		}
	}
	calls := []struct {
		method string
		params map[string]any
		name   string
	}{
		{"resources/read", map[string]any{"uri": "test://static-text"}, "test://static-text"},
		{"prompts/get", map[string]any{"name": "test_simple_prompt"}, "test_simple_prompt"},
	}
	for _, c := range calls {
		h := map[string]*string{"Mcp-Name": &c.name}
		if r, err := as("key-other").Call(c.method, c.params, h); err != nil || r.Error == nil || !strings.Contains(r.Error.Message, "not found") && !strings.Contains(r.Error.Message, "unknown prompt") {
			t.Errorf("%s without a grant = %+v, %v, want it answered as one that does not exist", c.method, r, err)
		}
		r, err := as("key-fix").Call(c.method, c.params, h)
		if err != nil || r.Error != nil {
			t.Errorf("%s with a grant = %+v, %v, want a result", c.method, r, err)
			continue
		}
		// Whether there is anything to read depends on the caller too.
		if c.method == "resources/read" && !strings.Contains(string(r.Result), `"cacheScope":"private"`) {
			t.Errorf("resources/read with a grant = %s, want cacheScope private", r.Result)
		}
	}
}

// TestAuthKeyRotation: the issuer rotates its key. A token of the new key is
// refused while the JWKS was fetched less than the refetch floor (10 s) ago, and
// accepted once a token naming the unknown key may refetch it; the retired key's
// tokens then get 401 invalid_token.
func TestAuthKeyRotation(t *testing.T) {
	t.Parallel() // it waits out the floor
	as := newTestAS(t)
	url, _ := startHTTP(t, oauthConfig(t, as))
	oldTok := as.mint(t, as.user("alice", "mcp tools:slow"), jose.RS256, nil, "k1")
	if status, ch := postStatus(t, url, "Bearer "+oldTok); status != 200 {
		t.Fatalf("k1's token = %d (%s), want 200", status, ch)
	}
	fetched := time.Now()
	if n := as.fetches.Load(); n != 1 {
		t.Fatalf("%d JWKS fetches after the first token, want 1", n)
	}

	next, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	as.serve(jose.JSONWebKey{Key: next.Public(), KeyID: "k2", Algorithm: "RS256", Use: "sig"}) // k1 retired
	newTok := as.mint(t, as.user("alice", "mcp tools:slow"), jose.RS256, next, "k2")
	status, ch := postStatus(t, url, "Bearer "+newTok)
	if time.Since(fetched) < 9*time.Second && (status != 401 || as.fetches.Load() != 1) {
		t.Errorf("k2's token within the floor = %d (%s), %d fetches; want 401 and no refetch (at most one per 10 s)",
			status, ch, as.fetches.Load())
	}
	time.Sleep(time.Until(fetched.Add(10*time.Second + 200*time.Millisecond)))
	if status, ch := postStatus(t, url, "Bearer "+newTok); status != 200 || as.fetches.Load() != 2 {
		t.Errorf("k2's token after the floor = %d (%s), %d fetches; want 200 after one refetch", status, ch, as.fetches.Load())
	}
	status, ch = postStatus(t, url, "Bearer "+oldTok)
	if status != 401 || !strings.Contains(ch, `error="invalid_token"`) || !strings.Contains(ch, "unknown signing key") {
		t.Errorf("the retired k1's token = %d (%s), want 401 invalid_token, unknown signing key", status, ch)
	}
}

// TestAuthIntrospection: with introspection_url, an opaque access token is checked
// at the issuer's RFC 7662 endpoint (this server authenticated with its client id
// and the secret from its file): an active one for this resource is the identity of
// its sub, the same as that sub's JWT (a task started with one is read with the
// other); an inactive one, or one for another resource, gets 401 invalid_token; the
// answer is kept (asked once); a JWT is still checked with the JWKS, never sent.
func TestAuthIntrospection(t *testing.T) {
	as := newTestAS(t)
	var mu sync.Mutex
	asked := map[string]int{}
	active := map[string]map[string]any{
		"opaque-alice-6f1e": {"active": true, "sub": "alice", "aud": testResource, "iss": as.issuer, "scope": "mcp tools:slow",
			"exp": time.Now().Add(time.Hour).Unix()},
		"opaque-other-aud": {"active": true, "sub": "alice", "aud": "http://other.test/mcp", "scope": "mcp tools:slow"},
	}
	as.mux.HandleFunc("POST /introspect", func(w http.ResponseWriter, r *http.Request) {
		if id, secret, ok := r.BasicAuth(); !ok || id != "mcp-wasmhost" || secret != "introspection-secret" {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		tok := r.PostFormValue("token")
		mu.Lock()
		asked[tok]++
		mu.Unlock()
		answer, ok := active[tok]
		if !ok {
			answer = map[string]any{"active": false}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(answer)
	})
	times := func(tok string) int { mu.Lock(); defer mu.Unlock(); return asked[tok] }
	secret := filepath.Join(t.TempDir(), "introspection.secret")
	if err := os.WriteFile(secret, []byte("introspection-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(oauthConfig(t, as))
	if err != nil {
		t.Fatal(err)
	}
	withIntrospection := strings.Replace(string(doc), "clock_skew = \"5s\"\n", fmt.Sprintf(`clock_skew = "5s"
introspection_url = %q
introspection_client_id = "mcp-wasmhost"
introspection_secret_file = %q
`, as.srv.URL+"/introspect", secret), 1)
	if withIntrospection == string(doc) {
		t.Fatal("no clock_skew line in oauthConfig to add introspection after")
	}
	url, _ := startHTTP(t, writeConfig(t, withIntrospection))

	const opaque = "opaque-alice-6f1e"
	for _, tc := range []struct {
		auth   string
		status int
	}{
		{"Bearer " + opaque, 200},
		{"Bearer " + opaque, 200},
		{"Bearer opaque-revoked", 401},
		{"Bearer opaque-other-aud", 401},
	} {
		status, ch := postStatus(t, url, tc.auth)
		if status != tc.status || tc.status == 401 && !strings.Contains(ch, `error="invalid_token"`) {
			t.Errorf("%s = %d (%s), want %d", tc.auth, status, ch, tc.status)
		}
	}
	if n := times(opaque); n != 1 {
		t.Errorf("the endpoint was asked %d times about the same token, want 1 (its answer kept)", n)
	}

	alice := &mcptest.Stateless{URL: url, Caps: mcptest.TasksExtension(), Client: &http.Client{Transport: bearer{opaque}}}
	if got, want := toolNames(t, alice), []string{"toolbox_slow_count", "toolbox_timer"}; !slices.Equal(got, want) {
		t.Errorf("tools/list with the opaque token = %v, want %v (its scopes' grants)", got, want)
	}
	resp, err := alice.Call("tools/call", map[string]any{"name": "toolbox_slow_count", "arguments": map[string]any{"to": 50, "delay_ms": 100}}, nil)
	var created struct {
		TaskID string `json:"taskId"`
	}
	if err != nil || resp.Error != nil || json.Unmarshal(resp.Result, &created) != nil || created.TaskID == "" {
		t.Fatalf("tools/call with the opaque token = %+v, %v, want a task", resp, err)
	}
	jwtTok := as.mint(t, as.user("alice", "mcp tools:slow"), jose.RS256, nil, "k1")
	withJWT := &mcptest.Stateless{URL: url, Caps: mcptest.TasksExtension(), Client: &http.Client{Transport: bearer{jwtTok}}}
	if got, err := withJWT.Call("tasks/get", map[string]any{"taskId": created.TaskID}, nil); err != nil || got.Error != nil {
		t.Errorf("alice's JWT tasks/get of the task her opaque token started = %+v, %v, want it (one identity)", got, err)
	}
	if n := times(jwtTok); n != 0 {
		t.Errorf("the JWT was sent to the introspection endpoint %d times, want never", n)
	}
}
