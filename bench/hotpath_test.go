package bench

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/mcptest"
)

// BenchmarkHotPath is one request after another on the server's hot paths, in process
// so that allocations are the server's (and the client's few): tasks/get and a sync
// tools/call of the C guest, over stdio (ServeStdio on pipes, raw lines) and over
// Streamable HTTP (a plain net/http client, one session).
func BenchmarkHotPath(b *testing.B) {
	url, srv := httpServer(b, "textkit", "plugins/textkit/textkit.wasm")
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"textkit_ping","arguments":{}}}`
	taskID := regexp.MustCompile(`"taskId":"([^"]+)"`)

	b.Run("stdio", func(b *testing.B) {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- srv.ServeStdio(ctx, inR, outW) }()
		b.Cleanup(func() { inW.Close(); cancel(); <-served })
		out := bufio.NewReader(outR)
		roundTrip := func(line string) string {
			if _, err := io.WriteString(inW, line+"\n"); err != nil {
				b.Fatal(err)
			}
			for {
				ans, err := out.ReadString('\n')
				if err != nil {
					b.Fatal(err)
				}
				if strings.Contains(ans, `"id":`) { // not a notification
					return ans
				}
			}
		}
		roundTrip(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
		io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
		m := taskID.FindStringSubmatch(roundTrip(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"textkit_ping","arguments":{},"task":{}}}`))
		if m == nil {
			b.Fatal("no task created")
		}
		get := `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"` + m[1] + `"}}`
		for _, r := range []struct{ name, line, want string }{
			{"tasks-get", get, `"status":"`},
			{"tools-call", call, `"content"`},
		} {
			b.Run(r.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if ans := roundTrip(r.line); !strings.Contains(ans, r.want) {
						b.Fatalf("%s = %s", r.name, ans)
					}
				}
			})
		}
	})

	// A stateless (2026-07-28) sync tools/call: answered as application/json when it
	// cannot stream (host/respmode.go), as one SSE event before.
	b.Run("http2026/tools-call", func(b *testing.B) {
		body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"textkit_ping","arguments":{},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},` +
			`"io.modelcontextprotocol/clientCapabilities":{}}}}`
		client := &http.Client{}
		b.ReportAllocs()
		for b.Loop() {
			req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("MCP-Protocol-Version", "2026-07-28")
			req.Header.Set("Mcp-Method", "tools/call")
			req.Header.Set("Mcp-Name", "textkit_ping")
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			ans, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(ans), `"content"`) {
				b.Fatalf("tools/call = %d %s", resp.StatusCode, ans)
			}
		}
	})

	b.Run("http", func(b *testing.B) {
		c := mcptest.Dial(b, &mcp.StreamableClientTransport{Endpoint: url}, nil)
		id := c.CreateTask("textkit_ping", map[string]any{}, map[string]any{}, nil).TaskID
		session := c.Conn.SessionID()
		client := &http.Client{}
		get := `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"` + id + `"}}`
		for _, r := range []struct{ name, body, want string }{
			{"tasks-get", get, `"status":"`},
			{"tools-call", call, `"content"`},
		} {
			b.Run(r.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(r.body))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Accept", "application/json, text/event-stream")
					req.Header.Set("Mcp-Session-Id", session)
					req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
					resp, err := client.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), r.want) {
						b.Fatalf("%s = %d %s", r.name, resp.StatusCode, body)
					}
				}
			})
		}
	})
}
