package plugins

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// refBomb is a schema whose property x is n definitions, each an anyOf of two $refs
// to the next: checking {"x":1} against it explores 2^n paths.
func refBomb(n int) string {
	var defs []string
	for i := range n {
		defs = append(defs, fmt.Sprintf(`"d%d":{"anyOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}`, i, i+1, i+1))
	}
	defs = append(defs, fmt.Sprintf(`"d%d":{"type":"string"}`, n))
	return `{"type":"object","properties":{"x":{"$ref":"#/$defs/d0"}},"$defs":{` + strings.Join(defs, ",") + `}}`
}

// deepSchema nests n levels of properties (2n+1 JSON levels).
func deepSchema(n int) string {
	return `{"type":"object"` + strings.Repeat(`,"properties":{"a":{"type":"object"`, n) + strings.Repeat("}}", n) + "}"
}

// manyRefs has n properties, each a $ref.
func manyRefs(n int) string {
	var props []string
	for i := range n {
		props = append(props, fmt.Sprintf(`"p%d":{"$ref":"#/$defs/s"}`, i))
	}
	return `{"type":"object","$defs":{"s":{"type":"string"}},"properties":{` + strings.Join(props, ",") + `}}`
}

func anyOfN(n int) string {
	return `{"type":"object","anyOf":[` + strings.TrimSuffix(strings.Repeat(`{"required":["a"]},`, n), ",") + `]}`
}

const tree = `{"type":"object","$defs":{"node":{"type":"object","properties":{"value":{"type":"number"},` +
	`"children":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["value"]}},` +
	`"properties":{"root":{"$ref":"#/$defs/node"}}}`

// union is a recursive discriminated union whose two variants both descend into
// "children": the work doubles with every level of the value.
const union = `{"type":"object","$defs":{"node":{"oneOf":[` +
	`{"type":"object","properties":{"kind":{"const":"a"},"children":{"type":"array","items":{"$ref":"#/$defs/node"}}}},` +
	`{"type":"object","properties":{"kind":{"const":"b"},"children":{"type":"array","items":{"$ref":"#/$defs/node"}}}}]}},` +
	`"properties":{"root":{"$ref":"#/$defs/node"}}}`

// nested returns a value of n nested nodes of a tree (or union, with kind).
func nested(n int, kind bool) string {
	k := ""
	if kind {
		k = `"kind":"a",`
	}
	return `{"root":` + strings.Repeat(`{`+k+`"value":1,"children":[`, n) + strings.Repeat("]}", n) + "}"
}

