package hostile_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/mcptest"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
)

// bundledNet starts the binary serving the bundled plugin name (plugins/<name>) in a
// worker, granted origin on loopback. onRequest answers elicitations (nil: none).
func bundledNet(t *testing.T, name, origin string, onRequest func(*jsonrpc.Request) (any, error)) (*mcptest.Client, *testenv.SyncBuffer) {
	t.Helper()
	wasm := testenv.Path("plugins/" + name + "/" + name + ".wasm")
	b, err := os.ReadFile(wasm)
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`[server]
cache_dir = %q

[tasks]
store = "memory"
poll_interval = "10ms"

[[plugins]]
name = %q
path = %q
sha256 = %q
timeout = "20s"

[[plugins.net]]
origins = [%q]
allow_addresses = ["127.0.0.1/32"]
`, testenv.CacheDir(), name, wasm, digest(b), origin)
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "--config", path)
	stderr := &testenv.SyncBuffer{}
	cmd.Stderr = stderr
	if onRequest == nil {
		onRequest = func(*jsonrpc.Request) (any, error) { return nil, errors.New("no") }
	}
	return mcptest.Dial(t, &mcp.CommandTransport{Command: cmd}, onRequest), stderr
}

// toolText calls tool and returns its text content and isError.
func toolText(t *testing.T, c *mcptest.Client, tool string, args any) (string, bool) {
	t.Helper()
	raw, err := c.Call(context.Background(), "tools/call", map[string]any{"name": tool, "arguments": args})
	if err != nil {
		t.Fatalf("%s(%v): %v", tool, args, err)
	}
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || len(res.Content) != 1 {
		t.Fatalf("%s(%v) = %s, %v", tool, args, raw, err)
	}
	return res.Content[0].Text, res.IsError
}

const webPage = `<!doctype html><html><head><title>Docs</title>
<style>body { font: 12px sans-serif }</style><script>alert("<b>no</b>")</script></head>
<body><nav><a href="/">Home</a></nav>
<h1>Getting started</h1>
<p>Install the <a href="/dl?os=linux&amp;arch=amd64">binary</a>, then run it.</p>
<ul><li>fast</li><li>safe &amp; small</li></ul>
<h2>More</h2><p>See &quot;docs&quot;.</p></body></html>`

// TestWebPlugin: the bundled web plugin fetches a page from a local server through
// the host and returns its text or markdown, within its byte limit.
func TestWebPlugin(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/page":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, webPage)
		case "/plain":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "just <text>")
		case "/long":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<p>"+strings.Repeat("word ", 2000)+"</p>")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	c, _ := bundledNet(t, "web", srv.URL, nil)
	for _, tc := range []struct {
		name    string
		args    map[string]any
		want    string
		isError bool
	}{
		{"text", map[string]any{"url": srv.URL + "/page"},
			"Home\n\nGetting started\n\nInstall the binary, then run it.\n\n- fast\n- safe & small\n\nMore\n\nSee \"docs\".", false},
		{"markdown", map[string]any{"url": srv.URL + "/page", "format": "markdown"},
			"[Home](" + srv.URL + "/)\n\n# Getting started\n\nInstall the [binary](" + srv.URL + "/dl?os=linux&arch=amd64), then run it.\n\n- fast\n- safe & small\n\n## More\n\nSee \"docs\".", false},
		{"plain text as it is", map[string]any{"url": srv.URL + "/plain"}, "just <text>", false},
		{"byte limit", map[string]any{"url": srv.URL + "/long", "max_bytes": 12}, "word word wo\n\n[truncated at 12 bytes]", false},
		{"not found", map[string]any{"url": srv.URL + "/nope"}, "fetch " + srv.URL + "/nope: HTTP status 404", true},
		{"unlisted origin", map[string]any{"url": "http://127.0.0.2:1/"}, "refused: no [[plugins.net]] rule allows this origin", true},
		{"bad format", map[string]any{"url": srv.URL + "/page", "format": "pdf"}, `format "pdf": want text or markdown`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, isErr := toolText(t, c, "web_fetch", tc.args)
			if isErr != tc.isError || (tc.isError && !strings.Contains(got, tc.want)) || (!tc.isError && got != tc.want) {
				t.Errorf("web_fetch(%v) = %q (isError %v), want %q (isError %v)", tc.args, got, isErr, tc.want, tc.isError)
			}
		})
	}
}
