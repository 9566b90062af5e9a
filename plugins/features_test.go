package plugins

import (
	"strings"
	"testing"
)

func TestParseFeatures(t *testing.T) {
	p := &Plugin{Name: "p", Prefix: "p"}
	tests := []struct {
		name, doc, want string // want "" means valid
	}{
		{"all", `{"tools":[],"resources":[{"uri":"test://a","name":"a","mimeType":"text/plain","size":3,"annotations":{"audience":["user"],"priority":0.5}}],` +
			`"resourceTemplates":[{"uriTemplate":"test://t/{id}","name":"t"}],"prompts":[{"name":"p","arguments":[{"name":"x","required":true}]}],"completions":true}`, ""},
		{"no sections", `{"tools":[]}`, ""},
		{"resources not array", `{"resources":{}}`, "resources: json"},
		{"resource unknown field", `{"resources":[{"uri":"test://a","name":"a","url":"x"}]}`, `unknown field "url"`},
		{"resource no uri", `{"resources":[{"name":"a"}]}`, "uri is required"},
		{"resource relative uri", `{"resources":[{"uri":"a/b","name":"a"}]}`, "must be absolute"},
		{"resource long uri", `{"resources":[{"uri":"test://` + strings.Repeat("a", 2048) + `","name":"a"}]}`, "at most 2048 bytes"},
		{"resource twice", `{"resources":[{"uri":"test://a","name":"a"},{"uri":"test://a","name":"b"}]}`, "declared twice"},
		{"resource no name", `{"resources":[{"uri":"test://a"}]}`, "name is required"},
		{"resource bad mime", `{"resources":[{"uri":"test://a","name":"a","mimeType":"not a type"}]}`, "mimeType"},
		{"resource negative size", `{"resources":[{"uri":"test://a","name":"a","size":-1}]}`, "negative"},
		{"resource bad audience", `{"resources":[{"uri":"test://a","name":"a","annotations":{"audience":["system"]}}]}`, "audience"},
		{"resource bad priority", `{"resources":[{"uri":"test://a","name":"a","annotations":{"priority":2}}]}`, "priority"},
		{"resource annotations unknown", `{"resources":[{"uri":"test://a","name":"a","annotations":{"x":1}}]}`, `unknown field "x"`},
		{"template invalid", `{"resourceTemplates":[{"uriTemplate":"test://{a","name":"t"}]}`, "uriTemplate"},
		{"template no variable", `{"resourceTemplates":[{"uriTemplate":"test://a","name":"t"}]}`, "no variables"},
		{"template no scheme", `{"resourceTemplates":[{"uriTemplate":"{a}/b","name":"t"}]}`, "scheme"},
		{"template twice", `{"resourceTemplates":[{"uriTemplate":"test://{a}","name":"t"},{"uriTemplate":"test://{a}","name":"u"}]}`, "declared twice"},
		{"prompt bad name", `{"prompts":[{"name":"a b"}]}`, "name must be"},
		{"prompt twice", `{"prompts":[{"name":"a"},{"name":"a"}]}`, "declared twice"},
		{"prompt argument twice", `{"prompts":[{"name":"a","arguments":[{"name":"x"},{"name":"x"}]}]}`, `"x" declared twice`},
		{"prompt argument bad name", `{"prompts":[{"name":"a","arguments":[{"name":""}]}]}`, "arguments[0]: name"},
		{"prompt too many arguments", `{"prompts":[{"name":"a","arguments":[` + strings.Repeat(`{"name":"x"},`, 32) + `{"name":"y"}]}]}`, "33 arguments"},
		{"prompt unknown field", `{"prompts":[{"name":"a","args":[]}]}`, `unknown field "args"`},
		{"prompt not utf8", "{\"prompts\":[{\"name\":\"a\",\"description\":\"\xff\"}]}", "UTF-8"},
		{"completions not bool", `{"completions":"yes"}`, "completions"},
		{"section typo", `{"resource":[]}`, `unknown field "resource"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := *p
			_, err := parseManifest(&q, []byte(tt.doc))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("parseManifest(%s) = %v, want nil", tt.doc, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("parseManifest(%s) = %v, want error containing %q", tt.doc, err, tt.want)
			}
		})
	}
	q := *p
	if _, err := parseManifest(&q, []byte(`{"prompts":[{"name":"hello"}],"resources":[{"uri":"test://a","name":"a"}],"completions":true}`)); err != nil {
		t.Fatal(err)
	}
	if len(q.Prompts) != 1 || q.Prompts[0].Name != "p_hello" || len(q.Resources) != 1 || !q.Completions {
		t.Errorf("parsed plugin = %+v, want prompt p_hello, one resource, completions", q)
	}
	// A prompt's full name must fit in 64 characters, like a tool's.
	long := &Plugin{Name: "p", Prefix: strings.Repeat("p", 32)}
	if _, err := parseManifest(long, []byte(`{"prompts":[{"name":"`+strings.Repeat("t", 40)+`"}]}`)); err == nil || !strings.Contains(err.Error(), "longer than 64") {
		t.Errorf("parseManifest(73-character prompt name) = %v, want too long", err)
	}
}

func TestCheckResults(t *testing.T) {
	png := "iVBORw0KGgo="
	tests := []struct {
		name  string
		check func([]byte) error
		out   string
		want  string // "" means valid
	}{
		{"read text", checkReadResult, `{"contents":[{"uri":"test://a","mimeType":"text/plain","text":""}]}`, ""},
		{"read blob", checkReadResult, `{"contents":[{"uri":"test://a","blob":"` + png + `"}],"_meta":{}}`, ""},
		{"read empty", checkReadResult, `{"contents":[]}`, ""},
		{"read no contents", checkReadResult, `{}`, "contents is required"},
		{"read both", checkReadResult, `{"contents":[{"uri":"test://a","text":"x","blob":"` + png + `"}]}`, "exactly one"},
		{"read neither", checkReadResult, `{"contents":[{"uri":"test://a"}]}`, "exactly one"},
		{"read no uri", checkReadResult, `{"contents":[{"text":"x"}]}`, "uri is required"},
		{"read bad blob", checkReadResult, `{"contents":[{"uri":"test://a","blob":"%%%"}]}`, "base64"},
		{"read unknown field", checkReadResult, `{"contents":[],"more":1}`, `unknown field "more"`},
		{"read trailing", checkReadResult, `{"contents":[]} {}`, "after the JSON value"},
		{"read not json", checkReadResult, `contents`, "invalid character"},
		{"prompt", checkPromptResult, `{"messages":[{"role":"user","content":{"type":"text","text":"hi"}},` +
			`{"role":"assistant","content":{"type":"image","data":"` + png + `","mimeType":"image/png"}},` +
			`{"role":"user","content":{"type":"resource","resource":{"uri":"test://a","text":"x"}}},` +
			`{"role":"user","content":{"type":"resource_link","uri":"test://a","name":"a"}}]}`, ""},
		{"prompt no messages", checkPromptResult, `{"description":"d"}`, "messages is required"},
		{"prompt bad role", checkPromptResult, `{"messages":[{"role":"system","content":{"type":"text","text":"x"}}]}`, "role"},
		{"prompt unknown type", checkPromptResult, `{"messages":[{"role":"user","content":{"type":"video","data":"x"}}]}`, "unknown content type"},
		{"prompt text without text", checkPromptResult, `{"messages":[{"role":"user","content":{"type":"text"}}]}`, "without text"},
		{"prompt image not base64", checkPromptResult, `{"messages":[{"role":"user","content":{"type":"image","data":"!","mimeType":"image/png"}}]}`, "base64"},
		{"prompt image no mime", checkPromptResult, `{"messages":[{"role":"user","content":{"type":"image","data":"` + png + `"}}]}`, "mimeType"},
		{"prompt bad resource", checkPromptResult, `{"messages":[{"role":"user","content":{"type":"resource","resource":{"uri":"test://a"}}}]}`, "exactly one"},
		{"prompt link without name", checkPromptResult, `{"messages":[{"role":"user","content":{"type":"resource_link","uri":"test://a"}}]}`, "uri and name"},
		{"complete", checkCompleteResult, `{"completion":{"values":["a","b"],"total":5,"hasMore":true}}`, ""},
		{"complete no values", checkCompleteResult, `{"completion":{}}`, "values is required"},
		{"complete too many", checkCompleteResult, `{"completion":{"values":[` + strings.Repeat(`"a",`, 100) + `"b"]}}`, "101 completion values"},
		{"complete total too small", checkCompleteResult, `{"completion":{"values":["a","b"],"total":1}}`, "total"},
		{"complete values not strings", checkCompleteResult, `{"completion":{"values":[1]}}`, "cannot unmarshal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.check([]byte(tt.out))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("check(%s) = %v, want nil", tt.out, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("check(%s) = %v, want error containing %q", tt.out, err, tt.want)
			}
		})
	}
}
