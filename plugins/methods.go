package plugins

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// The call input of the features after tools is a method form,
// {"method": ..., "params": {...}}, beside the tool form {"tool", "arguments"};
// a guest receives only the methods of features it declared (docs/ABI.md).
const (
	MethodReadResource = "resources/read"
	MethodGetPrompt    = "prompts/get"
	MethodComplete     = "completion/complete"
)

// maxCompletionValues is MCP's cap on completion values in one answer.
const maxCompletionValues = 100

// ParamsError says why a request was refused before the guest ran (JSON-RPC -32602).
type ParamsError struct{ Reason string }

func (e *ParamsError) Error() string { return e.Reason }

// callMethod runs one method form in a fresh instance and checks the output is a
// JSON object; check validates it further.
func (p *Plugin) callMethod(ctx context.Context, method string, params any, h sandbox.Host, check func([]byte) error) (json.RawMessage, error) {
	input, err := json.Marshal(struct {
		Method string `json:"method"`
		Params any    `json:"params"`
	}{method, params})
	if err != nil {
		return nil, fmt.Errorf("encode %s for plugin %q: %w", method, p.Name, err)
	}
	if max := p.Module.Limits().MaxInputBytes; len(input) > max {
		return nil, &ParamsError{fmt.Sprintf("%s: request of %d bytes exceeds the plugin's limit of %d", method, len(input), max)}
	}
	out, err := p.Module.Call(ctx, input, h)
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(out) {
		err = errors.New("not valid UTF-8")
	} else {
		err = check(out)
	}
	if err != nil {
		return nil, &sandbox.GuestError{Kind: sandbox.KindOutput,
			Message: fmt.Sprintf("plugin %q answered %s with a malformed result: %v", p.Name, method, err)}
	}
	return out, nil
}

// Read runs resources/read for uri, which is the resource's own URI or, for a
// template, one of its matches. The result is MCP's ReadResourceResult, checked.
func (p *Plugin) Read(ctx context.Context, uri string, h sandbox.Host) (json.RawMessage, error) {
	return p.callMethod(ctx, MethodReadResource, map[string]string{"uri": uri}, h, checkReadResult)
}

// Get runs prompts/get with args (nil means none), which must name only the prompt's
// arguments and give every required one. The result is MCP's GetPromptResult, checked.
func (pr *Prompt) Get(ctx context.Context, args map[string]string, h sandbox.Host) (json.RawMessage, error) {
	for name, v := range args {
		if _, ok := pr.argument(name); !ok {
			return nil, &ParamsError{fmt.Sprintf("prompt %q has no argument %q", pr.Name, name)}
		}
		if !utf8.ValidString(v) {
			return nil, &ParamsError{fmt.Sprintf("prompt %q: argument %q is not UTF-8", pr.Name, name)}
		}
	}
	for _, a := range pr.Arguments {
		if _, ok := args[a.Name]; a.Required && !ok {
			return nil, &ParamsError{fmt.Sprintf("prompt %q: missing required argument %q", pr.Name, a.Name)}
		}
	}
	if args == nil {
		args = map[string]string{}
	}
	return pr.Plugin.callMethod(ctx, MethodGetPrompt, struct {
		Name      string            `json:"name"`
		Arguments map[string]string `json:"arguments"`
	}{pr.GuestName, args}, h, checkPromptResult)
}

// CompleteRequest is a completion/complete request routed to one plugin, with the
// reference already resolved to the plugin's own names.
type CompleteRequest struct {
	Prompt   *Prompt           // the prompt whose argument is completed, or
	Template *ResourceTemplate // the template whose variable is completed
	Argument string            // the argument's (variable's) name
	Value    string            // what the user typed so far
	Context  map[string]string // arguments already resolved; nil means none
}

// Complete asks the plugin for completions. A plugin that declared no completions
// answers no values without running.
func (p *Plugin) Complete(ctx context.Context, req CompleteRequest, h sandbox.Host) (json.RawMessage, error) {
	ref := map[string]string{}
	switch {
	case req.Prompt != nil && req.Prompt.Plugin == p:
		if _, ok := req.Prompt.argument(req.Argument); !ok {
			return nil, &ParamsError{fmt.Sprintf("prompt %q has no argument %q", req.Prompt.Name, req.Argument)}
		}
		ref["type"], ref["name"] = "ref/prompt", req.Prompt.GuestName
	case req.Template != nil && req.Template.Plugin == p:
		known := false
		for _, v := range req.Template.Variables() {
			known = known || v == req.Argument
		}
		if !known {
			return nil, &ParamsError{fmt.Sprintf("resource template %q has no variable %q", req.Template.URITemplate, req.Argument)}
		}
		ref["type"], ref["uri"] = "ref/resource", req.Template.URITemplate
	default:
		return nil, errors.New("completion request for another plugin")
	}
	if !utf8.ValidString(req.Value) {
		return nil, &ParamsError{"argument value is not UTF-8"}
	}
	if !p.Completions {
		return json.RawMessage(`{"completion":{"values":[]}}`), nil
	}
	params := map[string]any{"ref": ref, "argument": map[string]string{"name": req.Argument, "value": req.Value}}
	if req.Context != nil {
		params["context"] = map[string]any{"arguments": req.Context}
	}
	return p.callMethod(ctx, MethodComplete, params, h, checkCompleteResult)
}

