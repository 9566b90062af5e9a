package plugins_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// host is a sandbox.Host that records resource_updated requests and refuses the rest.
type host struct{ updated []string }

func (h *host) Log(context.Context, sandbox.Level, string)         {}
func (h *host) Progress(context.Context, float64, float64, string) {}
func (h *host) Request(_ context.Context, method string, params []byte) ([]byte, error) {
	if method != "resource_updated" {
		return nil, sandbox.ErrUnsupported
	}
	var p struct{ URI string }
	json.Unmarshal(params, &p)
	h.updated = append(h.updated, p.URI)
	return []byte("{}"), nil
}

func fixture(t *testing.T, e *sandbox.Engine, name, prefix string) *plugins.Plugin {
	s := testenv.Spec(t, name, "conformance/fixture/fixture.wasm")
	s.Prefix, s.Unprefixed = prefix, prefix == ""
	return testenv.Load(t, e, s)
}

func TestFixtureFeatures(t *testing.T) {
	ctx := context.Background()
	e := testenv.Engine(t)
	p := fixture(t, e, "fixture", "")
	c, err := plugins.NewCatalog([]*plugins.Plugin{p})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Lookup("test_simple_text"); !ok {
		t.Error(`Lookup("test_simple_text") = false: prefix "" must offer the guest's names`)
	}
	if len(c.Resources()) != 3 || len(c.Templates()) != 1 || len(c.Prompts()) != 4 || !p.Completions {
		t.Fatalf("catalog: %d resources, %d templates, %d prompts, completions %v; want 3, 1, 4, true",
			len(c.Resources()), len(c.Templates()), len(c.Prompts()), p.Completions)
	}

	reads := map[string]string{
		"test://static-text":       `{"contents":[{"uri":"test://static-text","mimeType":"text/plain","text":"This is the content of the static text resource."}]}`,
		"test://template/123/data": `{"contents":[{"uri":"test://template/123/data","mimeType":"application/json","text":"{\"data\":\"Data for ID: 123\",\"id\":\"123\",\"templateTest\":true}"}]}`,
	}
	for uri, want := range reads {
		out, err := p.Read(ctx, uri, &host{})
		if err != nil || string(out) != want {
			t.Errorf("Read(%q) = %s, %v; want %s", uri, out, err, want)
		}
	}
	if out, err := p.Read(ctx, "test://static-binary", &host{}); err != nil || !strings.Contains(string(out), `"blob":"iVBORw0KGgo`) {
		t.Errorf("Read(static-binary) = %s, %v; want a PNG blob", out, err)
	}

	pr, _ := c.Prompt("test_prompt_with_arguments")
	out, err := pr.Get(ctx, map[string]string{"arg1": "a", "arg2": "b"}, &host{})
	if want := `{"messages":[{"role":"user","content":{"type":"text","text":"Prompt with arguments: arg1='a', arg2='b'"}}]}`; err != nil || string(out) != want {
		t.Errorf("Get(test_prompt_with_arguments) = %s, %v; want %s", out, err, want)
	}
	for _, args := range []map[string]string{{"arg1": "a"}, {"arg1": "a", "arg2": "b", "arg3": "c"}, {"arg1": "a", "arg2": "\xff"}} {
		var pe *plugins.ParamsError
		if _, err := pr.Get(ctx, args, &host{}); !errors.As(err, &pe) {
			t.Errorf("Get(%q) = %v, want a ParamsError before the guest runs", args, err)
		}
	}

	out, err = p.Complete(ctx, plugins.CompleteRequest{Prompt: pr, Argument: "arg1", Value: "pa"}, &host{})
	if want := `{"completion":{"values":["paris","park","party"],"total":3}}`; err != nil || string(out) != want {
		t.Errorf("Complete(arg1, pa) = %s, %v; want %s", out, err, want)
	}
	tmpl, _ := c.Template("test://template/{id}/data")
	out, err = p.Complete(ctx, plugins.CompleteRequest{Template: tmpl, Argument: "id", Value: "12"}, &host{})
	if want := `{"completion":{"values":["12","123"],"total":2}}`; err != nil || string(out) != want {
		t.Errorf("Complete(id, 12) = %s, %v; want %s", out, err, want)
	}
	var pe *plugins.ParamsError
	if _, err := p.Complete(ctx, plugins.CompleteRequest{Template: tmpl, Argument: "nope"}, &host{}); !errors.As(err, &pe) {
		t.Errorf("Complete(unknown variable) = %v, want a ParamsError", err)
	}

	for uri, want := range map[string]bool{"test://watched-resource": true, "test://template/7/data": true, "test://template/7": false, "test://other": false} {
		if got := p.Owns(uri); got != want {
			t.Errorf("Owns(%q) = %v, want %v", uri, got, want)
		}
	}
	tool, _ := c.Lookup("test_resource_updated")
	h := &host{}
	if _, err := tool.Call(ctx, json.RawMessage(`{"uri":"test://watched-resource"}`), h); err != nil || !reflect.DeepEqual(h.updated, []string{"test://watched-resource"}) {
		t.Errorf("test_resource_updated: %v, updated %q", err, h.updated)
	}
}

