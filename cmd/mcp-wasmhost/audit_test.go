package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/audit"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/canonjson"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/mcptest"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
)

// TestAuditTrail: against the binary, every tools/call, task status change and task
// run has its line with the right identity, tool, digest, outcome and host calls
// (an elicitation, an egress origin), and so has a request with an unknown key
// (auth/refused); the file never holds an argument value, an API key or a token;
// SIGTERM writes the last lines before the process ends.
func TestAuditTrail(t *testing.T) {
	const (
		aliceKey   = "key-alice-5b1d0c9e"
		bobKey     = "key-bob-77aa31f0"
		malloryKey = "key-mallory-0e4c2b19"
		secret     = "hunter2-secret-value"
		inURL      = "secret-in-the-url-0042"
	)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body><p>hello</p></body></html>")
	}))
	defer page.Close()
	sum := func(k string) string { s := sha256.Sum256([]byte(k)); return hex.EncodeToString(s[:]) }
	dir := t.TempDir()
	trail := filepath.Join(dir, "audit.jsonl")
	cfg := writeConfig(t, serverTOML(t)+fmt.Sprintf(`[server.auth]
mode = "api_keys"

[[server.auth.keys]]
name = "alice"
sha256 = %q
scopes = ["all"]

[[server.auth.keys]]
name = "bob"
sha256 = %q
scopes = ["all"]

[[server.auth.grants]]
scope = "all"
tools = ["*"]

[server.audit]
path = %q
sync_interval = "10ms"

`, sum(aliceKey), sum(bobKey), trail)+pluginTOML(t, "toolbox", "plugins/toolbox/toolbox.wasm", "")+
		pluginTOML(t, "web", "plugins/web/web.wasm", "")+fmt.Sprintf(`[[plugins.net]]
origins = [%q]
methods = ["GET"]
allow_addresses = ["127.0.0.1/32"]
`, page.URL))

	url, stop := startAudited(t, cfg, trail)
	as := func(key string) *mcptest.Stateless {
		return &mcptest.Stateless{URL: url, Caps: mcptest.TasksExtension(), Client: &http.Client{Transport: bearer{key}}}
	}
	alice, bob := as(aliceKey), as(bobKey)

	formatArgs := map[string]any{"json": `{"password":"` + secret + `"}`, "indent": 2}
	r, err := alice.Call("tools/call", map[string]any{"name": "toolbox_json_format", "arguments": formatArgs}, nil)
	served(t, "alice's json_format", r, err)
	r, err = alice.Call("tools/call", map[string]any{"name": "toolbox_json_format", "arguments": map[string]any{"json": "{" + secret}}, nil)
	if err != nil || r.Error != nil || !strings.Contains(string(r.Result), `"isError":true`) {
		t.Fatalf("alice's bad json_format = %+v, %v, want isError", r, err)
	}
	r, err = bob.Call("tools/call", map[string]any{"name": "web_fetch", "arguments": map[string]any{"url": page.URL + "/?q=" + inURL}}, nil)
	fetched := served(t, "bob's web_fetch", r, err)
	if fetched != "" {
		waitTask(t, bob, fetched, "completed")
	}
	r, err = alice.Call("tools/call", map[string]any{"name": "toolbox_write_note", "arguments": map[string]any{"name": "a.txt", "text": secret}}, nil)
	noteTask := served(t, "alice's write_note", r, err)
	waitTask(t, alice, noteTask, "input_required")
	r, err = alice.Call("tasks/cancel", map[string]any{"taskId": noteTask}, nil)
	served(t, "alice's tasks/cancel", r, err)
	waitTask(t, alice, noteTask, "cancelled")
	r, err = bob.Call("tools/call", map[string]any{"name": "toolbox_nope", "arguments": map[string]any{"x": secret}}, nil)
	if err != nil || r.Error == nil {
		t.Fatalf("bob's unknown tool = %+v, %v, want an error", r, err)
	}
	if status, _ := postStatus(t, url, "Bearer "+malloryKey); status != http.StatusUnauthorized {
		t.Fatalf("an unknown key = HTTP %d, want 401", status)
	}

	raw, lines := stop()
	for _, s := range []string{secret, inURL, aliceKey, bobKey, malloryKey, sum(aliceKey), "Bearer", "password"} {
		if bytes.Contains(raw, []byte(s)) {
			t.Errorf("the audit file holds %q:\n%s", s, raw)
		}
	}
	find := func(what string, match func(audit.Record) bool) audit.Record {
		t.Helper()
		i := slices.IndexFunc(lines, match)
		if i < 0 {
			t.Fatalf("no line for %s in:\n%s", what, raw)
		}
		return lines[i]
	}
	calls := func(tool string) []audit.Record {
		var out []audit.Record
		for _, l := range lines {
			if l.Method == "tools/call" && l.Tool == tool {
				out = append(out, l)
			}
		}
		return out
	}

	b, _ := json.Marshal(formatArgs)
	canon, _ := canonjson.Canonical(b)
	digest := sha256.Sum256(canon)
	if got := calls("toolbox_json_format"); len(got) != 2 {
		t.Errorf("%d tools/call lines for json_format, want 2 (one per call)", len(got))
	} else {
		ok, bad := got[0], got[1]
		if ok.Identity != "key:alice" || ok.Requester != "user:key:alice" || ok.Outcome != "ok" ||
			ok.ArgsSHA256 != hex.EncodeToString(digest[:]) || ok.DurationMS <= 0 || ok.Time.IsZero() {
			t.Errorf("json_format line = %+v, want alice's, ok, the digest of the canonical arguments, a duration", ok)
		}
		if bad.Outcome != "isError" || bad.ArgsSHA256 == "" || bad.ArgsSHA256 == ok.ArgsSHA256 {
			t.Errorf("the failing json_format line = %+v, want isError with its own digest", bad)
		}
	}
	fetchCall := find("bob's web_fetch", func(l audit.Record) bool { return l.Method == "tools/call" && l.Tool == "web_fetch" })
	if fetchCall.Identity != "key:bob" {
		t.Errorf("web_fetch line = %+v, want bob's", fetchCall)
	}
	fetchRun := fetchCall
	if fetchCall.TaskID != "" {
		if fetchCall.Outcome != "task" || fetchCall.Status != "working" {
			t.Errorf("web_fetch line = %+v, want outcome task, status working", fetchCall)
		}
		fetchRun = find("web_fetch's run", func(l audit.Record) bool { return l.Method == "task/run" && l.TaskID == fetchCall.TaskID })
	}
	if fetchRun.Outcome != "ok" || !slices.Equal(fetchRun.Egress, []string{page.URL}) || fetchRun.Identity != "key:bob" {
		t.Errorf("web_fetch's run line = %+v, want ok with egress [%s]", fetchRun, page.URL)
	}
	noteCall := find("write_note", func(l audit.Record) bool { return l.Method == "tools/call" && l.Tool == "toolbox_write_note" })
	if noteCall.TaskID != noteTask || noteCall.Outcome != "task" {
		t.Errorf("write_note line = %+v, want the task %s", noteCall, noteTask)
	}
	var statuses []string
	for _, l := range lines {
		if l.Method == "task/status" && l.TaskID == noteTask {
			statuses = append(statuses, l.Status)
			if l.Identity != "key:alice" {
				t.Errorf("status line %+v, want alice's", l)
			}
		}
	}
	if !slices.Equal(statuses, []string{"input_required", "cancelled"}) {
		t.Errorf("write_note's status lines = %v, want [input_required cancelled]", statuses)
	}
	noteRun := find("write_note's run", func(l audit.Record) bool { return l.Method == "task/run" && l.TaskID == noteTask })
	if noteRun.Inputs["elicitation/create"] != 1 || noteRun.Tool != "toolbox_write_note" || noteRun.Outcome == "ok" {
		t.Errorf("write_note's run line = %+v, want one elicitation/create and a failure (cancelled while asking)", noteRun)
	}
	unknown := find("the unknown tool", func(l audit.Record) bool { return l.Tool == "toolbox_nope" })
	if unknown.Outcome != "error" || unknown.ErrorCode != -32602 || unknown.Identity != "key:bob" {
		t.Errorf("unknown tool line = %+v, want bob's error -32602", unknown)
	}
	refused := find("the unknown key", func(l audit.Record) bool { return l.Method == audit.MethodRefused })
	if refused.Reason != "invalid_token" || refused.HTTPStatus != 401 || refused.Identity != "" || refused.Source != "127.0.0.1" {
		t.Errorf("the unknown key's line = %+v, want invalid_token 401 from 127.0.0.1 with no identity", refused)
	}
}

