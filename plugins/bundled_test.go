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
// "validate" is what a call cost before the schema bounds (decode and Validate),
// "check" what it costs now (CheckArguments: the same, after measuring the work).
func BenchmarkCheckArguments(b *testing.B) {
	e := testenv.Engine(b)
	tk := testenv.Load(b, e, testenv.Spec(b, "textkit", "plugins/textkit/textkit.wasm"))
	fx := testenv.Load(b, e, testenv.Spec(b, "fixture", "conformance/fixture/fixture.wasm"))
	c, err := plugins.NewCatalog([]*plugins.Plugin{tk, fx})
	if err != nil {
		b.Fatal(err)
	}
	big := strings.Repeat("lorem ipsum ", (1<<20-64)/12)
	for _, bc := range []struct{ name, tool, args string }{
		{"sha256 small", "textkit_sha256", `{"text":"abc"}`},
		{"sha256 1MiB", "textkit_sha256", `{"text":"` + big + `"}`},
		{"fixture 2020-12 schema", "fixture_json_schema_2020_12_tool", `{"name":"a","address":{"street":"s","city":"c"}}`},
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
