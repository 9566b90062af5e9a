//go:build !wasip1

package guest

import (
	"encoding/json"
	"fmt"
)

// ReadResource reads a registered resource (or a URI of a registered template)
// natively, as the host would. A nil h is a zero TestHost.
func ReadResource(h *TestHost, uri string) ([]ResourceContents, error) {
	var res struct {
		Contents []ResourceContents `json:"contents"`
	}
	err := callMethod(h, "resources/read", map[string]string{"uri": uri}, &res)
	return res.Contents, err
}

// GetPrompt runs a registered prompt natively. A nil h is a zero TestHost.
func GetPrompt(h *TestHost, name string, args map[string]string) (*PromptResult, error) {
	var res PromptResult
	err := callMethod(h, "prompts/get", map[string]any{"name": name, "arguments": args}, &res)
	return &res, err
}

// Complete runs the completion handler natively. A nil h is a zero TestHost.
func Complete(h *TestHost, req CompleteRequest) (*Completion, error) {
	ref := map[string]string{"type": "ref/prompt", "name": req.Prompt}
	if req.Prompt == "" {
		ref = map[string]string{"type": "ref/resource", "uri": req.URITemplate}
	}
	var res struct {
		Completion Completion `json:"completion"`
	}
	err := callMethod(h, "completion/complete", map[string]any{"ref": ref,
		"argument": map[string]string{"name": req.Argument, "value": req.Value},
		"context":  map[string]any{"arguments": req.Context}}, &res)
	return &res.Completion, err
}

func callMethod(h *TestHost, method string, params any, out any) error {
	if h == nil {
		h = &TestHost{}
	}
	p, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("encode params: %w", err)
	}
	b, err := dispatchMethod(testBackend{h}, method, p)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("decode %s result: %w", method, err)
	}
	return nil
}