// startAudited runs the binary on cfg over HTTP with its audit trail at trail; stop
// ends it with SIGTERM, which writes the last lines before the process ends, and
// returns the file and its lines.
func startAudited(t *testing.T, cfg, trail string) (url string, stop func() ([]byte, []audit.Record)) {
	t.Helper()
	log := &testenv.SyncBuffer{}
	cmd := exec.Command(binary, "--config", cfg, "--http", "127.0.0.1:0")
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	m := waitLog(t, log, regexp.MustCompile(`url=(http://\S+/mcp)`))
	if m == nil {
		t.Fatalf("no URL in the log:\n%s", log)
	}
	return m[1], func() ([]byte, []audit.Record) {
		t.Helper()
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("the server did not stop on SIGTERM:\n%s", log)
		}
		raw, err := os.ReadFile(trail)
		if err != nil {
			t.Fatal(err)
		}
		var lines []audit.Record
		sc := bufio.NewScanner(bytes.NewReader(raw))
		for sc.Scan() {
			rec, err := audit.DecodeLine(sc.Bytes())
			if err != nil {
				t.Fatalf("line %q: %v", sc.Bytes(), err)
			}
			lines = append(lines, rec)
		}
		return raw, lines
	}
}

// TestAuditOAuth: with OAuth, a call's line names the subject
// (oauth:<issuer>#<sub>); a call answered with the 403 scope challenge has its
// line (error -32003, httpStatus 403); every refusal at the auth layer has one too,
// with its reason and status, and the identity once the token verified (no token,
// an expired one, one without the required scope, one over its rate limit); and no
// token, nor any part of one, is anywhere in the file.
func TestAuditOAuth(t *testing.T) {
	as := newTestAS(t)
	trail := filepath.Join(t.TempDir(), "audit.jsonl")
	cfg := writeConfig(t, serverTOML(t)+fmt.Sprintf(`[server.auth]
mode = "oauth"
issuer = %q
resource = %q
jwks_url = %q
required_scopes = ["mcp"]
rate_limit = 0.01
rate_burst = 2

[[server.auth.grants]]
scope = "tools:json"
tools = ["toolbox_json_format"]

[server.audit]
path = %q
sync_interval = "10ms"

`, as.issuer, testResource, as.srv.URL+"/jwks", trail)+pluginTOML(t, "toolbox", "plugins/toolbox/toolbox.wasm", ""))
	url, stop := startAudited(t, cfg, trail)
	tokens := map[string]string{}
	mint := func(sub, scope string, f func(*claims)) string {
		c := as.user(sub, scope)
		if f != nil {
			f(&c)
		}
		tokens[sub] = as.mint(t, c, jose.RS256, nil, "k1")
		return tokens[sub]
	}
	caller := func(tok string) *mcptest.Stateless {
		return &mcptest.Stateless{URL: url, Client: &http.Client{Transport: bearer{tok}}}
	}
	format := map[string]any{"name": "toolbox_json_format", "arguments": map[string]any{"json": `{"a":1}`}}

	r, err := caller(mint("alice", "mcp tools:json", nil)).Call("tools/call", format, nil)
	if err != nil || r.Error != nil {
		t.Fatalf("alice's tools/call = %+v, %v, want a result", r, err)
	}
	r, err = caller(mint("carol", "mcp", nil)).Call("tools/call", format, nil)
	if err != nil || r.HTTPStatus != http.StatusForbidden || r.Error == nil || r.Error.Code != -32003 {
		t.Fatalf("carol's tools/call = %+v, %v, want 403 -32003", r, err)
	}
	expired := mint("dave", "mcp", func(c *claims) { c.Expiry = jwt.NewNumericDate(time.Now().Add(-time.Hour)) })
	frank := mint("frank", "mcp", nil)
	for _, tc := range []struct {
		what, auth string
		status     int
	}{
		{"no token", "", 401},
		{"dave's expired token", "Bearer " + expired, 401},
		{"erin's token without mcp", "Bearer " + mint("erin", "tools:json", nil), 403},
		{"frank's first", "Bearer " + frank, 200},
		{"frank's second", "Bearer " + frank, 200},
		{"frank's third", "Bearer " + frank, 429},
	} {
		if status, _ := postStatus(t, url, tc.auth); status != tc.status {
			t.Fatalf("%s = HTTP %d, want %d", tc.what, status, tc.status)
		}
	}

	raw, lines := stop()
	for sub, tok := range tokens {
		parts := strings.Split(tok, ".")
		for _, s := range append(parts, tok) {
			if bytes.Contains(raw, []byte(s)) {
				t.Errorf("the audit file holds %s's token or a part of it (%.12s...):\n%s", sub, s, raw)
			}
		}
	}
	for _, s := range []string{"Bearer", "eyJ"} { // every JWT's header starts with eyJ
		if bytes.Contains(raw, []byte(s)) {
			t.Errorf("the audit file holds %q:\n%s", s, raw)
		}
	}
	id := func(sub string) string { return "oauth:" + as.issuer + "#" + sub }
	var got []string
	for _, l := range lines {
		switch l.Method {
		case "tools/call":
			got = append(got, fmt.Sprintf("tools/call %s %s %s %d %d digest:%t", l.Identity, l.Tool, l.Outcome, l.ErrorCode, l.HTTPStatus, l.ArgsSHA256 != ""))
		case audit.MethodRefused:
			if l.Source != "127.0.0.1" {
				t.Errorf("refusal line %+v, want source 127.0.0.1", l)
			}
			got = append(got, fmt.Sprintf("%s %q %s %d", l.Method, l.Identity, l.Reason, l.HTTPStatus))
		}
	}
	want := []string{
		"tools/call " + id("alice") + " toolbox_json_format ok 0 0 digest:true",
		"tools/call " + id("carol") + " toolbox_json_format error -32003 403 digest:true",
		`auth/refused "" missing_token 401`,
		`auth/refused "" invalid_token 401`,
		`auth/refused "` + id("erin") + `" insufficient_scope 403`,
		`auth/refused "` + id("frank") + `" rate_limit 429`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines:\n%s\nwant:\n%s\nfile:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), raw)
	}
}

