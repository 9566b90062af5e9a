package guest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"sort"
)

// ABIVersion is the guest ABI version this package implements.
const ABIVersion = 1

// TaskSupport says whether clients may run a tool as an MCP Task.
type TaskSupport string

// Values of TaskSupport.
const (
	TaskForbidden TaskSupport = "forbidden" // never as a task (the default)
	TaskOptional  TaskSupport = "optional"  // as a task or directly, as the client chooses
	TaskRequired  TaskSupport = "required"  // only as a task
)

// Tool declares a tool. Name is required; the rest is optional.
type Tool struct {
	Name         string          // 1-48 characters of A-Z a-z 0-9 _ -
	Title        string          // a human-friendly name
	Description  string          // what the tool does, for the model
	InputSchema  json.RawMessage // nil: inferred from the argument type
	OutputSchema json.RawMessage // nil: no structured output is promised
	Annotations  *Annotations
	TaskSupport  TaskSupport // "": forbidden
	// StartsTask: the tool calls [Call.StartTask] itself when its long part begins
	// (after asking for input, say). Where the server decides when a call becomes a
	// task (MCP 2026-07-28), the call runs synchronously until then. Needs TaskSupport
	// optional or required.
	StartsTask bool
	// Resumable: a task of the tool whose server or worker process stops under it is
	// started again, with the same arguments, from the last checkpoint it saved
	// ([Call.SaveCheckpoint], read back with [Call.Checkpoint]), instead of failing.
	// The tool must then tolerate running its steps since that checkpoint twice.
	// Needs TaskSupport optional or required, and not StartsTask.
	Resumable bool
}

// Annotations are hints about a tool's behaviour (MCP ToolAnnotations).
type Annotations struct {
	ReadOnlyHint    bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	IdempotentHint  bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool `json:"openWorldHint,omitempty"`
}

// Result is what a tool returns: MCP's CallToolResult.
type Result struct {
	Content           []Content `json:"content"`
	StructuredContent any       `json:"structuredContent,omitempty"`
	IsError           bool      `json:"isError,omitempty"`
}

// Content is one item of a result's content.
type Content struct {
	Type     string            `json:"type"`               // text, image, audio, resource or resource_link
	Text     string            `json:"text,omitempty"`     // text
	Data     []byte            `json:"data,omitempty"`     // image, audio (base64 on the wire)
	MimeType string            `json:"mimeType,omitempty"` // image, audio, resource_link
	Resource *ResourceContents `json:"resource,omitempty"` // resource
	URI      string            `json:"uri,omitempty"`      // resource_link
	Name     string            `json:"name,omitempty"`     // resource_link
}

