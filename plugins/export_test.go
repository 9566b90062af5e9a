package plugins

// ValidateOnly runs jsonschema-go's Validate against t's input schema, without the
// work bound: what CheckArguments did before the bound, for benchmarks.
func ValidateOnly(t *Tool, v any) error { return t.input.resolved.Validate(v) }
