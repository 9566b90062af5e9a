// Command fix2026 is the fixture plugin for the MCP 2026-07-28 scenarios of the
// conformance suite (@modelcontextprotocol/conformance 0.2.0-alpha.12,
// `--requirements 2026-07-28`): the tools, prompt and resource those scenarios call
// by name, with the behaviour they expect. conformance/config.toml serves it with
// prefix = "", so clients see the names below as they are.
//
// Requests for input go through Call.Ask (guest ABI v1.3) under the keys the
// scenarios name; on 2026-07-28 the host turns them into InputRequiredResult.
//
// Build (from the repository root): make plugins
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	guest "github.com/mcp-wasmhost/mcp-wasmhost/sdk-guest"
)

func main() {}

type none struct{}

// noArgs is the input schema of a tool without arguments.
var noArgs = json.RawMessage(`{"type":"object","properties":{}}`)

// object is a form schema of string (or boolean) properties, all required.
func object(props map[string]string) map[string]any {
	p := map[string]any{}
	var req []string
	for name, typ := range props {
		p[name] = map[string]any{"type": typ}
		req = append(req, name)
	}
	return map[string]any{"type": "object", "properties": p, "required": req}
}

var (
	askName    = guest.ElicitInput("What is your name?", object(map[string]string{"name": "string"}))
	askConfirm = guest.ElicitInput("Please confirm", object(map[string]string{"ok": "boolean"}))
)

func sample(text string, maxTokens int) guest.InputRequest {
	return guest.SampleInput(guest.SampleRequest{MaxTokens: maxTokens,
		Messages: []guest.SampleMessage{{Role: "user", Content: guest.Content{Type: "text", Text: text}}}})
}

// ask makes the requests and returns the answers, or a tool error naming what failed.
func ask(c *guest.Call, reqs map[string]guest.InputRequest) (*guest.Answers, *guest.Result) {
	a, err := c.Ask(reqs)
	if err != nil {
		return nil, guest.Errorf("input: %v", err)
	}
	return a, nil
}

func field(a *guest.Answers, key, name string) string {
	r, err := a.Elicit(key)
	if err != nil || !r.Accepted() {
		return ""
	}
	return fmt.Sprint(r.Content[name])
}

func sampled(a *guest.Answers, key string) string {
	r, err := a.Sample(key)
	if err != nil {
		return ""
	}
	return r.Content.Text
}

func roots(a *guest.Answers, key string) string {
	rs, err := a.Roots(key)
	if err != nil {
		return "none"
	}
	var uris []string
	for _, r := range rs {
		uris = append(uris, r.URI)
	}
	return strings.Join(uris, ", ")
}

func tool(name, description string, fn func(*guest.Call, none) (*guest.Result, error)) {
	guest.Add(guest.Tool{Name: name, Description: description, InputSchema: noArgs}, fn)
}

