package guest_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	guest "github.com/mcp-wasmhost/mcp-wasmhost/sdk-guest"
)

type greetArgs struct {
	Name  string `json:"name" jsonschema:"who to greet"`
	Times int    `json:"times,omitempty"`
}

type confirmArgs struct{}

type nested struct {
	Tags   []string          `json:"tags"`
	Labels map[string]string `json:"labels,omitempty"`
	Data   []byte            `json:"data,omitempty"`
	Inner  *struct {
		On bool `json:"on"`
	} `json:"inner,omitempty"`
	Any   any     `json:"any,omitempty"`
	Ratio float64 `json:"ratio,omitempty"`
	//lint:ignore U1000 an unexported field, to show it stays out of the schema
	skipped int
	Ignored string `json:"-"`
}

func init() {
	guest.Add(guest.Tool{Name: "greet", Description: "Says hello."}, func(c *guest.Call, in greetArgs) (*guest.Result, error) {
		c.Log(guest.LevelInfo, "greeting %s", in.Name)
		c.Progress(1, 1, "done")
		return guest.Text(strings.Repeat("Hello, "+in.Name+"! ", max(in.Times, 1))), nil
	})
	guest.Add(guest.Tool{Name: "confirm", TaskSupport: guest.TaskOptional}, func(c *guest.Call, _ confirmArgs) (*guest.Result, error) {
		r, err := c.Elicit("Sure?", map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}})
		if err != nil {
			return guest.Errorf("cannot ask: %v", err), nil
		}
		return guest.Text(r.Action), nil
	})
	guest.Add(guest.Tool{Name: "fails"}, func(*guest.Call, confirmArgs) (*guest.Result, error) {
		return nil, errors.New("disk on fire")
	})
	guest.Add(guest.Tool{Name: "panics"}, func(*guest.Call, confirmArgs) (*guest.Result, error) {
		panic("boom")
	})
	guest.Add(guest.Tool{Name: "nested"}, func(_ *guest.Call, in nested) (*guest.Result, error) {
		return guest.Structured(map[string]int{"tags": len(in.Tags)})
	})
}

func TestManifest(t *testing.T) {
	b, err := guest.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
			Execution   *struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	schemas := map[string]string{}
	for _, tool := range m.Tools {
		schemas[tool.Name] = string(tool.InputSchema)
		if tool.Name == "confirm" && (tool.Execution == nil || tool.Execution.TaskSupport != "optional") {
			t.Errorf("confirm execution = %+v, want optional", tool.Execution)
		}
	}
	tests := []struct{ tool, want string }{
		{"greet", `{"additionalProperties":false,"properties":{"name":{"description":"who to greet","type":"string"},"times":{"type":"integer"}},"required":["name"],"type":"object"}`},
		{"confirm", `{"additionalProperties":false,"properties":{},"type":"object"}`},
		{"nested", `{"additionalProperties":false,"properties":{"any":{},"data":{"contentEncoding":"base64","type":"string"},` +
			`"inner":{"additionalProperties":false,"properties":{"on":{"type":"boolean"}},"required":["on"],"type":"object"},` +
			`"labels":{"additionalProperties":{"type":"string"},"type":"object"},"ratio":{"type":"number"},` +
			`"tags":{"items":{"type":"string"},"type":"array"}},"required":["tags"],"type":"object"}`},
	}
	for _, tt := range tests {
		if got := schemas[tt.tool]; got != tt.want {
			t.Errorf("inputSchema of %s =\n%s\nwant\n%s", tt.tool, got, tt.want)
		}
	}
}

