package plugins

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkCheckWork measures jsonschema-go's Validate (ns/op) beside the work the
// cost model estimates for it (work/op, about a nanosecond each) for shapes that are cheap, costly and pathological. Check
// refuses those over MaxCheckWork; they are validated here to calibrate the model:
//
//	go test ./plugins -run NONE -bench CheckWork -benchtime 3x
func BenchmarkCheckWork(b *testing.B) {
	chain := func(n int) string {
		var defs []string
		for i := range n {
			defs = append(defs, fmt.Sprintf(`"d%d":{"$ref":"#/$defs/d%d"}`, i, i+1))
		}
		defs = append(defs, fmt.Sprintf(`"d%d":{"type":"number"}`, n))
		return `{"type":"object","properties":{"x":{"$ref":"#/$defs/d0"}},"$defs":{` + strings.Join(defs, ",") + `}}`
	}
	arr := func(n int) string { return "[" + strings.TrimSuffix(strings.Repeat("1,", n), ",") + "]" }
	wide := func(n int) string {
		return `{"type":"object","anyOf":[` + strings.TrimSuffix(strings.Repeat(`{"type":"string"},`, n), ",") + `]}`
	}
	cases := []struct{ name, schema, value string }{
		{"bomb10 invalid", refBomb(10), `{"x":1}`},
		{"bomb10 valid", refBomb(10), `{"x":"a"}`},
		{"bomb11 invalid", refBomb(11), `{"x":1}`},
		{"chain1000 invalid 10KB", chain(1000), `{"x":"` + strings.Repeat("a", 10000) + `"}`},
		{"chain1000 invalid small", chain(1000), `{"x":"a"}`},
		{"chain100 invalid 100KB", chain(100), `{"x":"` + strings.Repeat("a", 100000) + `"}`},
		{"array 200k valid", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"number"}}}}`, `{"a":` + arr(200000) + `}`},
		{"array 200k invalid", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"}}}}`, `{"a":` + arr(200000) + `}`},
		{"wide500 20KB", wide(500), `{"a":` + arr(10000) + `}`},
		{"wide100 100KB", wide(100), `{"a":` + arr(50000) + `}`},
		{"string 1MB", `{"type":"object","properties":{"s":{"type":"string","pattern":"^[a-z]*$"}},"required":["s"]}`, `{"s":"` + strings.Repeat("a", 1<<20) + `"}`},
		{"tree", tree, nested(30, false)},
		{"union 12", union, nested(12, true)},
		{"union 14", union, nested(14, true)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			s, err := compileSchema(json.RawMessage(c.schema))
			if err != nil {
				b.Skipf("refused at load: %v", err)
			}
			var v any
			if err := json.Unmarshal([]byte(c.value), &v); err != nil {
				b.Fatal(err)
			}
			w, err := s.estimate(v)
			if err != nil {
				b.Skipf("refused: %v", err)
			}
			msg := 0
			for b.Loop() {
				if err := s.resolved.Validate(v); err != nil {
					msg = len(err.Error())
				}
			}
			b.ReportMetric(float64(w), "work/op")
			b.ReportMetric(float64(msg), "error-bytes")
		})
	}
}
