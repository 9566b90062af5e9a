package plugins

import (
	"encoding/json"
	"testing"
)

// FuzzParseManifest: a guest's manifest is hostile bytes; parsing never panics.
func FuzzParseManifest(f *testing.F) {
	for _, s := range []string{
		`{"tools":[{"name":"a","inputSchema":{"type":"object"}}]}`,
		`{"tools":[{"name":"a","inputSchema":{"type":"object","properties":{"x":{"$ref":"#/$defs/y"}},"$defs":{"y":{"type":"string"}}}}]}`,
		`{"tools":[{"name":"a","inputSchema":{"type":"object"},"outputSchema":{"type":"object"},"annotations":{},"execution":{"taskSupport":"optional"}}]}`,
		`{"tools":null}`, `{}`, `[]`, ``,
		`{"resources":[{"uri":"test://a","name":"a","annotations":{"priority":1}}],"resourceTemplates":[{"uriTemplate":"test://{a}/{+b}","name":"t"}],` +
			`"prompts":[{"name":"p","arguments":[{"name":"x","required":true}]}],"completions":true}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		p := &Plugin{Name: "p"}
		tools, err := parseManifest(p, doc)
		for _, tmpl := range p.Templates {
			tmpl.Match("test://x/y") // a declared template always matches without panicking
		}
		if err == nil {
			for _, tool := range tools {
				if tool.input == nil {
					t.Fatalf("tool %q accepted without a resolved input schema", tool.Name)
				}
			}
		}
	})
}

// FuzzCheckResults: a guest's answer to a method is hostile bytes; checking never
// panics, and what passes is a JSON object.
func FuzzCheckResults(f *testing.F) {
	for _, s := range []string{
		`{"contents":[{"uri":"test://a","text":"x"}]}`,
		`{"messages":[{"role":"user","content":{"type":"image","data":"AA==","mimeType":"image/png"}}]}`,
		`{"completion":{"values":["a"],"total":1}}`, `{}`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		for _, check := range []func([]byte) error{checkReadResult, checkPromptResult, checkCompleteResult} {
			if check(out) == nil && !isObject(out) {
				t.Fatalf("accepted %q, which is not a JSON object", out)
			}
		}
	})
}

// FuzzCompileSchema: a schema is plugin-supplied bytes; compiling and measuring it
// never panics, and an accepted schema checks values within its bounds.
func FuzzCompileSchema(f *testing.F) {
	for _, s := range []string{
		`{"type":"object"}`, refBomb(3), deepSchema(3), tree, union, anyOfN(3),
		`{"type":"object","$ref":"#"}`,
		`{"type":"object","$defs":{"s":{"$anchor":"str","type":"string"}},"properties":{"x":{"$ref":"#str"}}}`,
		`{"type":"object","$dynamicAnchor":"n","properties":{"next":{"$dynamicRef":"#n"}},"patternProperties":{"^a":{"contains":{"not":{}}}}}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","items":[{"type":"string"}],"additionalItems":{"$ref":"#"}}`,
	} {
		f.Add([]byte(s), []byte(`{"x":1,"root":{"value":1,"children":[]}}`))
	}
	f.Fuzz(func(t *testing.T, schema, value []byte) {
		s, err := compileSchema(schema)
		if err != nil {
			return
		}
		if s.perDepth[0].evals == 0 || s.perDepth[0].evals > MaxAmplification {
			t.Fatalf("accepted a schema applying %d evaluations to the value", s.perDepth[0].evals)
		}
		var v any
		if json.Unmarshal(value, &v) != nil {
			return
		}
		if err := s.Check(v); err != nil && len(err.Error()) > MaxErrorBytes+100 {
			t.Fatalf("Check error of %d bytes", len(err.Error()))
		}
	})
}
