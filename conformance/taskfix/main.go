// Command taskfix is the fixture plugin for the task scenarios of the MCP conformance
// suite (@modelcontextprotocol/conformance 0.2.0-alpha.12, tasks-*): the tools the
// scenarios call by name, with the behaviour they expect. conformance/config.toml
// serves it with prefix = "", so clients see the names below as they are.
//
// Build (from the repository root): make plugins
package main

import (
	"fmt"
	"strings"
	"time"

	guest "github.com/mcp-wasmhost/mcp-wasmhost/sdk-guest"
)

func main() {}

type greetArgs struct {
	Name string `json:"name" jsonschema:"who to greet"`
}

type slowArgs struct {
	Seconds float64 `json:"seconds" jsonschema:"how long to work, in seconds (0: at once)"`
	Label   string  `json:"label,omitempty" jsonschema:"a label echoed in the result"`
}

type confirmArgs struct {
	Filename string `json:"filename" jsonschema:"the file to delete"`
}

type none struct{}

var confirmSchema = map[string]any{
	"type":       "object",
	"properties": map[string]any{"confirm": map[string]any{"type": "boolean", "description": "Delete it?"}},
	"required":   []string{"confirm"},
}

var nameSchema = map[string]any{
	"type":       "object",
	"properties": map[string]any{"name": map[string]any{"type": "string", "description": "Your name"}},
	"required":   []string{"name"},
}

func init() {
	guest.Add(guest.Tool{Name: "greet", Description: "Says hello at once (never a task)."},
		func(c *guest.Call, in greetArgs) (*guest.Result, error) {
			return guest.Text("Hello, " + in.Name + "!"), nil
		})

	guest.Add(guest.Tool{Name: "slow_compute", Description: "Works for the given seconds, then answers; may run as a task.",
		TaskSupport: guest.TaskOptional},
		func(c *guest.Call, in slowArgs) (*guest.Result, error) {
			if in.Seconds < 0 || in.Seconds > 600 {
				return guest.Errorf("seconds must be 0-600, got %v", in.Seconds), nil
			}
			// In short naps: a cancelled call is torn down at its next host call, and
			// one long sleep is a single host call that does not return early.
			for end := time.Now().Add(time.Duration(in.Seconds * float64(time.Second))); time.Now().Before(end); {
				time.Sleep(min(20*time.Millisecond, time.Until(end)))
			}
			return guest.Text(fmt.Sprintf("Computed %q after %vs", in.Label, in.Seconds)), nil
		})

	guest.Add(guest.Tool{Name: "failing_job", Description: "Runs as a task and reports a tool error after about a second.",
		TaskSupport: guest.TaskRequired},
		func(c *guest.Call, _ none) (*guest.Result, error) {
			time.Sleep(time.Second)
			return guest.Errorf("the job failed: the input data is inconsistent"), nil
		})

	guest.Add(guest.Tool{Name: "protocol_error_job", Description: "Fails as a request (a JSON-RPC error), not as a tool result.",
		TaskSupport: guest.TaskOptional},
		func(c *guest.Call, _ none) (*guest.Result, error) {
			return nil, &guest.ProtocolError{Code: -32603, Message: "internal error: the job's backend crashed"}
		})

	guest.Add(guest.Tool{Name: "confirm_delete", Description: "Asks the user to confirm, then (pretends to) delete a file.",
		TaskSupport: guest.TaskOptional},
		func(c *guest.Call, in confirmArgs) (*guest.Result, error) {
			r, err := c.Elicit("Delete "+in.Filename+"?", confirmSchema)
			if err != nil {
				return nil, err
			}
			if r.Accepted() && r.Content["confirm"] == true {
				return guest.Text("Deleted " + in.Filename), nil
			}
			return guest.Text("Kept " + in.Filename + " (" + r.Action + ")"), nil
		})

	guest.Add(guest.Tool{Name: "multi_input", Description: "Asks two questions at once and reports both answers.",
		TaskSupport: guest.TaskOptional},
		func(c *guest.Call, _ none) (*guest.Result, error) {
			rs, err := c.ElicitAll(
				guest.ElicitRequest{Message: "What is your name?", RequestedSchema: nameSchema},
				guest.ElicitRequest{Message: "Proceed?", RequestedSchema: confirmSchema},
			)
			if err != nil {
				return nil, err
			}
			parts := make([]string, len(rs))
			for i, r := range rs {
				parts[i] = fmt.Sprintf("%d: %s %v", i+1, r.Action, r.Content)
			}
			return guest.Text("Answers: " + strings.Join(parts, "; ")), nil
		})

	guest.Add(guest.Tool{Name: "test_tool_with_task", Description: "Asks for your name, then greets you from a task.",
		TaskSupport: guest.TaskRequired, StartsTask: true},
		func(c *guest.Call, _ none) (*guest.Result, error) {
			r, err := c.Elicit("What is your user_name?", nameSchema)
			if err != nil {
				return nil, err
			}
			name, _ := r.Content["name"].(string)
			if !r.Accepted() || name == "" {
				return guest.Errorf("no name given (%s)", r.Action), nil
			}
			if _, err := c.StartTask(); err != nil {
				return nil, err
			}
			time.Sleep(200 * time.Millisecond) // the long part
			return guest.Text("Hello, " + name + "! (from the task)"), nil
		})
}
