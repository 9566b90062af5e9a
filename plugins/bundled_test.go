package plugins_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
)

// bundled are the plugins in the repository whose schemas must keep loading under the
// schema bounds.
var bundled = map[string]string{
	"toolbox":  "plugins/toolbox/toolbox.wasm",
	"textkit":  "plugins/textkit/textkit.wasm",
	"web":      "plugins/web/web.wasm",
	"jobs":     "plugins/jobs/jobs.wasm",
	"fixture":  "conformance/fixture/fixture.wasm",
	"taskfix":  "conformance/taskfix/taskfix.wasm",
	"library":  "testdata/wasm/library.wasm",
	"asker":    "testdata/wasm/asker.wasm",
	"echo":     "testdata/wasm/echo.wasm",
	"stateful": "testdata/wasm/stateful.wasm",
}

func TestBundledSchemasLoad(t *testing.T) {
	e := testenv.Engine(t)
	for name, rel := range bundled {
		t.Run(name, func(t *testing.T) {
			p := testenv.Load(t, e, testenv.Spec(t, name, rel))
			if len(p.Tools) == 0 {
				t.Errorf("%s offers no tools", name)
			}
		})
	}
}

// BenchmarkCheckArguments checks the bundled plugins' typical and largest arguments:
// "check" is CheckArguments (the fast path where the schema is on it), "full" the
// check without it (decode, canonical form, Schema.Check: what CheckArguments did
// before), "validate" what a call cost before the schema bounds (decode and Validate).
//
//	go test ./plugins -run NONE -bench 'CheckArguments|CheckStructured' -benchtime 20000x -count 6
func BenchmarkCheckArguments(b *testing.B) {
	c := bundledCatalog(b)
	big := strings.Repeat("lorem ipsum ", (1<<20-64)/12)
	for _, bc := range []struct{ name, tool, args string }{
		{"sha256 small", "textkit_sha256", `{"text":"abc"}`},
		{"sha256 1KiB", "textkit_sha256", `{"text":"` + big[:1024] + `"}`},
		{"sha256 1MiB", "textkit_sha256", `{"text":"` + big + `"}`},
		{"ping", "textkit_ping", `{}`},
		{"go json_format", "toolbox_json_format", `{"json":"{\"a\":[1,2,{\"b\":null}]}","indent":2}`},
		{"go slow_count", "toolbox_slow_count", `{"to":10,"delay_ms":5}`},
		{"fixture 2020-12 schema (off the fast path)", "fixture_json_schema_2020_12_tool", `{"name":"a","address":{"street":"s","city":"c"}}`},
	} {
		tool, ok := c.Lookup(bc.tool)
		if !ok {
			b.Fatalf("no tool %s", bc.tool)
		}
		b.Run(bc.name+"/check", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := tool.CheckArguments(context.Background(), json.RawMessage(bc.args)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bc.name+"/full", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := plugins.FullCheckArguments(tool, json.RawMessage(bc.args)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bc.name+"/validate", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var v any
				if err := json.Unmarshal([]byte(bc.args), &v); err != nil {
					b.Fatal(err)
				}
				if err := plugins.ValidateOnly(tool, v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCheckStructured checks the structuredContent of textkit's results against
// their output schemas: "check" as Call does (the fast path), "full" without it
// (decode and Schema.Check, as before).
func BenchmarkCheckStructured(b *testing.B) {
	c := bundledCatalog(b)
	for _, bc := range []struct{ name, tool, out string }{
		{"stats", "textkit_stats", `{"bytes":11,"chars":11,"words":2,"lines":1}`},
		{"sha256", "textkit_sha256", `{"sha256":"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}`},
	} {
		tool, ok := c.Lookup(bc.tool)
		if !ok {
			b.Fatalf("no tool %s", bc.tool)
		}
		for _, path := range []struct {
			name  string
			check func(*plugins.Tool, json.RawMessage) error
		}{{"check", plugins.CheckStructured}, {"full", plugins.FullCheckStructured}} {
			b.Run(bc.name+"/"+path.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := path.check(tool, json.RawMessage(bc.out)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func bundledCatalog(b *testing.B) *plugins.Catalog {
	e := testenv.Engine(b)
	var ps []*plugins.Plugin
	for _, name := range []string{"textkit", "toolbox", "fixture"} {
		ps = append(ps, testenv.Load(b, e, testenv.Spec(b, name, bundled[name])))
	}
	c, err := plugins.NewCatalog(ps)
	if err != nil {
		b.Fatal(err)
	}
	return c
}
