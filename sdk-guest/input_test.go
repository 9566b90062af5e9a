package guest_test

import (
	"encoding/json"
	"errors"
	"testing"

	guest "github.com/mcp-wasmhost/mcp-wasmhost/sdk-guest"
)

func init() {
	guest.Add(guest.Tool{Name: "ask_all"}, func(c *guest.Call, _ confirmArgs) (*guest.Result, error) {
		a, err := c.Ask(map[string]guest.InputRequest{
			"who":   guest.ElicitInput("Who?", map[string]any{"type": "object"}),
			"where": guest.RootsInput(),
			"what": guest.SampleInput(guest.SampleRequest{MaxTokens: 5,
				Messages: []guest.SampleMessage{{Role: "user", Content: guest.Content{Type: "text", Text: "?"}}}}),
		})
		if err != nil {
			return guest.Errorf("ask: %v", err), nil
		}
		who, _ := a.Elicit("who")
		roots, rerr := a.Roots("where")
		what, serr := a.Sample("what")
		out := who.Action
		if errors.Is(rerr, guest.ErrUnavailable) {
			out += " no-roots"
		} else {
			out += " " + roots[0].URI
		}
		if errors.Is(serr, guest.ErrUnavailable) {
			out += " no-sampling"
		} else {
			out += " " + what.Content.Text
		}
		return guest.Text(out), nil
	})
	guest.Add(guest.Tool{Name: "roots"}, func(c *guest.Call, _ confirmArgs) (*guest.Result, error) {
		rs, err := c.ListRoots()
		if err != nil {
			return guest.Errorf("roots: %v", err), nil
		}
		return guest.Text(rs[0].Name), nil
	})
}

// TestAsk: Call.Ask gets each answer under its key; what the client cannot answer
// is listed as unavailable, and Ask fails with ErrUnavailable only if nothing can be
// asked.
func TestAsk(t *testing.T) {
	elicit := func(string, json.RawMessage) (*guest.ElicitResult, error) {
		return &guest.ElicitResult{Action: "accept"}, nil
	}
	tests := []struct {
		name string
		h    *guest.TestHost
		tool string
		want string
	}{
		{"elicitation only", &guest.TestHost{Elicit: elicit}, "ask_all", "accept no-roots no-sampling"},
		{"everything", &guest.TestHost{Ask: func(key string, req guest.InputRequest) (any, error) {
			switch req.Method {
			case "roots/list":
				return map[string]any{"roots": []any{map[string]any{"uri": "file:///w", "name": "w"}}}, nil
			case "sampling/createMessage":
				return guest.SampleResult{Role: "assistant", Content: guest.Content{Type: "text", Text: "ok"}}, nil
			}
			return guest.ElicitResult{Action: "decline"}, nil
		}}, "ask_all", "decline file:///w ok"},
		{"nothing", &guest.TestHost{}, "ask_all", "ask: the client cannot be asked for input"},
		{"roots", &guest.TestHost{Ask: func(string, guest.InputRequest) (any, error) {
			return map[string]any{"roots": []any{map[string]any{"uri": "file:///r", "name": "r"}}}, nil
		}}, "roots", "r"},
		{"no roots", &guest.TestHost{}, "roots", "roots: the client cannot be asked for input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := guest.CallTool(tt.h, tt.tool, map[string]any{})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Content[0].Text; got != tt.want {
				t.Errorf("%s = %q, want %q", tt.tool, got, tt.want)
			}
		})
	}
}
