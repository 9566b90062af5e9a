package plugins

import "testing"

// FuzzParseManifest: a guest's manifest is hostile bytes; parsing never panics.
func FuzzParseManifest(f *testing.F) {
	for _, s := range []string{
		`{"tools":[{"name":"a","inputSchema":{"type":"object"}}]}`,
		`{"tools":[{"name":"a","inputSchema":{"type":"object","properties":{"x":{"$ref":"#/$defs/y"}},"$defs":{"y":{"type":"string"}}}}]}`,
		`{"tools":[{"name":"a","inputSchema":{"type":"object"},"outputSchema":{"type":"object"},"annotations":{},"execution":{"taskSupport":"optional"}}]}`,
		`{"tools":null}`, `{}`, `[]`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		tools, err := parseManifest(&Plugin{Name: "p"}, doc)
		if err == nil {
			for _, tool := range tools {
				if tool.input == nil {
					t.Fatalf("tool %q accepted without a resolved input schema", tool.Name)
				}
			}
		}
	})
}