// TestAuditFeatures: over stdio (the local user) resources/read and prompts/get have
// their lines, the prompt's arguments only as a digest; closing the client ends the
// server, which writes them before it exits.
func TestAuditFeatures(t *testing.T) {
	const secret = "prompt-arg-secret-991"
	trail := filepath.Join(t.TempDir(), "audit.jsonl")
	fixture := strings.Replace(pluginTOML(t, "fixture", "conformance/fixture/fixture.wasm", ""), "name = \"fixture\"\n", "name = \"fixture\"\nprefix = \"\"\n", 1)
	cfg := writeConfig(t, serverTOML(t)+fmt.Sprintf("[server.audit]\npath = %q\n\n", trail)+fixture)
	cs, _ := connectStdio(t, "--config", cfg)
	ctx := t.Context()
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static-text"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_prompt_with_arguments", Arguments: map[string]string{"arg1": secret, "arg2": "b"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://nope"}); err == nil {
		t.Fatal("reading an unknown resource: no error")
	}
	cs.Close()
	var raw []byte
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		raw, _ = os.ReadFile(trail)
		if bytes.Count(raw, []byte("\n")) >= 3 || time.Now().After(deadline) {
			break
		}
	}
	if bytes.Contains(raw, []byte(secret)) {
		t.Errorf("the audit file holds the prompt's argument:\n%s", raw)
	}
	var got []string
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		r, err := audit.DecodeLine(sc.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if r.Identity != "local" || r.Requester != "local" {
			t.Errorf("line %+v, want the local user's", r)
		}
		got = append(got, fmt.Sprintf("%s %s%s %s %d %t", r.Method, r.Resource, r.Prompt, r.Outcome, r.ErrorCode, r.ArgsSHA256 != ""))
	}
	want := []string{
		"resources/read test://static-text ok 0 false",
		"prompts/get test_prompt_with_arguments ok 0 true",
		"resources/read test://nope error -32602 false",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