func TestCompileSchemaBounds(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		want   string // "" means it loads
	}{
		{"2^40 $ref bomb", refBomb(40), "MaxAmplification"},
		{"2^16 $ref bomb", refBomb(16), "MaxAmplification"},
		{"2^11 $ref bomb", refBomb(11), "MaxAmplification"},
		{"2^10 $ref bomb is within the bound", refBomb(10), ""},
		{"deep schema (1,000 levels)", deepSchema(1000), "MaxSchemaDepth"},
		{"deep schema (64 levels)", deepSchema(64), "MaxSchemaDepth"},
		{"deep schema (63 levels)", deepSchema(63), ""},
		{"deep schema in a string does not count", `{"type":"object","description":"` + strings.Repeat("[{", 1000) + `"}`, ""},
		{"huge schema", `{"type":"object","description":"` + strings.Repeat("x", MaxSchemaBytes) + `"}`, "MaxSchemaBytes"},
		{"too many $refs", manyRefs(MaxSchemaRefs + 1), "MaxSchemaRefs"},
		{"many $refs", manyRefs(MaxSchemaRefs), ""},
		{"anyOf fan-out", anyOfN(MaxSchemaFanOut + 1), "MaxSchemaFanOut"},
		{"anyOf of 512", anyOfN(MaxSchemaFanOut), ""},
		{"self $ref", `{"type":"object","$ref":"#"}`, "never descends"},
		{"in-place cycle", `{"type":"object","$defs":{"a":{"allOf":[{"$ref":"#/$defs/b"}]},"b":{"not":{"$ref":"#/$defs/a"}}},"properties":{"x":{"$ref":"#/$defs/a"}}}`,
			"/$defs/a -> /$defs/a/allOf/0 -> /$defs/b -> /$defs/b/not -> /$defs/a"},
		{"if/then cycle", `{"type":"object","$defs":{"a":{"if":{"$ref":"#/$defs/a"}}}}`, "never descends"},
		{"nested $id", `{"type":"object","properties":{"x":{"$id":"https://example.com/x","type":"string"}}}`, "$id is allowed only at the root"},
		{"recursive tree", tree, ""},
		{"recursive union", union, ""},
		{"anchor", `{"type":"object","$defs":{"s":{"$anchor":"str","type":"string"}},"properties":{"x":{"$ref":"#str"}}}`, ""},
		{"root $id", `{"$id":"https://example.com/s","type":"object","$defs":{"s":{"type":"string"}},"properties":{"x":{"$ref":"https://example.com/s#/$defs/s"},"y":{"$ref":"s#/$defs/s"}}}`, ""},
		{"escaped pointer", `{"type":"object","$defs":{"a/b~c d":{"type":"string"}},"properties":{"x":{"$ref":"#/$defs/a~1b~0c%20d"}}}`, ""},
		{"draft 7", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","definitions":{"s":{"type":"string"}},"properties":{"x":{"$ref":"#/definitions/s"}},"dependencies":{"x":{"required":["y"]}}}`, ""},
		{"$dynamicRef", `{"type":"object","$dynamicAnchor":"node","properties":{"next":{"$dynamicRef":"#node"}}}`, ""},
		{"not an object", `{"type":"string"}`, `type must be "object"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := compileSchema(json.RawMessage(tt.schema))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("compileSchema = %v, want it to load", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("compileSchema = %v, want an error containing %q", err, tt.want)
			}
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("compileSchema took %v", took)
			}
		})
	}
}

func mustCompile(t *testing.T, schema string) *Schema {
	t.Helper()
	s, err := compileSchema(json.RawMessage(schema))
	if err != nil {
		t.Fatalf("compileSchema(%.80s) = %v", schema, err)
	}
	return s
}

func TestSchemaCheck(t *testing.T) {
	bigArray := "[" + strings.TrimSuffix(strings.Repeat("1,", 50_000), ",") + "]"
	wide := `{"type":"object","anyOf":[` + strings.TrimSuffix(strings.Repeat(`{"type":"string"},`, 500), ",") + `]}`
	tests := []struct {
		name   string
		schema string
		value  string
		want   string // "" means valid
	}{
		{"tree", tree, nested(10, false), ""},
		{"tree, invalid", tree, `{"root":{"value":1,"children":[{"value":"x"}]}}`, `want "number"`},
		{"tree, too deep", tree, nested(40, false), "MaxValueDepth"},
		{"union, shallow", union, nested(3, true), ""},
		{"union, deep: refused before it starts", union, nested(30, true), "MaxCheckWork"},
		{"2^10 bomb", refBomb(10), `{"x":"a"}`, ""},
		{"2^10 bomb, invalid: the message is cut", refBomb(10), `{"x":1}`, "(cut: "},
		{"large array", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"number"}}}}`, `{"a":` + bigArray + `}`, ""},
		{"wide anyOf against a large value", wide, `{"a":` + bigArray + `}`, "MaxCheckWork"},
		{"wide anyOf against a small value", wide, `{"a":1}`, "anyOf"},
		{"deep value", `{"type":"object"}`, `{"a":` + strings.Repeat("[", 65) + strings.Repeat("]", 65) + `}`, "MaxValueDepth"},
		{"value of 64 levels", `{"type":"object"}`, `{"a":` + strings.Repeat("[", 63) + strings.Repeat("]", 63) + `}`, ""},
		{"anchor", `{"type":"object","$defs":{"s":{"$anchor":"str","type":"string"}},"properties":{"x":{"$ref":"#str"}}}`, `{"x":1}`, `want "string"`},
		{"escaped pointer", `{"type":"object","$defs":{"a/b~c d":{"type":"string"}},"properties":{"x":{"$ref":"#/$defs/a~1b~0c%20d"}}}`, `{"x":1}`, `want "string"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustCompile(t, tt.schema)
			var v any
			if err := json.Unmarshal([]byte(tt.value), &v); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			err := s.Check(v)
			took := time.Since(start)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Check = %.300v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Check = %.300v, want an error containing %q", err, tt.want)
			}
			if err != nil && len(err.Error()) > MaxErrorBytes+200 {
				t.Errorf("Check error is %d bytes long, want at most about %d", len(err.Error()), MaxErrorBytes)
			}
			if took > 10*time.Second {
				t.Errorf("Check took %v", took)
			}
			t.Logf("Check took %v", took)
		})
	}
}

// TestSchemaFieldsKnown fails when jsonschema-go grows a subschema keyword that the
// graph (newGraph) does not follow: its work would go uncounted.
func TestSchemaFieldsKnown(t *testing.T) {
	known := map[string]bool{
		"Defs": true, "Definitions": true, "DependencySchemas": true, "PrefixItems": true, "Items": true,
		"ItemsArray": true, "AdditionalItems": true, "Contains": true, "UnevaluatedItems": true,
		"Properties": true, "PatternProperties": true, "AdditionalProperties": true, "PropertyNames": true,
		"UnevaluatedProperties": true, "AllOf": true, "AnyOf": true, "OneOf": true, "Not": true, "If": true,
		"Then": true, "Else": true, "DependentSchemas": true, "ContentSchema": true,
	}
	schemaType := reflect.TypeFor[*jsonschema.Schema]()
	for _, f := range reflect.VisibleFields(reflect.TypeFor[jsonschema.Schema]()) {
		holds := f.Type == schemaType || f.Type.Kind() == reflect.Slice && f.Type.Elem() == schemaType ||
			f.Type.Kind() == reflect.Map && f.Type.Elem() == schemaType
		if holds && !known[f.Name] {
			t.Errorf("jsonschema.Schema.%s holds subschemas that newGraph does not follow", f.Name)
		}
	}
}

// TestManifestRefusesPathologicalSchemas: the refusal names the tool and the bound.
func TestManifestRefusesPathologicalSchemas(t *testing.T) {
	for name, schema := range map[string]string{"MaxAmplification": refBomb(40), "MaxSchemaDepth": deepSchema(1000)} {
		for _, field := range []string{"inputSchema", "outputSchema"} {
			doc := fmt.Sprintf(`{"tools":[{"name":"ok","inputSchema":{"type":"object"}},{"name":"bad","inputSchema":{"type":"object"},%q:%s}]}`, field, schema)
			if field == "inputSchema" {
				doc = fmt.Sprintf(`{"tools":[{"name":"ok","inputSchema":{"type":"object"}},{"name":"bad","inputSchema":%s}]}`, schema)
			}
			_, err := parseManifest(&Plugin{Name: "p"}, []byte(doc))
			want := `tools[1] ("bad"): ` + field + ": "
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), name) {
				t.Errorf("parseManifest(%s %s) = %.300v, want an error containing %q and %q", field, name, err, want, name)
			}
		}
	}
}
