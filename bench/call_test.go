package bench

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/bench/harness"
	"github.com/mcp-wasmhost/mcp-wasmhost/host"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/mcptest"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
)

// guests are the modules measured: the cheapest tool of a C and of a Go guest.
var guests = []struct {
	name, plugin, path, tool, args string
}{
	{"c", "textkit", "plugins/textkit/textkit.wasm", "ping", `{}`},
	{"go", "stateful", "testdata/wasm/stateful.wasm", "remember", `{"value":"x"}`},
}

// BenchmarkBareWazero is the floor: wazero alone instantiating the module and calling
// mcpwh_call, with just enough host functions to hand it its input and take its output
// (harness.Bare, which bench/cmd/benchall uses too).
func BenchmarkBareWazero(b *testing.B) {
	for _, g := range guests {
		b.Run(g.name, func(b *testing.B) {
			bare := newBare(b, g.path, g.tool, g.args)
			lat := newLatencies(b)
			for b.Loop() {
				start := time.Now()
				if err := bare.Call(context.Background()); err != nil {
					b.Fatal(err)
				}
				lat.add(time.Since(start))
			}
			lat.report()
		})
	}
}

func newBare(b *testing.B, path, tool, args string) *harness.Bare {
	bare, err := harness.NewBare(context.Background(), testenv.CacheDir(), testenv.Path(path), tool, args)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { bare.Close(context.Background()) })
	return bare
}

// BenchmarkFigure1 is figure 1 of docs/BENCHMARKS.md in one benchmark: each iteration
// makes one bare wazero call and one sync tools/call to the real binary over stdio
// (raw client) of the same module, so both p50s and their ratio come from the same run
// under the same noise.
func BenchmarkFigure1(b *testing.B) {
	for _, g := range guests {
		b.Run(g.name, func(b *testing.B) {
			bare := newBare(b, g.path, g.tool, g.args)
			c := stdioServerOf(b, "memory", testenv.Spec(b, g.plugin, g.path))
			params := map[string]any{"name": g.plugin + "_" + g.tool, "arguments": json.RawMessage(g.args)}
			ctx := context.Background()
			var floor, call []time.Duration
			for b.Loop() {
				start := time.Now()
				if err := bare.Call(ctx); err != nil {
					b.Fatal(err)
				}
				mid := time.Now()
				res, err := c.Call(ctx, "tools/call", params)
				if err != nil || strings.Contains(string(res), `"isError":true`) {
					b.Fatalf("tools/call %s = %s, %v", g.tool, res, err)
				}
				floor, call = append(floor, mid.Sub(start)), append(call, time.Since(mid))
			}
			p50 := func(d []time.Duration) float64 {
				slices.Sort(d)
				return float64(d[len(d)/2].Nanoseconds()) / 1e3
			}
			bp, cp := p50(floor), p50(call)
			b.ReportMetric(bp, "bare-p50-us")
			b.ReportMetric(cp, "call-p50-us")
			b.ReportMetric(cp/bp, "ratio")
		})
	}
}

// BenchmarkSandboxCall is one call through the sandbox: limits, grants, host
// functions, output checks; no MCP.
func BenchmarkSandboxCall(b *testing.B) {
	for _, g := range guests {
		b.Run(g.name, func(b *testing.B) {
			p := testenv.Load(b, testenv.Engine(b), testenv.Spec(b, g.plugin, g.path))
			tool := p.Tools[slices.IndexFunc(p.Tools, func(t *plugins.Tool) bool { return t.GuestName == g.tool })]
			lat := newLatencies(b)
			for b.Loop() {
				start := time.Now()
				if _, err := tool.Call(context.Background(), json.RawMessage(g.args), nil); err != nil {
					b.Fatal(err)
				}
				lat.add(time.Since(start))
			}
			lat.report()
		})
	}
}

// BenchmarkToolsCall is a whole tools/call round trip from a go-sdk client, over an
// in-memory transport (the server's own cost) and over Streamable HTTP on loopback.
func BenchmarkToolsCall(b *testing.B) {
	for _, g := range guests {
		p := testenv.Load(b, testenv.Engine(b), testenv.Spec(b, g.plugin, g.path))
		catalog, err := plugins.NewCatalog([]*plugins.Plugin{p})
		if err != nil {
			b.Fatal(err)
		}
		srv, err := host.New(catalog, host.Options{})
		if err != nil {
			b.Fatal(err)
		}
		name := g.plugin + "_" + g.tool
		transports := map[string]func(b *testing.B) mcp.Transport{
			"inmemory": func(b *testing.B) mcp.Transport {
				ct, st := mcp.NewInMemoryTransports()
				if _, err := srv.Connect(context.Background(), st); err != nil {
					b.Fatal(err)
				}
				return ct
			},
			"http": func(b *testing.B) mcp.Transport {
				hs := httptest.NewServer(srv.HTTPHandler())
				b.Cleanup(hs.Close)
				return &mcp.StreamableClientTransport{Endpoint: hs.URL + "/mcp"}
			},
		}
		for _, tname := range []string{"inmemory", "http"} {
			b.Run(g.name+"/"+tname, func(b *testing.B) {
				client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
				cs, err := client.Connect(context.Background(), transports[tname](b), nil)
				if err != nil {
					b.Fatal(err)
				}
				defer cs.Close()
				params := &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(g.args)}
				lat := newLatencies(b)
				for b.Loop() {
					start := time.Now()
					res, err := cs.CallTool(context.Background(), params)
					if err != nil || res.IsError {
						b.Fatalf("CallTool(%s) = %v, %v", name, res, err)
					}
					lat.add(time.Since(start))
				}
				lat.report()
			})
		}
	}
}

// BenchmarkToolsCallStdio is a sync tools/call round trip to the real binary over
// stdio, from a raw JSON-RPC client, for the C guest.
func BenchmarkToolsCallStdio(b *testing.B) {
	roundTrips(b, stdioServer(b, "memory"), "tools/call", map[string]any{"name": "textkit_ping", "arguments": map[string]any{}})
}

// roundTrips times one request after another and reports their percentiles.
func roundTrips(b *testing.B, c *mcptest.Client, method string, params any) {
	lat := newLatencies(b)
	ctx := context.Background()
	for b.Loop() {
		start := time.Now()
		if _, err := c.Call(ctx, method, params); err != nil {
			b.Fatal(err)
		}
		lat.add(time.Since(start))
	}
	lat.report()
}
