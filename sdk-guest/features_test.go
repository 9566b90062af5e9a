package guest_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	guest "github.com/mcp-wasmhost/mcp-wasmhost/sdk-guest"
)

func init() {
	guest.AddResource(guest.Resource{URI: "mem://note", Name: "note", MimeType: "text/plain"},
		func(c *guest.Call, uri string, vars map[string]string) ([]guest.ResourceContents, error) {
			if vars != nil {
				return nil, errors.New("a fixed resource got variables")
			}
			return []guest.ResourceContents{{URI: uri, Text: ""}}, nil
		})
	guest.AddResourceTemplate(guest.ResourceTemplate{URITemplate: "mem://users/{user}/files/{file}", Name: "files"},
		func(c *guest.Call, uri string, vars map[string]string) ([]guest.ResourceContents, error) {
			if err := c.ResourceUpdated(uri); err != nil {
				return nil, err
			}
			return []guest.ResourceContents{{URI: uri, Blob: []byte(vars["user"] + "/" + vars["file"])}}, nil
		})
	guest.AddResourceTemplate(guest.ResourceTemplate{URITemplate: "mem://search{?q}", Name: "search"},
		func(c *guest.Call, uri string, vars map[string]string) ([]guest.ResourceContents, error) {
			return []guest.ResourceContents{{URI: uri, Text: "vars " + strings.Repeat("set", len(vars))}}, nil
		})
	guest.AddPrompt(guest.Prompt{Name: "review", Arguments: []guest.PromptArgument{{Name: "code", Required: true}}},
		func(c *guest.Call, args map[string]string) (*guest.PromptResult, error) {
			return &guest.PromptResult{Messages: []guest.PromptMessage{
				{Role: "user", Content: guest.Content{Type: "text", Text: "Review: " + args["code"]}},
				{Role: "assistant", Content: guest.Content{Type: "text"}},
			}}, nil
		})
	guest.HandleCompletion(func(c *guest.Call, req guest.CompleteRequest) (*guest.Completion, error) {
		var vals []string
		for i := range 150 {
			vals = append(vals, req.Prompt+req.URITemplate+"/"+req.Argument+"="+req.Value+strings.Repeat("x", i))
		}
		return &guest.Completion{Values: vals}, nil
	})
}

func TestFeaturesManifest(t *testing.T) {
	b, err := guest.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Resources         []map[string]any `json:"resources"`
		ResourceTemplates []map[string]any `json:"resourceTemplates"`
		Prompts           []map[string]any `json:"prompts"`
		Completions       bool             `json:"completions"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Resources) != 1 || m.Resources[0]["mimeType"] != "text/plain" || len(m.ResourceTemplates) != 2 || len(m.Prompts) != 1 || !m.Completions {
		t.Errorf("Manifest() = %s", b)
	}
}

func TestReadResource(t *testing.T) {
	h := &guest.TestHost{}
	got, err := guest.ReadResource(h, "mem://note")
	if err != nil || !reflect.DeepEqual(got, []guest.ResourceContents{{URI: "mem://note"}}) {
		t.Errorf("ReadResource(note) = %+v, %v", got, err)
	}
	got, err = guest.ReadResource(h, "mem://users/ada/files/a.txt")
	if err != nil || len(got) != 1 || string(got[0].Blob) != "ada/a.txt" {
		t.Errorf("ReadResource(template) = %+v, %v; want the variables ada and a.txt", got, err)
	}
	if u := h.Updated(); !reflect.DeepEqual(u, []string{"mem://users/ada/files/a.txt"}) {
		t.Errorf("Updated() = %q", u)
	}
	// A template with operators matches without variables: the host matched it.
	if got, err := guest.ReadResource(h, "mem://search?q=x"); err != nil || got[0].Text != "vars " {
		t.Errorf("ReadResource(search) = %+v, %v", got, err)
	}
	for _, uri := range []string{"mem://users/ada/files", "mem://users//files/a", "mem://other"} {
		if _, err := guest.ReadResource(h, uri); err == nil || !strings.Contains(err.Error(), "not found") {
			t.Errorf("ReadResource(%q) = %v, want not found", uri, err)
		}
	}
}

// The wire form: text is written even when empty, a blob instead of text.
func TestContentsJSON(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{guest.ResourceContents{URI: "a:b"}, `{"uri":"a:b","text":""}`},
		{guest.ResourceContents{URI: "a:b", Blob: []byte{}}, `{"uri":"a:b","blob":""}`},
		{guest.ResourceContents{URI: "a:b", Text: "t", Blob: []byte("x")}, `{"uri":"a:b","blob":"eA=="}`},
		{guest.Content{Type: "text"}, `{"type":"text","text":""}`},
		{guest.Content{Type: "image", Data: []byte("x"), MimeType: "image/png"}, `{"type":"image","data":"eA==","mimeType":"image/png"}`},
	} {
		b, err := json.Marshal(tc.v)
		if err != nil || string(b) != tc.want {
			t.Errorf("Marshal(%+v) = %s, %v; want %s", tc.v, b, err, tc.want)
		}
	}
}

func TestGetPrompt(t *testing.T) {
	res, err := guest.GetPrompt(nil, "review", map[string]string{"code": "x := 1"})
	if err != nil || len(res.Messages) != 2 || res.Messages[0].Content.Text != "Review: x := 1" {
		t.Errorf("GetPrompt = %+v, %v", res, err)
	}
	if _, err := guest.GetPrompt(nil, "nope", nil); err == nil {
		t.Error("GetPrompt(unknown) succeeded")
	}
}

func TestComplete(t *testing.T) {
	c, err := guest.Complete(nil, guest.CompleteRequest{Prompt: "review", Argument: "code", Value: "f"})
	if err != nil || len(c.Values) != 100 || !c.HasMore || c.Values[0] != "review/code=f" {
		t.Errorf("Complete = %d values, hasMore %v, first %q, %v; want 100 (capped), hasMore", len(c.Values), c.HasMore, c.Values[0], err)
	}
	c, err = guest.Complete(nil, guest.CompleteRequest{URITemplate: "mem://users/{user}/files/{file}", Argument: "user"})
	if err != nil || c.Values[0] != "mem://users/{user}/files/{file}/user=" {
		t.Errorf("Complete(template) = %v, %v", c.Values[:1], err)
	}
}

func TestCloseStreamOnTestHost(t *testing.T) {
	guest.Add(guest.Tool{Name: "closer"}, func(c *guest.Call, _ confirmArgs) (*guest.Result, error) {
		if err := c.CloseStream(0); !errors.Is(err, guest.ErrUnavailable) {
			return guest.Errorf("CloseStream = %v, want ErrUnavailable", err), nil
		}
		return guest.Text("ok"), nil
	})
	if r, err := guest.CallTool(nil, "closer", nil); err != nil || r.IsError {
		t.Errorf("closer = %+v, %v", r, err)
	}
}
