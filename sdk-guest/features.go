package guest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"sort"
	"strings"
	"time"
)

// Resource declares a resource at a fixed URI. URI and Name are required.
type Resource struct {
	URI         string // absolute, such as "test://static-text" or "file:///notes/a.txt"
	Name        string
	Title       string
	Description string
	MimeType    string
}

// ResourceTemplate declares a family of resources by an RFC 6570 URI template, such
// as "test://items/{id}". URITemplate and Name are required.
type ResourceTemplate struct {
	URITemplate string
	Name        string
	Title       string
	Description string
	MimeType    string
}

// ReadFunc reads a resource: uri is the requested URI; vars holds the template's
// variables taken from it (nil for a fixed resource, or for a template with
// operators other than simple {name} expressions).
type ReadFunc func(c *Call, uri string, vars map[string]string) ([]ResourceContents, error)

// Prompt declares a prompt template. Name is required (1-48 characters of
// A-Z a-z 0-9 _ -).
type Prompt struct {
	Name        string
	Title       string
	Description string
	Arguments   []PromptArgument
}

// PromptArgument is one argument of a prompt; its value is always a string.
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// PromptResult is what a prompt returns: MCP's GetPromptResult.
type PromptResult struct {
	Description string          `json:"description,omitempty"`
	Messages    []PromptMessage `json:"messages"`
}

// PromptMessage is one message of a prompt.
type PromptMessage struct {
	Role    string  `json:"role"` // user or assistant
	Content Content `json:"content"`
}

// CompleteRequest asks for completions of one argument of a prompt or one variable
// of a resource template.
type CompleteRequest struct {
	Prompt      string            // the prompt's name, or
	URITemplate string            // the template's URI template
	Argument    string            // the argument's or variable's name
	Value       string            // what the user typed so far
	Context     map[string]string // arguments already given; may be nil
}

// Completion is the answer: at most 100 values, best first.
type Completion struct {
	Values  []string `json:"values"`
	Total   int      `json:"total,omitempty"`   // how many exist in all; 0 means unknown
	HasMore bool     `json:"hasMore,omitempty"` // more exist than Values holds
}

type resourceEntry struct {
	decl Resource
	read ReadFunc
}

type templateEntry struct {
	decl ResourceTemplate
	read ReadFunc
}

type promptEntry struct {
	decl Prompt
	get  func(c *Call, args map[string]string) (*PromptResult, error)
}

var (
	resources []*resourceEntry
	templates []*templateEntry
	prompts   = map[string]*promptEntry{}
	completer func(c *Call, req CompleteRequest) (*Completion, error)
)

// AddResource registers a resource and the function that reads it. Like Add, it
// panics on a programming error, which refuses the plugin at load.
func AddResource(r Resource, read ReadFunc) {
	if r.URI == "" || r.Name == "" || !strings.Contains(r.URI, ":") {
		panic(fmt.Sprintf("guest.AddResource: %q needs an absolute URI and a name", r.URI))
	}
	for _, e := range resources {
		if e.decl.URI == r.URI {
			panic(fmt.Sprintf("guest.AddResource: %q registered twice", r.URI))
		}
	}
	resources = append(resources, &resourceEntry{r, read})
}

// AddResourceTemplate registers a resource template and the function that reads its
// resources. The host calls read only for URIs that match the template.
func AddResourceTemplate(t ResourceTemplate, read ReadFunc) {
	if t.URITemplate == "" || t.Name == "" || !strings.Contains(t.URITemplate, "{") {
		panic(fmt.Sprintf("guest.AddResourceTemplate: %q needs a URI template with a variable and a name", t.URITemplate))
	}
	for _, e := range templates {
		if e.decl.URITemplate == t.URITemplate {
			panic(fmt.Sprintf("guest.AddResourceTemplate: %q registered twice", t.URITemplate))
		}
	}
	templates = append(templates, &templateEntry{t, read})
}

// AddPrompt registers a prompt. The host checks that every required argument is
// given and no other, before get runs.
func AddPrompt(p Prompt, get func(c *Call, args map[string]string) (*PromptResult, error)) {
	if !validName(p.Name) {
		panic(fmt.Sprintf("guest.AddPrompt: invalid prompt name %q: use 1-48 characters of A-Z a-z 0-9 _ -", p.Name))
	}
	if _, dup := prompts[p.Name]; dup {
		panic(fmt.Sprintf("guest.AddPrompt: prompt %q registered twice", p.Name))
	}
	prompts[p.Name] = &promptEntry{p, get}
}

