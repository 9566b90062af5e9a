package host_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcp-wasmhost/mcp-wasmhost/host"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// TestParamHeaders: on a 2026-07-28 tools/call over HTTP, each Mcp-Param-* header of
// a tool's x-mcp-header arguments must equal the body's value once decoded; a
// mismatch, a missing header, one sent twice, bytes that are not visible ASCII or bad
// Base64 is HTTP 400 with -32020. The twice, non-ASCII and non-UTF-8 cases are what
// go-sdk alone lets through.
func TestParamHeaders(t *testing.T) {
	ctx := context.Background()
	e, err := sandbox.NewEngine(ctx, sandbox.Options{CacheDir: testenv.CacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(ctx) })
	p := testenv.Load(t, e, testenv.Spec(t, "ph", "testdata/wasm/paramheader.wasm"))
	catalog, err := plugins.NewCatalog([]*plugins.Plugin{p})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := host.New(catalog, host.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(ctx) })
	hs := httptest.NewServer(srv.HTTPHandler())
	t.Cleanup(hs.Close)

	good := map[string]any{"region": "us-west", "count": 42, "dry": true}
	goodHeaders := [][2]string{{"Mcp-Param-Region", "us-west"}, {"Mcp-Param-Count", "42"}, {"Mcp-Param-Dry-Run", "true"}}
	with := func(extra ...[2]string) [][2]string {
		var out [][2]string
		replaced := map[string]bool{}
		for _, h := range extra {
			replaced[http.CanonicalHeaderKey(h[0])] = true
		}
		for _, h := range goodHeaders {
			if !replaced[h[0]] {
				out = append(out, h)
			}
		}
		for _, h := range extra {
			if h[1] != "<none>" {
				out = append(out, h)
			}
		}
		return out
	}
	args := func(kv ...any) map[string]any {
		m := map[string]any{}
		for k, v := range good {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(m, kv[i].(string))
			} else {
				m[kv[i].(string)] = kv[i+1]
			}
		}
		return m
	}
	for _, tc := range []struct {
		name    string
		args    map[string]any
		headers [][2]string
		want    string // "" means the call is served
	}{
		{name: "all match", args: good, headers: with()},
		{name: "Base64", args: args("region", "café"), headers: with([2]string{"Mcp-Param-Region", "=?base64?Y2Fmw6k=?="})},
		{name: "blanks around the value", args: good, headers: with([2]string{"Mcp-Param-Region", " \tus-west \t"})},
		{name: "name in another case", args: good, headers: with([2]string{"mcp-param-region", "us-west"})},
		{name: "absent argument, no header", args: args("count", nil), headers: with([2]string{"Mcp-Param-Count", "<none>"})},
		{name: "null argument, no header", args: args("count", nil, "dry", nil), headers: with([2]string{"Mcp-Param-Count", "<none>"}, [2]string{"Mcp-Param-Dry-Run", "<none>"})},
		{name: "string mismatch", args: good, headers: with([2]string{"Mcp-Param-Region", "eu-west"}),
			want: `Mcp-Param-Region header value "eu-west" does not match argument "region"`},
		{name: "integer mismatch", args: good, headers: with([2]string{"Mcp-Param-Count", "43"}),
			want: `Mcp-Param-Count header value "43" does not match argument "count"`},
		{name: "boolean spelled otherwise", args: good, headers: with([2]string{"Mcp-Param-Dry-Run", "True"}),
			want: `does not match argument "dry"`},
		{name: "missing header", args: good, headers: with([2]string{"Mcp-Param-Count", "<none>"}),
			want: `missing Mcp-Param-Count header for argument "count"`},
		{name: "header for an absent argument", args: args("region", nil), headers: with(),
			want: `Mcp-Param-Region header sent, but argument "region" is absent`},
		{name: "sent twice", args: good, headers: with([2]string{"Mcp-Param-Region", "us-west"}, [2]string{"Mcp-Param-Region", "eu-west"}),
			want: `Mcp-Param-Region header sent 2 times`},
		{name: "sent twice, equal", args: good, headers: with([2]string{"Mcp-Param-Region", "us-west"}, [2]string{"Mcp-Param-Region", "us-west"}),
			want: `Mcp-Param-Region header sent 2 times`},
		{name: "not visible ASCII", args: args("region", "café"), headers: with([2]string{"Mcp-Param-Region", "café"}),
			want: `Mcp-Param-Region header: byte 3 (0xc3) is not visible ASCII`},
		{name: "bad Base64", args: good, headers: with([2]string{"Mcp-Param-Region", "=?base64?!!!?=?="}),
			want: `Mcp-Param-Region header: invalid Base64`},
		{name: "Base64 of bytes that are not UTF-8", args: good, headers: with([2]string{"Mcp-Param-Region", "=?base64?/w==?="}),
			want: `the decoded Base64 is not UTF-8 text`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := postToolCall(t, hs.URL+"/mcp", "ph_route", tc.args, tc.headers)
			if tc.want == "" {
				if status != http.StatusOK || !strings.Contains(body, "routed") {
					t.Errorf("tools/call = HTTP %d %s, want it served", status, body)
				}
				return
			}
			var msg struct {
				Error struct {
					Code    int64
					Message string
				}
			}
			if err := json.Unmarshal([]byte(body), &msg); err != nil {
				t.Fatalf("tools/call = HTTP %d %s: %v", status, body, err)
			}
			if status != http.StatusBadRequest || msg.Error.Code != -32020 || !strings.Contains(msg.Error.Message, tc.want) {
				t.Errorf("tools/call = HTTP %d %d %q, want 400 -32020 containing %q", status, msg.Error.Code, msg.Error.Message, tc.want)
			}
		})
	}
}

// postToolCall sends one 2026-07-28 tools/call with the headers given (in order; a
// name given twice is sent twice) and returns the HTTP status and body.
func postToolCall(t *testing.T, url, tool string, args map[string]any, headers [][2]string) (int, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
		"name": tool, "arguments": args,
		"_meta": map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": map[string]any{}},
	}})
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	for _, h := range headers {
		req.Header[http.CanonicalHeaderKey(h[0])] = append(req.Header[http.CanonicalHeaderKey(h[0])], h[1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
