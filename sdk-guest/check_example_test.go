package guest_test

import (
	"encoding/json"
	"fmt"

	guest "github.com/mcp-wasmhost/mcp-wasmhost/sdk-guest"
)

// CheckArguments gives the server's answer for arguments against an input schema;
// CallTool applies it before a tool runs.
func ExampleCheckArguments() {
	schema := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"]}`)
	for _, args := range []string{`{"n":3}`, `{"n":0}`, `{}`} {
		fmt.Println(args, guest.CheckArguments(schema, json.RawMessage(args)))
	}
	// Output:
	// {"n":3} <nil>
	// {"n":0} validating /properties/n: minimum: 0 is less than 1
	// {} validating root: required: missing property "n"
}
