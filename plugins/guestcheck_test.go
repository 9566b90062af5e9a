package plugins_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	guest "github.com/mcp-wasmhost/mcp-wasmhost/sdk-guest"
)

// serverAccepts is the server's answer for arguments against an input schema
// (jsonschema-go, as Schema.Check runs it); ok is false where the server would not
// load the schema at all.
func serverAccepts(schema, args string) (accepts, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(schema), &s); err != nil {
		return false, false
	}
	r, err := s.Resolve(nil)
	if err != nil {
		return false, false
	}
	var v any
	if err := json.Unmarshal([]byte(args), &v); err != nil {
		return false, true
	}
	if _, isObject := v.(map[string]any); !isObject {
		return false, true
	}
	return r.Validate(v) == nil, true
}

// agree compares guest.CheckArguments (guest.TestHost's check) with the server's.
func agree(t *testing.T, schema, args string) {
	t.Helper()
	want, ok := serverAccepts(schema, args)
	if !ok {
		return
	}
	err := guest.CheckArguments(json.RawMessage(schema), json.RawMessage(args))
	if errors.Is(err, guest.ErrUncheckedKeyword) {
		return
	}
	if got := err == nil; got != want {
		t.Errorf("schema %s, arguments %s: TestHost accepts %v (%v), the server %v", schema, args, got, err, want)
	}
}

var agreementCases = []struct{ schema, args string }{
	{`{"type":"object"}`, `{}`},
	{`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, `{"a":"x"}`},
	{`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, `{"a":1}`},
	{`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, `{}`},
	{`{"type":"object","properties":{"a":{"type":"integer"}}}`, `{"a":1.0}`},
	{`{"type":"object","properties":{"a":{"type":"integer"}}}`, `{"a":1.5}`},
	{`{"type":"object","properties":{"a":{"type":"number","minimum":0,"maximum":1}}}`, `{"a":1}`},
	{`{"type":"object","properties":{"a":{"exclusiveMinimum":0}}}`, `{"a":0}`},
	{`{"type":"object","properties":{"a":{"multipleOf":0.1}}}`, `{"a":0.3}`},
	{`{"type":"object","properties":{"a":{"multipleOf":3}}}`, `{"a":9}`},
	{`{"type":"object","properties":{"a":{"minLength":2,"maxLength":3}}}`, `{"a":"äöü"}`},
	{`{"type":"object","properties":{"a":{"pattern":"^x+$"}}}`, `{"a":"xxy"}`},
	{`{"type":"object","properties":{"a":{"pattern":"x"}}}`, `{"a":5}`},
	{`{"type":"object","properties":{"a":{"enum":["x",1,null,[1]]}}}`, `{"a":[1.0]}`},
	{`{"type":"object","properties":{"a":{"const":{"b":[true]}}}}`, `{"a":{"b":[true]}}`},
	{`{"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":2}}}`, `{"a":[1,2,3]}`},
	{`{"type":"object","properties":{"a":{"type":"array","uniqueItems":true}}}`, `{"a":[1,1.0]}`},
	{`{"type":"object","properties":{"a":{"type":"array","uniqueItems":true}}}`, `{"a":[{"x":1},{"x":2}]}`},
	{`{"type":"object","additionalProperties":false,"properties":{"a":{}}}`, `{"a":1,"b":2}`},
	{`{"type":"object","additionalProperties":{"type":"boolean"}}`, `{"a":true,"b":"no"}`},
	{`{"type":"object","minProperties":1,"maxProperties":1}`, `{"a":1,"b":2}`},
	{`{"type":"object","properties":{"a":{"anyOf":[{"type":"string"},{"type":"null"}]}}}`, `{"a":null}`},
	{`{"type":"object","properties":{"a":{"oneOf":[{"minimum":1},{"maximum":5}]}}}`, `{"a":3}`},
	{`{"type":"object","properties":{"a":{"allOf":[{"minimum":1},{"maximum":5}]}}}`, `{"a":6}`},
	{`{"type":"object","properties":{"a":{"not":{"type":"null"}}}}`, `{"a":null}`},
	{`{"type":"object","properties":{"a":{"type":["string","integer"]}}}`, `{"a":2}`},
	{`{"type":"object","properties":{"a":false}}`, `{"a":0}`},
	{`{"type":"object","properties":{"a":{"format":"email"}}}`, `{"a":"not an email"}`},
	{`{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"X-A"}}}`, `{"a":"v"}`},
	{`{"type":"object","properties":{"a":{"$ref":"#/$defs/b"}},"$defs":{"b":{"type":"string"}}}`, `{"a":1}`},
}

// TestGuestCheckAgrees: guest.TestHost accepts exactly the arguments the server
// accepts, for every keyword it checks.
func TestGuestCheckAgrees(t *testing.T) {
	for _, c := range agreementCases {
		agree(t, c.schema, c.args)
	}
}

// FuzzGuestCheckAgrees: over any schema the server loads and any arguments,
// guest.TestHost's check and the server's give the same answer, or TestHost says it
// cannot check the schema.
func FuzzGuestCheckAgrees(f *testing.F) {
	for _, c := range agreementCases {
		f.Add(c.schema, c.args)
	}
	f.Fuzz(func(t *testing.T, schema, args string) {
		if len(schema) > 4096 || len(args) > 4096 {
			return
		}
		agree(t, schema, args)
	})
}