// HandleCompletion sets the function that completes the arguments of the plugin's
// prompts and the variables of its resource templates (MCP completion/complete).
// Without it the host answers no completions without running the plugin.
func HandleCompletion(fn func(c *Call, req CompleteRequest) (*Completion, error)) {
	completer = fn
}

// ResourceUpdated tells clients subscribed to uri (resources/subscribe) that it
// changed. uri must be one of the plugin's resources or match one of its templates.
func (c *Call) ResourceUpdated(uri string) error {
	_, err := c.backend.request("resource_updated", mustJSON(map[string]string{"uri": uri}))
	return err
}

// CloseStream asks the host to close the HTTP response stream of this call now and
// to tell the client to reconnect after retry (MCP 2025-11-25 SSE polling): the call
// goes on, and what it sends later, its result included, reaches the client when it
// reconnects. It returns ErrUnavailable where there is no such stream (stdio, a
// task, an older protocol version).
func (c *Call) CloseStream(retry time.Duration) error {
	_, err := c.backend.request("close_stream", mustJSON(map[string]int64{"retryMs": retry.Milliseconds()}))
	return err
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// MarshalJSON always writes text for a text item, even an empty one.
func (c Content) MarshalJSON() ([]byte, error) {
	type plain Content
	if c.Type != "text" {
		return json.Marshal(plain(c))
	}
	return json.Marshal(struct {
		plain
		Text string `json:"text"`
	}{plain(c), c.Text})
}

// MarshalJSON writes exactly one of text and blob: blob when Blob is not nil.
func (r ResourceContents) MarshalJSON() ([]byte, error) {
	type plain ResourceContents
	if r.Blob != nil {
		return json.Marshal(struct {
			plain
			Text string `json:"text,omitempty"`
			Blob []byte `json:"blob"`
		}{plain: plain(r), Blob: r.Blob})
	}
	return json.Marshal(struct {
		plain
		Text string `json:"text"`
	}{plain(r), r.Text})
}

// featuresManifest adds the resources, templates, prompts and the completions flag
// to the manifest m.
func featuresManifest(m map[string]any) {
	if len(resources) > 0 {
		type resource struct {
			URI         string `json:"uri"`
			Name        string `json:"name"`
			Title       string `json:"title,omitempty"`
			Description string `json:"description,omitempty"`
			MimeType    string `json:"mimeType,omitempty"`
		}
		var rs []resource
		for _, e := range resources {
			rs = append(rs, resource(e.decl))
		}
		m["resources"] = rs
	}
	if len(templates) > 0 {
		type template struct {
			URITemplate string `json:"uriTemplate"`
			Name        string `json:"name"`
			Title       string `json:"title,omitempty"`
			Description string `json:"description,omitempty"`
			MimeType    string `json:"mimeType,omitempty"`
		}
		var ts []template
		for _, e := range templates {
			ts = append(ts, template(e.decl))
		}
		m["resourceTemplates"] = ts
	}
	if len(prompts) > 0 {
		type prompt struct {
			Name        string           `json:"name"`
			Title       string           `json:"title,omitempty"`
			Description string           `json:"description,omitempty"`
			Arguments   []PromptArgument `json:"arguments,omitempty"`
		}
		names := make([]string, 0, len(prompts))
		for name := range prompts {
			names = append(names, name)
		}
		sort.Strings(names)
		var ps []prompt
		for _, name := range names {
			ps = append(ps, prompt(prompts[name].decl))
		}
		m["prompts"] = ps
	}
	if completer != nil {
		m["completions"] = true
	}
}

// dispatchMethod runs one method form of the call input.
func dispatchMethod(b backend, method string, params json.RawMessage) (out []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("%s panicked: %v\n%s", method, p, bytes.TrimSpace(debug.Stack()))
		}
	}()
	c := &Call{Method: method, backend: b}
	switch method {
	case "resources/read":
		var p struct {
			URI string `json:"uri"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, fmt.Errorf("malformed %s params: %w", method, err)
		}
		contents, err := readResource(c, p.URI)
		if err != nil {
			return nil, err
		}
		if contents == nil {
			contents = []ResourceContents{}
		}
		return json.Marshal(map[string]any{"contents": contents})
	case "prompts/get":
		var p struct {
			Name      string            `json:"name"`
			Arguments map[string]string `json:"arguments"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, fmt.Errorf("malformed %s params: %w", method, err)
		}
		e, ok := prompts[p.Name]
		if !ok {
			return nil, fmt.Errorf("unknown prompt %q", p.Name)
		}
		if p.Arguments == nil {
			p.Arguments = map[string]string{}
		}
		res, err := e.get(c, p.Arguments)
		if err != nil {
			return nil, err
		}
		if res == nil {
			return nil, fmt.Errorf("prompt %s returned a nil result", p.Name)
		}
		if res.Messages == nil {
			res.Messages = []PromptMessage{}
		}
		return json.Marshal(res)
	case "completion/complete":
		var p struct {
			Ref struct {
				Type string `json:"type"`
				Name string `json:"name"`
				URI  string `json:"uri"`
			} `json:"ref"`
			Argument struct {
				Name  string `json:"name"`
				Value string `json:"value"`
			} `json:"argument"`
			Context struct {
				Arguments map[string]string `json:"arguments"`
			} `json:"context"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, fmt.Errorf("malformed %s params: %w", method, err)
		}
		if completer == nil {
			return json.Marshal(map[string]any{"completion": Completion{Values: []string{}}})
		}
		req := CompleteRequest{Argument: p.Argument.Name, Value: p.Argument.Value, Context: p.Context.Arguments}
		if p.Ref.Type == "ref/prompt" {
			req.Prompt = p.Ref.Name
		} else {
			req.URITemplate = p.Ref.URI
		}
		res, err := completer(c, req)
		if err != nil {
			return nil, err
		}
		if res == nil {
			res = &Completion{}
		}
		if res.Values == nil {
			res.Values = []string{}
		}
		if len(res.Values) > 100 {
			res.Values, res.HasMore = res.Values[:100], true
		}
		return json.Marshal(map[string]any{"completion": res})
	}
	return nil, fmt.Errorf("unknown method %q", method)
}

func readResource(c *Call, uri string) ([]ResourceContents, error) {
	for _, e := range resources {
		if e.decl.URI == uri {
			return e.read(c, uri, nil)
		}
	}
	// Templates of simple expressions first: they match exactly. The host matched the
	// URI against every template in full, so one with operators is taken by its
	// literal prefix.
	for _, simple := range []bool{true, false} {
		for _, e := range templates {
			if simpleTemplate(e.decl.URITemplate) != simple {
				continue
			}
			if vars, ok := matchTemplate(e.decl.URITemplate, uri); ok {
				return e.read(c, uri, vars)
			}
		}
	}
	return nil, fmt.Errorf("resource %q not found", uri)
}

// simpleTemplate reports whether every expression of tmpl is a plain {name}.
func simpleTemplate(tmpl string) bool {
	for rest := tmpl; ; {
		i := strings.Index(rest, "{")
		if i < 0 {
			return true
		}
		j := strings.Index(rest[i:], "}")
		if j < 0 {
			return false
		}
		if expr := rest[i+1 : i+j]; expr == "" || strings.ContainsAny(expr, "+#./;?&=,!@|*:") {
			return false
		}
		rest = rest[i+j+1:]
	}
}

// matchTemplate matches uri against a template of literal text and simple {name}
// expressions, each standing for one or more characters other than '/'. For a
// template with other operators it compares only the literal text before the first
// expression and reports no vars.
func matchTemplate(tmpl, uri string) (map[string]string, bool) {
	if !simpleTemplate(tmpl) {
		return nil, strings.HasPrefix(uri, tmpl[:strings.Index(tmpl, "{")])
	}
	vars := map[string]string{}
	for tmpl != "" {
		i := strings.Index(tmpl, "{")
		if i < 0 {
			return vars, tmpl == uri
		}
		if !strings.HasPrefix(uri, tmpl[:i]) {
			return nil, false
		}
		uri, tmpl = uri[len(tmpl[:i]):], tmpl[i+1:]
		j := strings.Index(tmpl, "}")
		if j < 0 {
			return nil, false
		}
		name := tmpl[:j]
		tmpl = tmpl[j+1:]
		// The value runs to the next literal (or '/', or the end).
		next := len(uri)
		if k := strings.Index(tmpl, "{"); tmpl != "" {
			lit := tmpl
			if k >= 0 {
				lit = tmpl[:k]
			}
			if lit != "" {
				next = strings.Index(uri, lit)
			}
		}
		if s := strings.IndexByte(uri, '/'); s >= 0 && s < next {
			next = s
		}
		if next <= 0 {
			return nil, false
		}
		vars[name] = uri[:next]
		uri = uri[next:]
	}
	return vars, uri == ""
}
