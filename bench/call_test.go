package bench

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

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
// mcpwh_call, with just enough host functions to hand it its input and take its output.
func BenchmarkBareWazero(b *testing.B) {
	for _, g := range guests {
		b.Run(g.name, func(b *testing.B) {
			ctx := context.Background()
			cache, err := wazero.NewCompilationCacheWithDir(testenv.CacheDir())
			if err != nil {
				b.Fatal(err)
			}
			rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(cache).WithCloseOnContextDone(true))
			defer rt.Close(ctx)
			wasi_snapshot_preview1.MustInstantiate(ctx, rt)
			input := []byte(`{"tool":"` + g.tool + `","arguments":` + g.args + `}`)
			var output []byte
			i32 := api.ValueTypeI32
			_, err = rt.NewHostModuleBuilder("mcpwh").
				NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, _ api.Module, s []uint64) {
				s[0] = uint64(len(input))
			}), nil, []api.ValueType{i32}).Export("input_len").
				NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, m api.Module, s []uint64) {
				m.Memory().Write(uint32(s[0]), input)
				s[0] = uint64(len(input))
			}), []api.ValueType{i32, i32}, []api.ValueType{i32}).Export("input_read").
				NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, m api.Module, s []uint64) {
				b, _ := m.Memory().Read(uint32(s[0]), uint32(s[1]))
				output = append(output[:0], b...)
				s[0] = 0
			}), []api.ValueType{i32, i32}, []api.ValueType{i32}).Export("output_write").
				NewFunctionBuilder().WithGoModuleFunction(nop, []api.ValueType{i32, i32, i32}, []api.ValueType{i32}).Export("log").
				NewFunctionBuilder().WithGoModuleFunction(nop, []api.ValueType{api.ValueTypeF64, api.ValueTypeF64, i32, i32}, []api.ValueType{i32}).Export("progress").
				NewFunctionBuilder().WithGoModuleFunction(nop, []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).Export("request").
				NewFunctionBuilder().WithGoModuleFunction(nop, []api.ValueType{i32, i32}, []api.ValueType{i32}).Export("reply_read").
				Instantiate(ctx)
			if err != nil {
				b.Fatal(err)
			}
			wasm, err := os.ReadFile(testenv.Path(g.path))
			if err != nil {
				b.Fatal(err)
			}
			compiled, err := rt.CompileModule(ctx, wasm)
			if err != nil {
				b.Fatal(err)
			}
			cfg := wazero.NewModuleConfig().WithName("").WithStartFunctions("_initialize")
			lat := newLatencies(b)
			for b.Loop() {
				start := time.Now()
				mod, err := rt.InstantiateModule(ctx, compiled, cfg)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := mod.ExportedFunction("mcpwh_call").Call(ctx); err != nil {
					b.Fatal(err)
				}
				mod.Close(ctx)
				lat.add(time.Since(start))
			}
			lat.report()
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

// nop is a host function that does nothing and returns 0.
var nop = api.GoModuleFunc(func(_ context.Context, _ api.Module, s []uint64) { s[0] = 0 })

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