func init() {
	// The header scenario calls the first tool listed with {}: this one sorts first.
	tool("about", "Says what this fixture is (takes no arguments)", func(*guest.Call, none) (*guest.Result, error) {
		return guest.Text("mcp-wasmhost fixture for the MCP 2026-07-28 conformance scenarios"), nil
	})

	tool("test_missing_capability", "Needs sampling: without it declared in the request, -32021",
		func(c *guest.Call, _ none) (*guest.Result, error) {
			a, err := c.Ask(map[string]guest.InputRequest{"completion": sample("Say hello", 20)})
			if errors.Is(err, guest.ErrUnavailable) {
				return nil, &guest.ProtocolError{Code: -32021, Message: "this tool needs the client's sampling capability",
					Data: map[string]any{"requiredCapabilities": map[string]any{"sampling": map[string]any{}}}}
			}
			if err != nil {
				return guest.Errorf("input: %v", err), nil
			}
			return guest.Text("sampled: " + sampled(a, "completion")), nil
		})

	tool("test_input_required_result_elicitation", "Asks the user's name (key user_name), then greets",
		func(c *guest.Call, _ none) (*guest.Result, error) {
			a, res := ask(c, map[string]guest.InputRequest{"user_name": askName})
			if res != nil {
				return res, nil
			}
			return guest.Text("Hello, " + field(a, "user_name", "name") + "!"), nil
		})

	tool("test_input_required_result_sampling", "Asks the client's model (key capital_question)",
		func(c *guest.Call, _ none) (*guest.Result, error) {
			a, res := ask(c, map[string]guest.InputRequest{"capital_question": sample("What is the capital of France?", 100)})
			if res != nil {
				return res, nil
			}
			return guest.Text("The model said: " + sampled(a, "capital_question")), nil
		})

	tool("test_input_required_result_list_roots", "Asks the client's roots (key client_roots)",
		func(c *guest.Call, _ none) (*guest.Result, error) {
			a, res := ask(c, map[string]guest.InputRequest{"client_roots": guest.RootsInput()})
			if res != nil {
				return res, nil
			}
			return guest.Text("Roots: " + roots(a, "client_roots")), nil
		})

	tool("test_input_required_result_request_state", "Asks to confirm (key confirm); the answer comes back with the signed requestState",
		func(c *guest.Call, _ none) (*guest.Result, error) {
			a, res := ask(c, map[string]guest.InputRequest{"confirm": askConfirm})
			if res != nil {
				return res, nil
			}
			return guest.Text("state-ok: confirmed " + field(a, "confirm", "ok")), nil
		})

	tool("test_input_required_result_multiple_inputs", "Asks three things at once: elicitation, sampling and roots",
		func(c *guest.Call, _ none) (*guest.Result, error) {
			a, res := ask(c, map[string]guest.InputRequest{
				"user_name":    askName,
				"greeting":     sample("Generate a greeting", 50),
				"client_roots": guest.RootsInput(),
			})
			if res != nil {
				return res, nil
			}
			return guest.Text(fmt.Sprintf("name: %s; greeting: %s; roots: %s",
				field(a, "user_name", "name"), sampled(a, "greeting"), roots(a, "client_roots"))), nil
		})

	tool("test_input_required_result_multi_round", "Asks in two rounds (step1: name, step2: colour)",
		func(c *guest.Call, _ none) (*guest.Result, error) {
			a1, res := ask(c, map[string]guest.InputRequest{"step1": guest.ElicitInput("Step 1: What is your name?",
				object(map[string]string{"name": "string"}))})
			if res != nil {
				return res, nil
			}
			a2, res := ask(c, map[string]guest.InputRequest{"step2": guest.ElicitInput("Step 2: What is your favorite color?",
				object(map[string]string{"color": "string"}))})
			if res != nil {
				return res, nil
			}
			return guest.Text(field(a1, "step1", "name") + " likes " + field(a2, "step2", "color")), nil
		})

	tool("test_input_required_result_tampered_state", "Asks to confirm; a requestState that was altered is refused (-32602)",
		func(c *guest.Call, _ none) (*guest.Result, error) {
			a, res := ask(c, map[string]guest.InputRequest{"confirm": askConfirm})
			if res != nil {
				return res, nil
			}
			return guest.Text("confirmed " + field(a, "confirm", "ok")), nil
		})

	tool("test_input_required_result_capabilities", "Asks by elicitation and sampling, each only if the client declared it",
		func(c *guest.Call, _ none) (*guest.Result, error) {
			a, err := c.Ask(map[string]guest.InputRequest{"user_name": askName, "greeting": sample("Generate a greeting", 50)})
			if errors.Is(err, guest.ErrUnavailable) {
				return guest.Text("the client declared neither elicitation nor sampling"), nil
			}
			if err != nil {
				return guest.Errorf("input: %v", err), nil
			}
			return guest.Text(fmt.Sprintf("name: %q; greeting: %q", field(a, "user_name", "name"), sampled(a, "greeting"))), nil
		})

	tool("test_streaming_elicitation", "Reports progress, then asks for input (never as a request on the stream)",
		func(c *guest.Call, _ none) (*guest.Result, error) {
			c.Progress(1, 2, "about to ask")
			a, res := ask(c, map[string]guest.InputRequest{"user_name": askName})
			if res != nil {
				return res, nil
			}
			c.Progress(2, 2, "answered")
			return guest.Text("Hello, " + field(a, "user_name", "name") + "!"), nil
		})

	tool("test_logging_tool", "Logs three lines; the client sees them only if its request set a logLevel",
		func(c *guest.Call, _ none) (*guest.Result, error) {
			c.Log(guest.LevelInfo, "test_logging_tool started")
			c.Log(guest.LevelWarning, "test_logging_tool is halfway")
			c.Log(guest.LevelInfo, "test_logging_tool done")
			return guest.Text("logged 3 lines"), nil
		})

	// SEP-2243: region is mirrored into the Mcp-Param-Region header, which the
	// server checks against the body.
	guest.Add(guest.Tool{Name: "test_header_param", Description: "Echoes region, sent also as the Mcp-Param-Region header",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region",` +
			`"description":"a region name"}},"required":["region"]}`)},
		func(c *guest.Call, in struct {
			Region string `json:"region"`
		}) (*guest.Result, error) {
			return guest.Text("region: " + in.Region), nil
		})

	guest.AddPrompt(guest.Prompt{Name: "test_input_required_result_prompt",
		Description: "Asks what context to use (key user_context), then builds the prompt"},
		func(c *guest.Call, _ map[string]string) (*guest.PromptResult, error) {
			a, err := c.Ask(map[string]guest.InputRequest{"user_context": guest.ElicitInput("What context should the prompt use?",
				object(map[string]string{"context": "string"}))})
			if err != nil {
				return nil, err
			}
			return &guest.PromptResult{Messages: []guest.PromptMessage{{Role: "user",
				Content: guest.Content{Type: "text", Text: "Use this context: " + field(a, "user_context", "context")}}}}, nil
		})

	guest.AddResource(guest.Resource{URI: "test://stateless-static-text", Name: "stateless-static-text",
		Description: "A fixed text, read without any session", MimeType: "text/plain"},
		func(*guest.Call, string, map[string]string) ([]guest.ResourceContents, error) {
			return []guest.ResourceContents{{URI: "test://stateless-static-text", MimeType: "text/plain",
				Text: "This is a static text resource served statelessly."}}, nil
		})

	// resources/read may answer InputRequiredResult too (SEP-2322). Its URI does not
	// sort first: the caching scenario reads resources[0] and wants a complete result.
	guest.AddResource(guest.Resource{URI: "test://with-input", Name: "with-input",
		Description: "Asks which greeting to show (key greeting_word), then shows it", MimeType: "text/plain"},
		func(c *guest.Call, uri string, _ map[string]string) ([]guest.ResourceContents, error) {
			a, err := c.Ask(map[string]guest.InputRequest{"greeting_word": guest.ElicitInput("Which greeting?",
				object(map[string]string{"word": "string"}))})
			if err != nil {
				return nil, err
			}
			return []guest.ResourceContents{{URI: uri, MimeType: "text/plain", Text: field(a, "greeting_word", "word") + ", world"}}, nil
		})
}
