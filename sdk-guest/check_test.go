package guest_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	guest "github.com/mcp-wasmhost/mcp-wasmhost/sdk-guest"
)

type orderArgs struct {
	Item  string   `json:"item"`
	Count int      `json:"count,omitempty"`
	Tags  []string `json:"tags,omitempty"`
	Mode  string   `json:"mode,omitempty"`
}

var orderRuns int

func init() {
	guest.Add(guest.Tool{Name: "order", InputSchema: json.RawMessage(`{
		"type": "object",
		"properties": {
			"item": {"type": "string", "minLength": 2, "pattern": "^[a-z]+$"},
			"count": {"type": "integer", "minimum": 1, "maximum": 10},
			"tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2, "uniqueItems": true},
			"mode": {"enum": ["fast", "slow"]}
		},
		"required": ["item"],
		"additionalProperties": false
	}`)}, func(c *guest.Call, in orderArgs) (*guest.Result, error) {
		orderRuns++
		return guest.Text("ordered " + in.Item), nil
	})
	guest.Add(guest.Tool{Name: "refs", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"string"}}}`)},
		func(c *guest.Call, in map[string]any) (*guest.Result, error) { return guest.Text("ran"), nil })
}

// TestCallToolChecksArguments: arguments the server's schema check refuses never
// reach the tool under TestHost either; each gets -32602 naming the rule it breaks.
func TestCallToolChecksArguments(t *testing.T) {
	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"wrong type", map[string]any{"item": 5}, `/properties/item: type: 5 has type "integer", want "string"`},
		{"missing required", map[string]any{}, `required: missing property "item"`},
		{"additional property", map[string]any{"item": "tea", "colour": "red"}, `unexpected additional property "colour"`},
		{"too short", map[string]any{"item": "t"}, "minLength"},
		{"pattern", map[string]any{"item": "Tea"}, "pattern"},
		{"not an integer", map[string]any{"item": "tea", "count": 1.5}, `/properties/count: type: 1.5 has type "number", want "integer"`},
		{"above maximum", map[string]any{"item": "tea", "count": 11}, "maximum: 11 is greater than 10"},
		{"item of the wrong type", map[string]any{"item": "tea", "tags": []any{"a", 1}}, "item 1: validating /properties/tags/items: type"},
		{"duplicate items", map[string]any{"item": "tea", "tags": []any{"a", "a"}}, "uniqueItems"},
		{"not in enum", map[string]any{"item": "tea", "mode": "medium"}, "enum"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := orderRuns
			_, err := guest.CallTool(nil, "order", tc.args)
			var perr *guest.ProtocolError
			if !errors.As(err, &perr) || perr.Code != -32602 || !strings.Contains(perr.Message, tc.want) {
				t.Errorf("CallTool(order, %v) = %v; want a -32602 ProtocolError containing %q", tc.args, err, tc.want)
			}
			if orderRuns != before {
				t.Errorf("the tool ran with arguments its schema refuses")
			}
		})
	}
	r, err := guest.CallTool(nil, "order", map[string]any{"item": "tea", "count": 3, "tags": []string{"a", "b"}, "mode": "fast"})
	if err != nil || r.Content[0].Text != "ordered tea" {
		t.Errorf("CallTool(order) with good arguments = %+v, %v", r, err)
	}
	_, err = guest.CallTool(nil, "refs", map[string]any{"a": "x"})
	if !errors.Is(err, guest.ErrUncheckedKeyword) || !strings.Contains(err.Error(), "mcp-wasmhost call") || !strings.Contains(err.Error(), "is not checked by guest.TestHost") {
		t.Errorf("CallTool(refs) = %v; want ErrUncheckedKeyword pointing to mcp-wasmhost call", err)
	}
}

// TestCheckArguments covers what CallTool's tools do not: boolean schemas, type
// lists, the logic keywords and numbers compared by value.
func TestCheckArguments(t *testing.T) {
	for _, tc := range []struct {
		schema, args string
		ok           bool
	}{
		{`{"type":"object"}`, `{}`, true},
		{`{"type":"object"}`, `[]`, false},
		{`{"properties":{"a":false}}`, `{"a":1}`, false},
		{`{"properties":{"a":true}}`, `{"a":1}`, true},
		{`{"properties":{"a":{"type":["string","null"]}}}`, `{"a":null}`, true},
		{`{"properties":{"a":{"type":["string","null"]}}}`, `{"a":1}`, false},
		{`{"properties":{"a":{"type":"number"}}}`, `{"a":1}`, true},
		{`{"properties":{"a":{"const":1}}}`, `{"a":1.0}`, true},
		{`{"properties":{"a":{"enum":[[1,{"b":2}]]}}}`, `{"a":[1,{"b":2.0}]}`, true},
		{`{"properties":{"a":{"anyOf":[{"type":"string"},{"minimum":3}]}}}`, `{"a":2}`, false},
		{`{"properties":{"a":{"oneOf":[{"type":"integer"},{"minimum":3}]}}}`, `{"a":4}`, false},
		{`{"properties":{"a":{"not":{"type":"string"}}}}`, `{"a":"s"}`, false},
		{`{"properties":{"a":{"allOf":[{"minimum":1},{"multipleOf":2}]}}}`, `{"a":4}`, true},
		{`{"properties":{"a":{"exclusiveMaximum":4}}}`, `{"a":4}`, false},
		{`{"additionalProperties":{"type":"integer"}}`, `{"x":1,"y":"z"}`, false},
		{`{"minProperties":2}`, `{"x":1}`, false},
		{`{"properties":{"s":{"maxLength":2}}}`, `{"s":"äö"}`, true},
	} {
		err := guest.CheckArguments(json.RawMessage(tc.schema), json.RawMessage(tc.args))
		if (err == nil) != tc.ok {
			t.Errorf("CheckArguments(%s, %s) = %v, want ok %v", tc.schema, tc.args, err, tc.ok)
		}
	}
}