// ResourceContents is an embedded resource: Text or Blob.
type ResourceContents struct {
	URI      string `json:"uri"`
	MimeType string `json:"mimeType,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     []byte `json:"blob,omitempty"`
}

// Text returns a result with one text item.
func Text(s string) *Result {
	return &Result{Content: []Content{{Type: "text", Text: s}}}
}

// Errorf returns a tool error: a result with isError set, which the model sees.
func Errorf(format string, args ...any) *Result {
	r := Text(fmt.Sprintf(format, args...))
	r.IsError = true
	return r
}

// Structured returns a result whose structuredContent is v, with v's JSON as its text
// (clients that do not read structured content still see it).
func Structured(v any) (*Result, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode structured content: %w", err)
	}
	return &Result{Content: []Content{{Type: "text", Text: string(b)}}, StructuredContent: json.RawMessage(b)}, nil
}

// Image appends an image item to r and returns r.
func (r *Result) Image(data []byte, mimeType string) *Result {
	r.Content = append(r.Content, Content{Type: "image", Data: data, MimeType: mimeType})
	return r
}

// Audio appends an audio item to r and returns r.
func (r *Result) Audio(data []byte, mimeType string) *Result {
	r.Content = append(r.Content, Content{Type: "audio", Data: data, MimeType: mimeType})
	return r
}

// Resource appends an embedded resource to r and returns r.
func (r *Result) Resource(res ResourceContents) *Result {
	r.Content = append(r.Content, Content{Type: "resource", Resource: &res})
	return r
}

// registered is a tool with its handler, bound to decode its own argument type.
type registered struct {
	tool Tool
	call func(c *Call, args json.RawMessage) (*Result, error)
}

// tools is the plugin's tool set. Registration happens in init, before the host calls
// any export, and the instance serves one call, so no lock is needed.
var tools = map[string]*registered{}

// Add registers a tool whose arguments decode into In. It panics on a programming
// error (a duplicate or invalid name, an argument type that is not a struct or map):
// the host then refuses the plugin at load with the panic's message.
func Add[In any](t Tool, fn func(c *Call, in In) (*Result, error)) {
	if !validName(t.Name) {
		panic(fmt.Sprintf("guest.Add: invalid tool name %q: use 1-48 characters of A-Z a-z 0-9 _ -", t.Name))
	}
	if _, dup := tools[t.Name]; dup {
		panic(fmt.Sprintf("guest.Add: tool %q registered twice", t.Name))
	}
	if t.InputSchema == nil {
		s, err := schemaFor(reflect.TypeFor[In]())
		if err != nil {
			panic(fmt.Sprintf("guest.Add(%q): %v", t.Name, err))
		}
		t.InputSchema = s
	}
	tools[t.Name] = &registered{tool: t, call: func(c *Call, args json.RawMessage) (*Result, error) {
		var in In
		if len(args) > 0 {
			if err := json.Unmarshal(args, &in); err != nil {
				return Errorf("invalid arguments for %s: %v", t.Name, err), nil
			}
		}
		return fn(c, in)
	}}
}

func validName(s string) bool {
	if len(s) == 0 || len(s) > 48 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// manifest builds the document mcpwh_describe writes.
func manifest() ([]byte, error) {
	type execution struct {
		TaskSupport TaskSupport `json:"taskSupport"`
		TaskStart   string      `json:"taskStart,omitempty"`
		Resumable   bool        `json:"resumable,omitempty"`
	}
	type tool struct {
		Name         string          `json:"name"`
		Title        string          `json:"title,omitempty"`
		Description  string          `json:"description,omitempty"`
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
		Annotations  *Annotations    `json:"annotations,omitempty"`
		Execution    *execution      `json:"execution,omitempty"`
	}
	names := make([]string, 0, len(tools))
	for name := range tools {
		names = append(names, name)
	}
	sort.Strings(names)
	ts := []tool{}
	for _, name := range names {
		t := tools[name].tool
		d := tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema,
			OutputSchema: t.OutputSchema, Annotations: t.Annotations}
		if t.TaskSupport != "" {
			d.Execution = &execution{TaskSupport: t.TaskSupport}
			if t.StartsTask {
				d.Execution.TaskStart = "guest"
			}
			d.Execution.Resumable = t.Resumable
		}
		ts = append(ts, d)
	}
	m := map[string]any{"tools": ts}
	featuresManifest(m)
	return json.Marshal(m)
}

// dispatch runs one call: input is the ABI's call document. It returns the output
// document; a non-nil error means the guest itself failed (status 1).
func dispatch(b backend, input []byte) (out []byte, err error) {
	var req struct {
		Tool      string          `json:"tool"`
		Arguments json.RawMessage `json:"arguments"`
		Method    string          `json:"method"`
		Params    json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(input, &req); err != nil {
		return nil, fmt.Errorf("malformed call document: %w", err)
	}
	if req.Method != "" {
		return dispatchMethod(b, req.Method, req.Params)
	}
	r, ok := tools[req.Tool]
	if !ok {
		return json.Marshal(Errorf("unknown tool %q", req.Tool))
	}
	defer func() {
		if p := recover(); p != nil {
			out, err = json.Marshal(Errorf("tool %s panicked: %v\n%s", req.Tool, p, bytes.TrimSpace(debug.Stack())))
		}
	}()
	res, err := r.call(&Call{Tool: req.Tool, backend: b}, req.Arguments)
	var perr *ProtocolError
	if errors.As(err, &perr) {
		return json.Marshal(struct {
			Error *ProtocolError `json:"error"`
		}{perr})
	}
	if err != nil {
		res = Errorf("%v", err)
	}
	if res == nil {
		return nil, errors.New("tool " + req.Tool + " returned a nil result")
	}
	if res.Content == nil {
		res.Content = []Content{}
	}
	return json.Marshal(res)
}
