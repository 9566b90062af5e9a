package plugins

import (
	"context"
	"encoding/json"
)

// ValidateOnly runs jsonschema-go's Validate against t's input schema, without the
// work bound: what CheckArguments did before the bound, for benchmarks.
func ValidateOnly(t *Tool, v any) error { return t.input.resolved.Validate(v) }

// FullCheckArguments is the check of arguments without the fast path (fastcheck.go),
// as CheckArguments did it before: decode, canonical form, Schema.Check.
func FullCheckArguments(t *Tool, args json.RawMessage) error {
	return fullCheckArguments(t.input, args)
}

// CheckStructured checks structuredContent against t's output schema as Call does;
// FullCheckStructured without the fast path.
func CheckStructured(t *Tool, sc json.RawMessage) error {
	return checkStructured(context.Background(), t.output, sc)
}

func FullCheckStructured(t *Tool, sc json.RawMessage) error {
	return fullCheckStructured(context.Background(), t.output, sc)
}
