//go:build !wasip1

package guest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// This file is TestHost's argument check: a small JSON Schema (2020-12) validator,
// standard library only and never compiled into a plugin's .wasm, that accepts and
// refuses what the server's validator (github.com/google/jsonschema-go) does for the
// keywords it knows. The server's own tests hold it to jsonschema-go's answers.

// ErrUncheckedKeyword is wrapped by CheckArguments's error for a schema keyword it
// cannot check ($ref, patternProperties, if/then/else...). The server checks them;
// run the plugin with `mcp-wasmhost call` to see its answer.
var ErrUncheckedKeyword = errors.New("not checked by guest.TestHost")

// uncheckedKeywords are keywords the server checks and this validator does not.
var uncheckedKeywords = []string{
	"$ref", "$dynamicRef", "$recursiveRef", "$defs", "definitions", "$anchor", "$dynamicAnchor", "$id",
	"patternProperties", "propertyNames", "dependentRequired", "dependentSchemas", "dependencies",
	"unevaluatedProperties", "unevaluatedItems", "prefixItems", "additionalItems", "contains",
	"minContains", "maxContains", "if", "then", "else",
}

// CheckArguments checks the JSON arguments of a tool call against its input schema as
// the server does before the tool runs: nil if the server would accept them. A schema
// keyword it cannot check gives an error wrapping [ErrUncheckedKeyword]. [CallTool]
// calls it, so a test sees the refusal a client would get (-32602).
func CheckArguments(schema, args json.RawMessage) error {
	var s any
	if err := json.Unmarshal(schema, &s); err != nil {
		return fmt.Errorf("input schema: %w", err)
	}
	if err := unchecked(s, ""); err != nil {
		return err
	}
	var v any // decoded as the server decodes it: numbers are float64
	if err := json.Unmarshal(args, &v); err != nil {
		return fmt.Errorf("arguments: %w", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return errors.New("arguments must be a JSON object")
	}
	return validate(s, v, "")
}

// unchecked finds a keyword this validator cannot check, anywhere in the schema.
func unchecked(s any, path string) error {
	m, ok := s.(map[string]any)
	if !ok {
		if _, isBool := s.(bool); isBool {
			return nil
		}
		return fmt.Errorf("input schema at %q: a schema is an object or a boolean, not %s", path, jsonKind(s))
	}
	for _, k := range uncheckedKeywords {
		if _, ok := m[k]; ok {
			return fmt.Errorf("input schema keyword %q at %q is %w; run the tool with `mcp-wasmhost call PLUGIN.wasm TOOL ARGS` to check its arguments as the server does", k, path+"/"+k, ErrUncheckedKeyword)
		}
	}
	if v, ok := m["$schema"]; ok && v != "https://json-schema.org/draft/2020-12/schema" {
		return fmt.Errorf("input schema $schema %v at %q is %w (only draft 2020-12 is); run the tool with `mcp-wasmhost call`", v, path, ErrUncheckedKeyword)
	}
	for _, k := range []string{"properties"} {
		if props, ok := m[k].(map[string]any); ok {
			for name, sub := range props {
				if err := unchecked(sub, path+"/"+k+"/"+name); err != nil {
					return err
				}
			}
		}
	}
	for _, k := range []string{"items", "additionalProperties", "not"} {
		if sub, ok := m[k]; ok {
			if err := unchecked(sub, path+"/"+k); err != nil {
				return err
			}
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if subs, ok := m[k].([]any); ok {
			for i, sub := range subs {
				if err := unchecked(sub, fmt.Sprintf("%s/%s/%d", path, k, i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func fail(path, format string, args ...any) error {
	if path == "" {
		path = "root"
	}
	return fmt.Errorf("validating %s: %s", path, fmt.Sprintf(format, args...))
}

// validate checks v against schema s; path is the schema's location, for messages.
func validate(s any, v any, path string) error {
	if b, ok := s.(bool); ok {
		if !b {
			return fail(path, "false schema")
		}
		return nil
	}
	m, _ := s.(map[string]any)

	if t, ok := m["type"]; ok {
		got := jsonKind(v)
		var want []string
		switch t := t.(type) {
		case string:
			want = []string{t}
		case []any:
			for _, x := range t {
				if s, ok := x.(string); ok {
					want = append(want, s)
				}
			}
		}
		if !slices.Contains(want, got) && !(got == "integer" && slices.Contains(want, "number")) {
			return fail(path, "type: %v has type %q, want %q", show(v), got, strings.Join(want, ", "))
		}
	}
	if e, ok := m["enum"].([]any); ok && !slices.ContainsFunc(e, func(x any) bool { return equal(x, v) }) {
		return fail(path, "enum: %v does not equal any of %v", show(v), e)
	}
	if c, ok := m["const"]; ok && !equal(c, v) {
		return fail(path, "const: %v does not equal %v", show(v), c)
	}
	if n, ok := number(v); ok {
		if err := checkNumber(m, n, path); err != nil {
			return err
		}
	}
	if str, ok := v.(string); ok {
		n := utf8.RuneCountInString(str)
		if min, ok := intKeyword(m, "minLength"); ok && n < min {
			return fail(path, "minLength: %q has %d code points, fewer than %d", str, n, min)
		}
		if max, ok := intKeyword(m, "maxLength"); ok && n > max {
			return fail(path, "maxLength: %q has %d code points, more than %d", str, n, max)
		}
		if p, ok := m["pattern"].(string); ok && p != "" {
			re, err := regexp.Compile(p)
			if err != nil {
				return fail(path, "pattern %q: %v", p, err)
			}
			if !re.MatchString(str) {
				return fail(path, "pattern: %q does not match %q", str, p)
			}
		}
	}

	if subs, ok := m["allOf"].([]any); ok {
		for i, sub := range subs {
			if err := validate(sub, v, fmt.Sprintf("%s/allOf/%d", path, i)); err != nil {
				return err
			}
		}
	}
	if subs, ok := m["anyOf"].([]any); ok && !slices.ContainsFunc(subs, func(sub any) bool { return validate(sub, v, path) == nil }) {
		return fail(path, "anyOf: %v matches none of the %d schemas", show(v), len(subs))
	}
	if subs, ok := m["oneOf"].([]any); ok {
		n := 0
		for _, sub := range subs {
			if validate(sub, v, path) == nil {
				n++
			}
		}
		if n != 1 {
			return fail(path, "oneOf: %v matches %d of the schemas, want exactly 1", show(v), n)
		}
	}
	if sub, ok := m["not"]; ok && validate(sub, v, path) == nil {
		return fail(path, "not: %v matches the schema", show(v))
	}

	switch v := v.(type) {
	case []any:
		if items, ok := m["items"]; ok {
			for i, item := range v {
				if err := validate(items, item, path+"/items"); err != nil {
					return fmt.Errorf("item %d: %w", i, err)
				}
			}
		}
		if min, ok := intKeyword(m, "minItems"); ok && len(v) < min {
			return fail(path, "minItems: %d items, fewer than %d", len(v), min)
		}
		if max, ok := intKeyword(m, "maxItems"); ok && len(v) > max {
			return fail(path, "maxItems: %d items, more than %d", len(v), max)
		}
		if u, _ := m["uniqueItems"].(bool); u {
			for i := range v {
				for j := i + 1; j < len(v); j++ {
					if equal(v[i], v[j]) {
						return fail(path, "uniqueItems: items %d and %d are equal", i, j)
					}
				}
			}
		}
	case map[string]any:
		props, _ := m["properties"].(map[string]any)
		for _, name := range sortedKeys(props) {
			if val, ok := v[name]; ok {
				if err := validate(props[name], val, path+"/properties/"+name); err != nil {
					return err
				}
			}
		}
		if extra, ok := m["additionalProperties"]; ok {
			for _, name := range sortedKeys(v) {
				if _, declared := props[name]; declared {
					continue
				}
				if b, ok := extra.(bool); ok && !b {
					return fail(path, "unexpected additional property %q", name)
				}
				if err := validate(extra, v[name], path+"/additionalProperties"); err != nil {
					return err
				}
			}
		}
		if min, ok := intKeyword(m, "minProperties"); ok && len(v) < min {
			return fail(path, "minProperties: %d properties, fewer than %d", len(v), min)
		}
		if max, ok := intKeyword(m, "maxProperties"); ok && len(v) > max {
			return fail(path, "maxProperties: %d properties, more than %d", len(v), max)
		}
		if req, ok := m["required"].([]any); ok {
			for _, r := range req {
				if name, ok := r.(string); ok {
					if _, has := v[name]; !has {
						return fail(path, "required: missing property %q", name)
					}
				}
			}
		}
	}
	return nil
}

func checkNumber(m map[string]any, n float64, path string) error {
	if f, ok := floatKeyword(m, "multipleOf"); ok {
		if _, frac := math.Modf(n / f); frac != 0 {
			return fail(path, "multipleOf: %v is not a multiple of %v", n, f)
		}
	}
	if f, ok := floatKeyword(m, "minimum"); ok && n < f {
		return fail(path, "minimum: %v is less than %v", n, f)
	}
	if f, ok := floatKeyword(m, "maximum"); ok && n > f {
		return fail(path, "maximum: %v is greater than %v", n, f)
	}
	if f, ok := floatKeyword(m, "exclusiveMinimum"); ok && n <= f {
		return fail(path, "exclusiveMinimum: %v is not greater than %v", n, f)
	}
	if f, ok := floatKeyword(m, "exclusiveMaximum"); ok && n >= f {
		return fail(path, "exclusiveMaximum: %v is not less than %v", n, f)
	}
	return nil
}

// number is v as the server's validator compares it: a float64.
func number(v any) (float64, bool) {
	f, ok := v.(float64)
	return f, ok
}

func floatKeyword(m map[string]any, k string) (float64, bool) {
	n, ok := m[k].(float64)
	return n, ok
}

func intKeyword(m map[string]any, k string) (int, bool) {
	n, ok := m[k].(float64)
	return int(n), ok
}

// jsonKind is the JSON Schema type of a decoded value; a number without a fraction
// is an "integer".
func jsonKind(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case float64:
		if _, f := math.Modf(v); f == 0 {
			return "integer"
		}
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// equal is JSON equality: numbers by value.
func equal(a, b any) bool {
	if x, ok := a.(float64); ok {
		y, ok := b.(float64)
		return ok && x == y
	}
	switch a := a.(type) {
	case []any:
		b, ok := b.([]any)
		return ok && len(a) == len(b) && !slices.ContainsFunc(indices(len(a)), func(i int) bool { return !equal(a[i], b[i]) })
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, x := range a {
			y, ok := b[k]
			if !ok || !equal(x, y) {
				return false
			}
		}
		return true
	}
	if _, isNum := b.(float64); isNum {
		return false
	}
	return a == b
}

func indices(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// show prints a value in a message, cut to 100 bytes.
func show(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 100 {
		return string(b[:100]) + "..."
	}
	return string(b)
}
