package host

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var toolResultSeeds = []string{
	`{"content":[{"type":"text","text":"pong"}]}`,
	`{"content":[{"text":"a\nb \"q\" \\ \/ \t","type":"text"},{"type":"text","text":""}],"isError":true}`,
	`{"isError":false,"content":[]}`,
	`{}`,
	`{"content":null}`,
	`{"content":[{"type":"text","text":"\u00e9"}]}`,
	`{"content":[{"type":"text","text":"é ✓"}]}`,
	`{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}`,
	`{"content":[{"type":"text","text":"a","annotations":{"priority":1}}]}`,
	`{"content":[{"type":"text","text":"a"}],"structuredContent":{"n":1}}`,
	`{"content":[{"type":"text","text":"a"}],"content":[]}`,
	`{"content":[{"type":"text","text":"a","text":"b"}]}`,
	`{"content":[{"type":"text"}]}`,
	`{"content":[{"text":"a"}]}`,
	`{"content":[{"type":"text","text":1}]}`,
	`{"isError":1,"content":[]}`,
	`{"content":[{"type":"text","text":"a"}],"_meta":{"k":"v"}}`,
	`[]`,
	`{"content":[{"type":"text","text":"a"}]`,
	` { "content" : [ { "type" : "text" , "text" : "a" } ] , "isError" : false } `,
}

func TestFastToolResult(t *testing.T) {
	for _, s := range toolResultSeeds {
		checkFastToolResult(t, []byte(s))
	}
	res, ok := fastToolResult([]byte(toolResultSeeds[1]))
	if !ok || len(res.Content) != 2 || !res.IsError || res.Content[0].(*mcp.TextContent).Text != "a\nb \"q\" \\ / \t" {
		t.Errorf("fastToolResult(%s) = %+v, %v", toolResultSeeds[1], res, ok)
	}
	if _, ok := fastToolResult([]byte(toolResultSeeds[7])); ok {
		t.Error("an image block took the fast path")
	}
}

// FuzzFastToolResult holds the fast decoder to mcp.CallToolResult's own: a result it
// accepts decodes to the same value there.
func FuzzFastToolResult(f *testing.F) {
	for _, s := range toolResultSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, out []byte) { checkFastToolResult(t, out) })
}

func checkFastToolResult(t *testing.T, out []byte) {
	t.Helper()
	got, ok := fastToolResult(out)
	if !ok {
		return
	}
	var want mcp.CallToolResult
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatalf("fast path accepted %q, which the SDK refuses: %v", out, err)
	}
	if !reflect.DeepEqual(got, &want) {
		t.Fatalf("%q: fast path %#v, SDK %#v", out, got, &want)
	}
}
