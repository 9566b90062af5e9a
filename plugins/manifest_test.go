package plugins

import (
	"strings"
	"testing"
)

func TestParseManifest(t *testing.T) {
	p := &Plugin{Name: "p", Prefix: "p"}
	obj := `"inputSchema":{"type":"object"}`
	tests := []struct {
		name, doc, want string // want "" means valid
	}{
		{"minimal", `{"tools":[{"name":"a",` + obj + `}]}`, ""},
		{"empty", `{"tools":[]}`, ""},
		{"unknown field", `{"tools":[{"name":"a","input_schema":{}}]}`, `unknown field "input_schema"`},
		{"bad name", `{"tools":[{"name":"a b",` + obj + `}]}`, "name must be"},
		{"long name", `{"tools":[{"name":"` + strings.Repeat("x", 49) + `",` + obj + `}]}`, "name must be"},
		{"duplicate", `{"tools":[{"name":"a",` + obj + `},{"name":"a",` + obj + `}]}`, "declared twice"},
		{"no schema", `{"tools":[{"name":"a"}]}`, "inputSchema: missing"},
		{"array schema", `{"tools":[{"name":"a","inputSchema":{"type":"array"}}]}`, `type must be "object"`},
		{"bad task support", `{"tools":[{"name":"a",` + obj + `,"execution":{"taskSupport":"always"}}]}`, `"always" is not`},
		{"resumable", `{"tools":[{"name":"a",` + obj + `,"execution":{"taskSupport":"required","resumable":true}}]}`, ""},
		{"resumable without tasks", `{"tools":[{"name":"a",` + obj + `,"execution":{"resumable":true}}]}`, "execution.resumable needs taskSupport"},
		{"resumable, guest starts", `{"tools":[{"name":"a",` + obj + `,"execution":{"taskSupport":"optional","taskStart":"guest","resumable":true}}]}`, `needs taskStart "server"`},
		// Every task has a log; there is nothing to declare.
		{"task log", `{"tools":[{"name":"a",` + obj + `,"execution":{"taskSupport":"required","taskLog":true}}]}`, `unknown field "taskLog"`},
		{"remote ref", `{"tools":[{"name":"a","inputSchema":{"type":"object","$ref":"https://example.com/s"}}]}`, "inputSchema"},
		{"bad output schema", `{"tools":[{"name":"a",` + obj + `,"outputSchema":{"type":"string"}}]}`, "outputSchema"},
		{"annotations not object", `{"tools":[{"name":"a",` + obj + `,"annotations":[1]}]}`, "annotations"},
		{"not json", `{"tools":`, "unexpected EOF"},
		{"not utf8", "{\"tools\":[{\"name\":\"\xff\"}]}", "UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseManifest(p, []byte(tt.doc))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("parseManifest(%s) = %v, want nil", tt.doc, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("parseManifest(%s) = %v, want error containing %q", tt.doc, err, tt.want)
			}
		})
	}
	// The full name, plugin_tool, must fit in 64 characters.
	long := &Plugin{Name: strings.Repeat("p", 32), Prefix: strings.Repeat("p", 32)}
	if _, err := parseManifest(long, []byte(`{"tools":[{"name":"`+strings.Repeat("t", 40)+`",`+obj+`}]}`)); err == nil || !strings.Contains(err.Error(), "longer than 64") {
		t.Errorf("parseManifest(73-character full name) = %v, want too long", err)
	}
}
