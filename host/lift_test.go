package host

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestLiftTask(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"name":"x","task":{"ttl":5}}`, `{"_meta":{"io.github.mcp-wasmhost/task":{"ttl":5}},"name":"x"}`},
		{`{"name":"x","task":{},"_meta":{"progressToken":1}}`, `{"_meta":{"io.github.mcp-wasmhost/task":{},"progressToken":1},"name":"x"}`},
		{`{"name":"x","_meta":{"io.github.mcp-wasmhost/task":{}}}`, `{"_meta":{},"name":"x"}`}, // spoofed: removed
		{`{"name":"x","task":null}`, `{"name":"x"}`},
		{`{"name":"x"}`, `{"name":"x"}`},
		{`[1,2]`, `[1,2]`},
		{`{"name":"x","_meta":5,"task":{}}`, `{"name":"x","_meta":5,"task":{}}`}, // left for the SDK to refuse
	}
	for _, tt := range tests {
		if got := string(liftTask(json.RawMessage(tt.in))); got != tt.want {
			t.Errorf("liftTask(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestLiftClientTasks(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"capabilities":{"tasks":{"list":{}}}}`, `{"_meta":{"io.github.mcp-wasmhost/client-tasks":true},"capabilities":{"tasks":{"list":{}}}}`},
		{`{"capabilities":{"tasks":{}},"_meta":{"k":1}}`, `{"_meta":{"io.github.mcp-wasmhost/client-tasks":true,"k":1},"capabilities":{"tasks":{}}}`},
		{`{"capabilities":{},"_meta":{"io.github.mcp-wasmhost/client-tasks":true}}`, `{"_meta":{},"capabilities":{}}`}, // spoofed: removed
		{`{"capabilities":{"tasks":null}}`, `{"capabilities":{"tasks":null}}`},                                         // not declared
		{`{"capabilities":{"elicitation":{}}}`, `{"capabilities":{"elicitation":{}}}`},
		{`{"capabilities":5,"_meta":{"io.github.mcp-wasmhost/client-tasks":true}}`, `{"capabilities":5,"_meta":{"io.github.mcp-wasmhost/client-tasks":true}}`}, // left for the SDK to refuse
		{`[1,2]`, `[1,2]`},
	}
	for _, tt := range tests {
		if got := string(liftClientTasks(json.RawMessage(tt.in))); got != tt.want {
			t.Errorf("liftClientTasks(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// FuzzLift: whatever a client sends, lifting never panics, never turns valid JSON into
// invalid JSON, and never leaves a client-supplied private key behind.
func FuzzLift(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","task":{"ttl":1}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.github.mcp-wasmhost/task":1}}}`,
		`{"method":"tools/call","params":null}`, `[]`, `{`, `"x"`,
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{"tasks":{}},"_meta":{"io.github.mcp-wasmhost/client-tasks":1}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		out, _ := liftBody(body)
		if json.Valid(body) && !json.Valid(out) {
			t.Fatalf("liftBody(%s) = %s: invalid JSON", body, out)
		}
		var msg struct {
			Params struct {
				Meta map[string]json.RawMessage `json:"_meta"`
				Task json.RawMessage            `json:"task"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &msg) == nil && msg.Params.Task == nil {
			var after struct {
				Method string `json:"method"`
				Params struct {
					Meta map[string]json.RawMessage `json:"_meta"`
				} `json:"params"`
			}
			if json.Unmarshal(out, &after) == nil && after.Method == "tools/call" {
				if _, ok := after.Params.Meta[taskMetaKey]; ok {
					t.Fatalf("liftBody(%s) = %s: a spoofed task key survived", body, out)
				}
			}
		}
		var init struct {
			Method string `json:"method"`
			Params struct {
				Caps map[string]json.RawMessage `json:"capabilities"`
				Meta map[string]json.RawMessage `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(out, &init) == nil && init.Method == "initialize" && init.Params.Caps != nil {
			if _, recorded := init.Params.Meta[clientTasksMetaKey]; recorded && !strings.HasPrefix(strings.TrimSpace(string(init.Params.Caps["tasks"])), "{") {
				t.Fatalf("liftBody(%s) = %s: capabilities.tasks recorded without being declared", body, out)
			}
		}
	})
}
