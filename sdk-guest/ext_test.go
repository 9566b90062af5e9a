package guest_test

import (
	"encoding/json"
	"errors"
	"testing"

	guest "github.com/mcp-wasmhost/mcp-wasmhost/sdk-guest"
)

func init() {
	guest.Add(guest.Tool{Name: "two_questions", TaskSupport: guest.TaskRequired, StartsTask: true}, func(c *guest.Call, _ confirmArgs) (*guest.Result, error) {
		rs, err := c.ElicitAll(guest.ElicitRequest{Message: "first?"}, guest.ElicitRequest{Message: "second?"})
		if err != nil {
			return nil, err
		}
		started, err := c.StartTask()
		if err != nil {
			return nil, err
		}
		if started {
			return guest.Errorf("a test host never starts a task"), nil
		}
		return guest.Text(rs[0].Action + " " + rs[1].Action), nil
	})
	guest.Add(guest.Tool{Name: "crash"}, func(c *guest.Call, _ confirmArgs) (*guest.Result, error) {
		return nil, &guest.ProtocolError{Code: -32001, Message: "backend down"}
	})
}

func TestElicitAllAndStartTask(t *testing.T) {
	var asked []string
	h := &guest.TestHost{Elicit: func(message string, _ json.RawMessage) (*guest.ElicitResult, error) {
		asked = append(asked, message)
		if message == "first?" {
			return &guest.ElicitResult{Action: "accept"}, nil
		}
		return &guest.ElicitResult{Action: "decline"}, nil
	}}
	res, err := guest.CallTool(h, "two_questions", map[string]any{})
	if err != nil || res.Content[0].Text != "accept decline" || len(asked) != 2 {
		t.Errorf("CallTool(two_questions) = %+v, %v (asked %v)", res, err, asked)
	}
	if res, _ := guest.CallTool(nil, "two_questions", map[string]any{}); !res.IsError {
		t.Errorf("ElicitAll without the capability = %+v, want an error result", res)
	}
	m, err := guest.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tools []struct {
			Name      string         `json:"name"`
			Execution map[string]any `json:"execution"`
		} `json:"tools"`
	}
	json.Unmarshal(m, &doc)
	for _, tool := range doc.Tools {
		if tool.Name == "two_questions" && tool.Execution["taskStart"] != "guest" {
			t.Errorf("two_questions execution = %v, want taskStart guest", tool.Execution)
		}
	}
}

func TestProtocolError(t *testing.T) {
	_, err := guest.CallTool(nil, "crash", map[string]any{})
	var pe *guest.ProtocolError
	if !errors.As(err, &pe) || pe.Code != -32001 || pe.Message != "backend down" {
		t.Errorf("CallTool(crash) = %v, want the protocol error", err)
	}
}