func TestCatalogCollisions(t *testing.T) {
	e := testenv.Engine(t)
	a, b := fixture(t, e, "a", ""), fixture(t, e, "b", "")
	_, err := plugins.NewCatalog([]*plugins.Plugin{a, b})
	for _, want := range []string{
		`tool "test_simple_text" is offered by plugins "a" and "b"`,
		`prompt "test_simple_prompt" is offered by plugins "a" and "b"`,
		`resource "test://static-text" is offered by plugins "a" and "b"`,
		`resource template "test://template/{id}/data" is offered by plugins "a" and "b"`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NewCatalog(two unprefixed fixtures) = %v, want %q", err, want)
		}
	}
	// Different prefixes keep tools and prompts apart; resources still collide.
	c, d := fixture(t, e, "c", "c"), fixture(t, e, "d", "d")
	_, err = plugins.NewCatalog([]*plugins.Plugin{c, d})
	if err == nil || strings.Contains(err.Error(), "tool") || !strings.Contains(err.Error(), `resource "test://static-text"`) {
		t.Errorf("NewCatalog(prefixed fixtures) = %v, want only resource collisions", err)
	}
}

// The echo guest answers every call with its own input: well-formed JSON, but not
// the result of the method. Each is refused with a message naming the plugin.
func TestMalformedFeatureResults(t *testing.T) {
	ctx := context.Background()
	e := testenv.Engine(t)
	p := testenv.Load(t, e, testenv.Spec(t, "echo", "testdata/wasm/echo.wasm"))
	c, err := plugins.NewCatalog([]*plugins.Plugin{p})
	if err != nil {
		t.Fatal(err)
	}
	pr, _ := c.Prompt("echo_echo")
	tmpl, _ := c.Template("test://echo/{x}")
	tool, _ := c.Lookup("echo_echo")
	calls := map[string]func() (json.RawMessage, error){
		"read":   func() (json.RawMessage, error) { return p.Read(ctx, "test://echo", &host{}) },
		"prompt": func() (json.RawMessage, error) { return pr.Get(ctx, map[string]string{"text": "x"}, &host{}) },
		"complete": func() (json.RawMessage, error) {
			return p.Complete(ctx, plugins.CompleteRequest{Template: tmpl, Argument: "x"}, &host{})
		},
		"tool": func() (json.RawMessage, error) { return tool.Call(ctx, nil, &host{}) },
	}
	for name, call := range calls {
		out, err := call()
		var ge *sandbox.GuestError
		if !errors.As(err, &ge) || ge.Kind != sandbox.KindOutput || !strings.Contains(ge.Message, `"echo`) {
			t.Errorf("%s: = %s, %v; want a KindOutput error naming the plugin or tool", name, out, err)
		}
	}
}

// The C guest serves the same features through sdk-guest/c/mcpwh.h.
func TestCGuestFeatures(t *testing.T) {
	ctx := context.Background()
	e := testenv.Engine(t)
	p := testenv.Load(t, e, testenv.Spec(t, "library", "testdata/wasm/library.wasm"))
	c, err := plugins.NewCatalog([]*plugins.Plugin{p})
	if err != nil {
		t.Fatal(err)
	}
	for uri, want := range map[string]string{
		"lib://readme":            `{"contents":[{"uri":"lib://readme","mimeType":"text/plain","text":"Welcome to the library."}]}`,
		`lib://books/"quoted"%20`: `{"contents":[{"uri":"lib://books/\"quoted\"%20","mimeType":"text/plain","text":"Book \"quoted\"%20"}]}`,
	} {
		if out, err := p.Read(ctx, uri, &host{}); err != nil || string(out) != want {
			t.Errorf("Read(%q) = %s, %v; want %s", uri, out, err, want)
		}
	}
	pr, _ := c.Prompt("library_summarize")
	if out, err := pr.Get(ctx, map[string]string{"topic": "tea \"leaves\""}, &host{}); err != nil ||
		string(out) != `{"messages":[{"role":"user","content":{"type":"text","text":"tea \"leaves\""}}]}` {
		t.Errorf("Get(summarize) = %s, %v", out, err)
	}
	if out, err := p.Complete(ctx, plugins.CompleteRequest{Prompt: pr, Argument: "topic", Value: "b"}, &host{}); err != nil ||
		string(out) != `{"completion":{"values":["birds","boats","bread"]}}` {
		t.Errorf("Complete(topic, b) = %s, %v", out, err)
	}
	tool, _ := c.Lookup("library_touch")
	h := &host{}
	if out, err := tool.Call(ctx, json.RawMessage(`{"id":"7"}`), h); err != nil || !reflect.DeepEqual(h.updated, []string{"lib://books/7"}) {
		t.Errorf("touch = %s, %v; updated %q", out, err, h.updated)
	}
}