func TestCallTool(t *testing.T) {
	tests := []struct {
		tool    string
		args    any
		host    *guest.TestHost
		want    string
		isError bool
	}{
		{"greet", map[string]any{"name": "Ada", "times": 2}, nil, "Hello, Ada! Hello, Ada! ", false},
		{"confirm", nil, &guest.TestHost{Elicit: func(string, json.RawMessage) (*guest.ElicitResult, error) {
			return &guest.ElicitResult{Action: "decline"}, nil
		}}, "decline", false},
		{"confirm", nil, nil, "cannot ask: the client cannot be asked for input", true},
		{"fails", nil, nil, "disk on fire", true},
		{"panics", nil, nil, "tool panics panicked: boom", true},
		{"nope", nil, nil, `unknown tool "nope"`, true},
	}
	// Arguments the input schema refuses never reach the tool: the client gets -32602.
	var perr *guest.ProtocolError
	if _, err := guest.CallTool(nil, "greet", map[string]any{"name": 5}); !errors.As(err, &perr) || perr.Code != -32602 ||
		!strings.Contains(perr.Message, `invalid arguments for tool "greet": validating /properties/name: type: 5 has type "integer"`) {
		t.Errorf("CallTool(greet, name 5) = %v, want a -32602 ProtocolError naming the property", err)
	}
	for _, tt := range tests {
		res, err := guest.CallTool(tt.host, tt.tool, tt.args)
		if err != nil {
			t.Fatalf("CallTool(%s) = %v", tt.tool, err)
		}
		if got := res.Content[0].Text; !strings.Contains(got, tt.want) || res.IsError != tt.isError {
			t.Errorf("CallTool(%s, %v) = %q (isError %v), want %q (isError %v)", tt.tool, tt.args, got, res.IsError, tt.want, tt.isError)
		}
	}
}

func TestLogsAndProgress(t *testing.T) {
	h := &guest.TestHost{}
	if _, err := guest.CallTool(h, "greet", map[string]string{"name": "Bo"}); err != nil {
		t.Fatal(err)
	}
	if logs := h.Logs(); len(logs) != 1 || logs[0].Message != "greeting Bo" || logs[0].Level != guest.LevelInfo {
		t.Errorf("Logs() = %+v", logs)
	}
	if p := h.Progress(); len(p) != 1 || p[0].Done != 1 {
		t.Errorf("Progress() = %+v", p)
	}
}

func TestStructured(t *testing.T) {
	res, err := guest.CallTool(nil, "nested", map[string]any{"tags": []string{"a", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(res.StructuredContent); string(b) != `{"tags":2}` || res.Content[0].Text != `{"tags":2}` {
		t.Errorf("result = %s / %q", b, res.Content[0].Text)
	}
}

// A tool is unit-tested natively: CallTool runs it as the host would.
func ExampleCallTool() {
	res, err := guest.CallTool(nil, "greet", map[string]any{"name": "world"})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Content[0].Text)
	// Output: Hello, world!
}

func TestSampleThroughTestHost(t *testing.T) {
	h := &guest.TestHost{Sample: func(r guest.SampleRequest) (*guest.SampleResult, error) {
		return &guest.SampleResult{Role: "assistant", Model: "m", Content: guest.Content{Type: "text", Text: "echo: " + r.Messages[0].Content.Text}}, nil
	}}
	res, err := guest.CallTool(h, "sampler", map[string]any{})
	if err != nil || res.Content[0].Text != "echo: hi" {
		t.Fatalf("sampler = %+v, %v", res, err)
	}
	res, _ = guest.CallTool(nil, "sampler", map[string]any{})
	if !res.IsError || !strings.Contains(res.Content[0].Text, "cannot be asked") {
		t.Errorf("sampler without a model = %+v", res)
	}
}

func init() {
	guest.Add(guest.Tool{Name: "sampler"}, func(c *guest.Call, _ confirmArgs) (*guest.Result, error) {
		r, err := c.Sample(guest.SampleRequest{MaxTokens: 5, Messages: []guest.SampleMessage{{Role: "user", Content: guest.Content{Type: "text", Text: "hi"}}}})
		if err != nil {
			return nil, err
		}
		return guest.Text(r.Content.Text), nil
	})
}
