package plugins

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// TestParamHeaderAnnotations: x-mcp-header annotations are read at load; a tool that
// breaks a rule refuses its plugin, and the reason names the property.
func TestParamHeaderAnnotations(t *testing.T) {
	manifest := func(schema string) []byte {
		return []byte(`{"tools":[{"name":"t","inputSchema":` + schema + `}]}`)
	}
	for _, tc := range []struct {
		name    string
		schema  string
		want    []ParamHeader
		wantErr string
	}{
		{name: "none", schema: `{"type":"object","properties":{"a":{"type":"string"}}}`},
		{name: "three types", schema: `{"type":"object","properties":{
			"region":{"type":"string","x-mcp-header":"Region"},
			"n":{"type":"integer","x-mcp-header":"Count"},
			"dry":{"type":"boolean","x-mcp-header":"Dry-Run"}}}`,
			want: []ParamHeader{{"dry", "Dry-Run", "boolean"}, {"n", "Count", "integer"}, {"region", "Region", "string"}}},
		{name: "a property named x-mcp-header", schema: `{"type":"object","properties":{"x-mcp-header":{"type":"string"}}}`},
		{name: "object property (the badheader plugin)", schema: `{"type":"object","properties":{"a":{"type":"object","x-mcp-header":"X-A"}}}`,
			wantErr: `property "a": x-mcp-header needs "type" to be "string", "integer" or "boolean", not "object"`},
		{name: "number", schema: `{"type":"object","properties":{"a":{"type":"number","x-mcp-header":"A"}}}`,
			wantErr: `property "a": x-mcp-header needs "type" to be "string", "integer" or "boolean", not "number"`},
		{name: "type list", schema: `{"type":"object","properties":{"a":{"type":["string","null"],"x-mcp-header":"A"}}}`,
			wantErr: `property "a": x-mcp-header needs "type" to be "string", "integer" or "boolean", not ["string","null"]`},
		{name: "no type", schema: `{"type":"object","properties":{"a":{"x-mcp-header":"A"}}}`,
			wantErr: `property "a": x-mcp-header needs "type" to be "string", "integer" or "boolean", not null`},
		{name: "empty", schema: `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":""}}}`,
			wantErr: `property "a": x-mcp-header must be a non-empty string, not ""`},
		{name: "not a string", schema: `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":7}}}`,
			wantErr: `property "a": x-mcp-header must be a non-empty string, not 7`},
		{name: "CR LF", schema: `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A\r\nX-Evil: 1"}}}`,
			wantErr: `property "a": x-mcp-header "A\r\nX-Evil: 1": byte 1 (0x0d) is not allowed in an HTTP header name`},
		{name: "blank", schema: `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A B"}}}`,
			wantErr: `byte 1 (0x20) is not allowed`},
		{name: "colon", schema: `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A:"}}}`,
			wantErr: `byte 1 (0x3a) is not allowed`},
		{name: "non-ASCII", schema: `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Région"}}}`,
			wantErr: `byte 1 (0xc3) is not allowed`},
		{name: "duplicate ignoring case", schema: `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Region"},"b":{"type":"string","x-mcp-header":"REGION"}}}`,
			wantErr: `property "b": x-mcp-header "REGION" is already the header of property "a" (header names are compared ignoring case)`},
		{name: "nested", schema: `{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"string","x-mcp-header":"B"}}}}}`,
			wantErr: `property "a": x-mcp-header at /properties/a/properties/b/x-mcp-header: only a top-level property may carry it`},
		{name: "in $defs", schema: `{"type":"object","$defs":{"d":{"type":"string","x-mcp-header":"D"}}}`,
			wantErr: `x-mcp-header at /$defs/d/x-mcp-header: only a top-level property may carry it`},
		{name: "in items", schema: `{"type":"object","properties":{"a":{"type":"array","items":{"type":"string","x-mcp-header":"I"}}}}`,
			wantErr: `property "a": x-mcp-header at /properties/a/items/x-mcp-header`},
		{name: "in allOf", schema: `{"type":"object","allOf":[{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}]}`,
			wantErr: `x-mcp-header at /allOf/0/properties/a/x-mcp-header`},
		{name: "on the schema", schema: `{"type":"object","x-mcp-header":"S"}`,
			wantErr: `x-mcp-header is on the schema itself`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tools, err := parseManifest(&Plugin{Name: "p"}, manifest(tc.schema))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseManifest = %v, want an error containing %q", err, tc.wantErr)
				}
				if !strings.Contains(err.Error(), `tools[0] ("t"): inputSchema: `) {
					t.Errorf("error %q does not name the tool", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := tools[0].ParamHeaders(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParamHeaders() = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// FuzzParamHeaders: the annotations are hostile bytes; checking them never panics,
// and what passes keeps every rule.
func FuzzParamHeaders(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A"}}}`,
		`{"type":"object","properties":{"a":{"type":"integer","x-mcp-header":"A"},"b":{"type":"boolean","x-mcp-header":"a"}}}`,
		`{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"x-mcp-header":"B"}}}}}`,
		`{"x-mcp-header":1}`, `[]`, `{"properties":[]}`, `{"properties":{"a":[{"x-mcp-header":"x"}]}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, schema string) {
		if !json.Valid([]byte(schema)) {
			return
		}
		doc := []byte(fmt.Sprintf(`{"tools":[{"name":"t","inputSchema":%s}]}`, schema))
		tools, err := parseManifest(&Plugin{Name: "p"}, doc)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, h := range tools[0].ParamHeaders() {
			lower := strings.ToLower(h.Name)
			if h.Name == "" || seen[lower] || strings.ContainsAny(h.Name, "\r\n \t:") {
				t.Fatalf("accepted header %+v of %s", h, schema)
			}
			if h.Type != "string" && h.Type != "integer" && h.Type != "boolean" {
				t.Fatalf("accepted type %q of %s", h.Type, schema)
			}
			seen[lower] = true
		}
	})
}