// Owns reports whether uri is one of the plugin's resources or matches one of its
// templates: a plugin may announce updates only of its own resources.
func (p *Plugin) Owns(uri string) bool {
	for _, r := range p.Resources {
		if r.URI == uri {
			return true
		}
	}
	for _, t := range p.Templates {
		if t.Match(uri) {
			return true
		}
	}
	return false
}

// resourceContents is one item of a ReadResourceResult or an embedded resource.
type resourceContents struct {
	URI      string          `json:"uri"`
	MimeType string          `json:"mimeType"`
	Text     *string         `json:"text"`
	Blob     *string         `json:"blob"`
	Meta     json.RawMessage `json:"_meta"`
}

func (c *resourceContents) check() error {
	switch {
	case c.URI == "":
		return errors.New("uri is required")
	case (c.Text == nil) == (c.Blob == nil):
		return errors.New("exactly one of text and blob is required")
	case c.Blob != nil:
		if _, err := base64.StdEncoding.DecodeString(*c.Blob); err != nil {
			return fmt.Errorf("blob is not base64: %v", err)
		}
	}
	if c.Meta != nil && !isObject(c.Meta) {
		return errors.New("_meta must be a JSON object")
	}
	return nil
}

func checkReadResult(out []byte) error {
	var res struct {
		Contents []resourceContents `json:"contents"`
		Meta     json.RawMessage    `json:"_meta"`
	}
	if err := strictDecode(out, &res); err != nil {
		return err
	}
	if res.Contents == nil {
		return errors.New("contents is required")
	}
	for i := range res.Contents {
		if err := res.Contents[i].check(); err != nil {
			return fmt.Errorf("contents[%d]: %w", i, err)
		}
	}
	return nil
}

// checkContent checks one MCP content block (text, image, audio, resource,
// resource_link).
func checkContent(raw json.RawMessage) error {
	var c struct {
		Type        string            `json:"type"`
		Text        *string           `json:"text"`
		Data        *string           `json:"data"`
		MimeType    string            `json:"mimeType"`
		Resource    *resourceContents `json:"resource"`
		URI         string            `json:"uri"`
		Name        string            `json:"name"`
		Title       string            `json:"title"`
		Description string            `json:"description"`
		Size        *int64            `json:"size"`
		Icons       json.RawMessage   `json:"icons"`
		Annotations json.RawMessage   `json:"annotations"`
		Meta        json.RawMessage   `json:"_meta"`
	}
	if err := strictDecode(raw, &c); err != nil {
		return err
	}
	switch c.Type {
	case "text":
		if c.Text == nil {
			return errors.New("text content without text")
		}
	case "image", "audio":
		if c.Data == nil || c.MimeType == "" {
			return fmt.Errorf("%s content needs data and mimeType", c.Type)
		}
		if _, err := base64.StdEncoding.DecodeString(*c.Data); err != nil {
			return fmt.Errorf("%s data is not base64: %v", c.Type, err)
		}
	case "resource":
		if c.Resource == nil {
			return errors.New("resource content without resource")
		}
		if err := c.Resource.check(); err != nil {
			return fmt.Errorf("resource: %w", err)
		}
	case "resource_link":
		if c.URI == "" || c.Name == "" {
			return errors.New("resource_link content needs uri and name")
		}
	default:
		return fmt.Errorf("unknown content type %q", c.Type)
	}
	if c.Annotations != nil {
		if err := checkDescriptive("-", "", "", "", c.Annotations); err != nil {
			return err
		}
	}
	return nil
}

func checkPromptResult(out []byte) error {
	var res struct {
		Description string `json:"description"`
		Messages    []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Meta json.RawMessage `json:"_meta"`
	}
	if err := strictDecode(out, &res); err != nil {
		return err
	}
	if res.Messages == nil {
		return errors.New("messages is required")
	}
	for i, m := range res.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return fmt.Errorf("messages[%d]: role %q is not user or assistant", i, m.Role)
		}
		if err := checkContent(m.Content); err != nil {
			return fmt.Errorf("messages[%d].content: %w", i, err)
		}
	}
	return nil
}

func checkCompleteResult(out []byte) error {
	var res struct {
		Completion *struct {
			Values  []string `json:"values"`
			Total   *int     `json:"total"`
			HasMore *bool    `json:"hasMore"`
		} `json:"completion"`
		Meta json.RawMessage `json:"_meta"`
	}
	if err := strictDecode(out, &res); err != nil {
		return err
	}
	switch {
	case res.Completion == nil || res.Completion.Values == nil:
		return errors.New("completion.values is required")
	case len(res.Completion.Values) > maxCompletionValues:
		return fmt.Errorf("%d completion values, at most %d allowed", len(res.Completion.Values), maxCompletionValues)
	case res.Completion.Total != nil && *res.Completion.Total < len(res.Completion.Values):
		return errors.New("completion.total is less than the number of values")
	}
	return nil
}
