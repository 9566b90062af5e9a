package plugins

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// x-mcp-header (SEP-2243, MCP 2026-07-28): a tool may mark input properties whose
// values the client also sends as HTTP headers, Mcp-Param-{Name}, so that gateways
// can route on them without reading the body. The host checks on every HTTP call
// that each header equals the body's value (host/mcpheader.go); here the annotations
// are checked once, at load, and a tool that breaks a rule refuses its plugin with
// the reason, naming the property.
//
// The rules: the annotation sits on a top-level property of the input schema (not
// on the schema itself nor on anything nested: the header mirrors one argument); that
// property has "type" exactly "string", "integer" or "boolean" (a header cannot
// carry an object, and "number" is excluded by the SEP); the value is a non-empty
// HTTP token (RFC 9110 tchar, so never a CR, LF or blank); and the names of one tool
// are unique ignoring case, as header names are.

// ParamHeader is one x-mcp-header annotation of a tool.
type ParamHeader struct {
	Property string // the top-level input property it mirrors
	Name     string // the header is Mcp-Param-{Name}
	Type     string // the property's type: "string", "integer" or "boolean"
}

// ParamHeaders returns the tool's x-mcp-header annotations, ordered by property.
func (t *Tool) ParamHeaders() []ParamHeader { return t.headers }

// headerKeyword is the annotation's name in a schema.
const headerKeyword = "x-mcp-header"

// paramHeaders reads and checks the x-mcp-header annotations of an input schema that
// compileSchema accepted (so its size and depth are bounded).
func paramHeaders(schema json.RawMessage) ([]ParamHeader, error) {
	if !strings.Contains(string(schema), headerKeyword) {
		return nil, nil
	}
	var top map[string]any
	if err := json.Unmarshal(schema, &top); err != nil {
		return nil, nil // not an object: the schema check has its own say
	}
	if _, ok := top[headerKeyword]; ok {
		return nil, fmt.Errorf("%s is on the schema itself: only a top-level property may carry it", headerKeyword)
	}
	for k, v := range top {
		if k == "properties" {
			continue
		}
		if at := nestedHeader(v, "/"+escapePointer(k), false); at != "" {
			return nil, fmt.Errorf("%s at %s: only a top-level property may carry it", headerKeyword, at)
		}
	}
	props, _ := top["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	slices.Sort(names)
	var out []ParamHeader
	seen := map[string]string{} // lower-case header name -> property
	for _, name := range names {
		prop, ok := props[name].(map[string]any)
		if !ok {
			continue
		}
		for k, v := range prop {
			if k == headerKeyword {
				continue
			}
			if at := nestedHeader(v, "/properties/"+escapePointer(name)+"/"+escapePointer(k), false); at != "" {
				return nil, fmt.Errorf("property %q: %s at %s: only a top-level property may carry it", name, headerKeyword, at)
			}
		}
		raw, ok := prop[headerKeyword]
		if !ok {
			continue
		}
		h, err := paramHeader(name, prop["type"], raw)
		if err != nil {
			return nil, fmt.Errorf("property %q: %w", name, err)
		}
		lower := strings.ToLower(h.Name)
		if other, dup := seen[lower]; dup {
			return nil, fmt.Errorf("property %q: %s %q is already the header of property %q (header names are compared ignoring case)", name, headerKeyword, h.Name, other)
		}
		seen[lower] = name
		out = append(out, h)
	}
	return out, nil
}

// paramHeader checks one annotated property.
func paramHeader(property string, typ, value any) (ParamHeader, error) {
	t, _ := typ.(string)
	switch t {
	case "string", "integer", "boolean":
	default:
		b, _ := json.Marshal(typ)
		return ParamHeader{}, fmt.Errorf(`%s needs "type" to be "string", "integer" or "boolean", not %s`, headerKeyword, b)
	}
	name, ok := value.(string)
	if !ok || name == "" {
		b, _ := json.Marshal(value)
		return ParamHeader{}, fmt.Errorf("%s must be a non-empty string, not %s", headerKeyword, b)
	}
	for i := 0; i < len(name); i++ {
		if !isTokenChar(name[i]) {
			return ParamHeader{}, fmt.Errorf("%s %q: byte %d (%#02x) is not allowed in an HTTP header name (RFC 9110 token)", headerKeyword, name, i, name[i])
		}
	}
	return ParamHeader{Property: property, Name: name, Type: t}, nil
}

// nestedHeader returns the JSON pointer of an x-mcp-header keyword inside v, or "".
// names says that v's keys are names (of properties, definitions), not keywords.
func nestedHeader(v any, at string, names bool) string {
	switch v := v.(type) {
	case map[string]any:
		if _, ok := v[headerKeyword]; ok && !names {
			return at + "/" + headerKeyword
		}
		for k, sub := range v {
			if found := nestedHeader(sub, at+"/"+escapePointer(k), !names && namesKeyword(k)); found != "" {
				return found
			}
		}
	case []any:
		for i, sub := range v {
			if found := nestedHeader(sub, fmt.Sprintf("%s/%d", at, i), false); found != "" {
				return found
			}
		}
	}
	return ""
}

// namesKeyword reports a schema keyword whose value maps names to schemas.
func namesKeyword(k string) bool {
	switch k {
	case "properties", "patternProperties", "$defs", "definitions", "dependentSchemas":
		return true
	}
	return false
}

// isTokenChar reports an RFC 9110 tchar.
func isTokenChar(c byte) bool {
	switch {
	case c >= '0' && c <= '9', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
