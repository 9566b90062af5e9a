package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
)

// TestInteropGoSDK2026: go-sdk v1.8.0's client, as anyone would use it, negotiates MCP
// 2026-07-28 with the real binary over stdio and over HTTP, and completes calls whose
// guests ask for input (an elicitation; then elicitation, sampling and roots at once)
// through InputRequiredResult: its own multi round trip answers them, and the server
// sends it no request at all.
func TestInteropGoSDK2026(t *testing.T) {
	cfg := writeConfig(t, serverTOML(t)+strings.Replace(pluginTOML(t, "fix2026", "conformance/fix2026/fix2026.wasm", ""),
		"[[plugins]]\n", "[[plugins]]\nprefix = \"\"\n", 1))
	transports := []struct {
		name    string
		connect func(t *testing.T) mcp.Transport
	}{
		{"stdio", func(t *testing.T) mcp.Transport {
			return &mcp.CommandTransport{Command: exec.Command(binary, "--config", cfg)}
		}},
		{"http", func(t *testing.T) mcp.Transport {
			url, _ := startHTTP(t, cfg)
			return &mcp.StreamableClientTransport{Endpoint: url}
		}},
	}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			var elicited, sampled atomic.Int32
			client := mcp.NewClient(&mcp.Implementation{Name: "interop", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					elicited.Add(1)
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
				},
				CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					sampled.Add(1)
					return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "Hi"}}, nil
				},
			})
			client.AddRoots(&mcp.Root{URI: "file:///interop", Name: "interop"})
			wire := &testenv.SyncBuffer{}
			cs, err := client.Connect(context.Background(), &mcp.LoggingTransport{Transport: tr.connect(t), Writer: wire}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
				t.Fatalf("negotiated %q, want 2026-07-28", v)
			}
			if got := callText(t, cs, "test_input_required_result_elicitation", map[string]any{}); got != "Hello, Ada!" {
				t.Errorf("elicitation call = %q", got)
			}
			if got := callText(t, cs, "test_input_required_result_multiple_inputs", map[string]any{}); got != "name: Ada; greeting: Hi; roots: file:///interop" {
				t.Errorf("three-input call = %q", got)
			}
			if elicited.Load() != 2 || sampled.Load() != 1 {
				t.Errorf("the client answered %d elicitations and %d samplings, want 2 and 1", elicited.Load(), sampled.Load())
			}
			rounds, requests := 0, 0
			sc := bufio.NewScanner(bytes.NewReader([]byte(wire.String())))
			sc.Buffer(make([]byte, 1<<20), 16<<20)
			for sc.Scan() {
				line, ok := strings.CutPrefix(sc.Text(), "read: ")
				if !ok {
					continue
				}
				var m struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
					Result struct {
						ResultType string `json:"resultType"`
					} `json:"result"`
				}
				json.Unmarshal([]byte(line), &m)
				if m.Method != "" && m.ID != nil {
					requests++
					t.Errorf("the server sent a request: %s", line)
				}
				if m.Result.ResultType == "input_required" {
					rounds++
				}
			}
			if rounds != 2 || requests != 0 {
				t.Errorf("%d InputRequiredResults and %d server requests, want 2 and 0:\n%s", rounds, requests, wire)
			}
		})
	}
}
