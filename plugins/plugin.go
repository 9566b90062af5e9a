package plugins

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"time"
	"unicode/utf8"

	"github.com/mcp-wasmhost/mcp-wasmhost/egress"
	"github.com/mcp-wasmhost/mcp-wasmhost/plugins/manifests"
	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
	"github.com/mcp-wasmhost/mcp-wasmhost/worker"
)

// MaxToolNameLen is the longest tool name offered to clients; many clients cap names at 64.
const MaxToolNameLen = 64

// Spec is one plugin as the operator configured it.
type Spec struct {
	Name string // [a-z][a-z0-9-]*: contains no '_', which separates it from tool names
	// Prefix is put before the plugin's tool and prompt names, joined with '_'. ""
	// means Name, unless Unprefixed is set.
	Prefix string // [a-z][a-z0-9-]* like Name
	// Unprefixed offers the plugin's tools and prompts under the names the guest
	// declares, with no prefix (config: prefix = ""). false means prefixed.
	Unprefixed bool
	Path       string // the .wasm file
	SHA256     string // the file's pinned digest, lowercase hex
	Limits     sandbox.Limits
	Grants     sandbox.Grants
	// Workers runs the plugin in a worker process it supervises. Nil runs the plugin
	// in this process, which only a trusted plugin may do: in process, a hostile guest
	// can stall the server (package worker explains why).
	Workers *worker.Supervisor
	// Processes is how many worker processes share the plugin's calls (with Workers);
	// 0 means [worker.DefaultProcesses].
	Processes int
	// Admission bounds the plugin's concurrent and queued calls; the zero value means
	// the defaults (see [Admission]).
	Admission Admission
	// InputTimeout bounds one wait of a call for an answer to a request for input;
	// 0 means [DefaultInputTimeout].
	InputTimeout time.Duration
	// Net makes the guest's "http" requests under the plugin's network policy. Nil
	// means the plugin reaches no network.
	Net *egress.Client
	// Manifests caches the plugin's describe (its ABI version and manifest) by the
	// module's sha256, so that a later load runs none of its code. Nil describes it at
	// every load, as does a plugin with directory grants.
	Manifests *manifests.Cache
}

// DefaultInputTimeout is how long a call waits for an answer to a request for input
// when its plugin names no InputTimeout: approvals take minutes or hours.
const DefaultInputTimeout = time.Hour

// Runner runs a plugin's guest code, each call in a fresh instance: in this process
// (*sandbox.Module) or in a worker process (*worker.Module).
type Runner interface {
	Describe(ctx context.Context) ([]byte, error)
	Call(ctx context.Context, input []byte, h sandbox.Host) ([]byte, error)
	Limits() sandbox.Limits
	Instances() int64  // calls started so far
	Live() int64       // instances that may still exist
	LiveMemory() int64 // bytes of linear memory the live instances hold
	Close(ctx context.Context) error
}

var (
	_ Runner = (*sandbox.Module)(nil)
	_ Runner = (*worker.Module)(nil)
)

// Plugin is a loaded plugin and what it offers.
type Plugin struct {
	Name string
	// Prefix is joined with '_' before tool and prompt names; "" offers them as the
	// guest declares them.
	Prefix      string
	Module      Runner
	Isolated    bool // runs in a worker process
	Tools       []*Tool
	Resources   []*Resource
	Templates   []*ResourceTemplate
	Prompts     []*Prompt
	Completions bool // the guest completes its prompts' and templates' arguments
	// InputTimeout bounds one wait for an answer to a request for input (never 0).
	InputTimeout time.Duration
	// Net makes the guest's "http" requests; nil means no network.
	Net *egress.Client
}

// qualify returns the name clients see for a tool or prompt the guest calls name.
func (p *Plugin) qualify(name string) string {
	if p.Prefix == "" {
		return name
	}
	return p.Prefix + "_" + name
}

// TaskSupport says whether a tool may or must run as an MCP Task.
type TaskSupport string

// Values of TaskSupport.
const (
	TaskForbidden TaskSupport = "forbidden"
	TaskOptional  TaskSupport = "optional"
	TaskRequired  TaskSupport = "required"
)

// Tool is one tool of a plugin.
type Tool struct {
	Name         string // as clients see it: <plugin>_<guest name>
	GuestName    string // as the guest declared it
	Plugin       *Plugin
	Title        string
	Description  string
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage // nil when the tool declares none
	Annotations  json.RawMessage // nil when the tool declares none
	TaskSupport  TaskSupport
	// GuestStartsTask: the guest itself says when the call becomes a task (the "task"
	// request, docs/ABI.md), for tools that ask for input before their long part.
	// Where the server decides (MCP 2026-07-28 Tasks extension) such a call starts
	// synchronously; elsewhere the request changes nothing.
	GuestStartsTask bool
	// Resumable: a task of the tool whose server or worker stops is started again
	// from the last checkpoint its guest saved (the "checkpoint" requests), with the
	// same arguments, not failed.
	Resumable bool

	input, output *Schema       // compiled at load (schema.go)
	headers       []ParamHeader // x-mcp-header annotations (mcpheader.go)
}

// Load verifies, compiles and describes one plugin. On error nothing stays loaded.
// With s.Manifests, a module described before is not run: its manifest comes from the
// cache, and only compiling and checking it remain.
func Load(ctx context.Context, e *sandbox.Engine, s Spec) (*Plugin, error) {
	b, err := os.ReadFile(s.Path)
	if err != nil {
		return nil, fmt.Errorf("plugin %q: %w", s.Name, err)
	}
	sum := sha256.Sum256(b)
	got := hex.EncodeToString(sum[:])
	if got != s.SHA256 {
		return nil, fmt.Errorf("plugin %q: %s has sha256 %s, but config pins %s; refusing to load it (update sha256 in config only if you trust the new file)",
			s.Name, s.Path, got, s.SHA256)
	}
	limits := s.Limits.WithDefaults()
	// Checked here, before a worker starts, so that the error is typed on both paths.
	if err := sandbox.CheckInitialMemory(s.Name, b, limits.MemoryMiB); err != nil {
		return nil, err
	}
	var key manifests.Key
	var cached []byte
	cache := s.Manifests
	if len(s.Grants.Dirs) > 0 {
		cache = nil // its describe may read the directories, which change
	}
	if cache != nil {
		key = manifests.Key{WasmSHA256: got, ABI: sandbox.ABIVersion, MemoryMiB: limits.MemoryMiB,
			Timeout: limits.Timeout, Env: s.Grants.Env}
		cached, _ = cache.Get(key)
	}
	p, doc, err := load(ctx, e, s, b, cached)
	if errors.Is(err, errCachedManifest) {
		// A manifest the cache holds but this host refuses: a forged entry. The module
		// itself decides: check its version and describe it.
		cache.Drop(key, err)
		cached = nil
		p, doc, err = load(ctx, e, s, b, nil)
	}
	if err != nil {
		return nil, err
	}
	if cache != nil && cached == nil {
		cache.Put(key, doc)
	}
	return p, nil
}

// errCachedManifest marks a cached manifest that does not parse.
var errCachedManifest = errors.New("cached manifest refused")

// load loads the module wasm of s and returns it with its manifest. With cached (a
// manifest the cache holds), it runs none of the module's code; otherwise it checks its
// ABI version and describes it.
func load(ctx context.Context, e *sandbox.Engine, s Spec, wasm, cached []byte) (_ *Plugin, _ []byte, err error) {
	known := cached != nil
	var m Runner
	if s.Workers != nil {
		m, err = s.Workers.Load(ctx, worker.Spec{Name: s.Name, Wasm: wasm, Limits: s.Limits, Grants: s.Grants,
			Processes: s.Processes, MaxConcurrent: s.Admission.WithDefaults(s.Limits.MemoryMiB).MaxConcurrent,
			VersionKnown: known})
	} else {
		m, err = e.Load(ctx, sandbox.Spec{Name: s.Name, Wasm: wasm, Limits: s.Limits, Grants: s.Grants, VersionKnown: known})
	}
	if err != nil {
		return nil, nil, err
	}
	m = Limit(s.Name, m, s.Admission)
	defer func() {
		if err != nil {
			m.Close(ctx)
		}
	}()
	doc := cached
	if doc == nil {
		if doc, err = m.Describe(ctx); err != nil {
			return nil, nil, fmt.Errorf("describe plugin %q: %w", s.Name, err)
		}
	}
	p := &Plugin{Name: s.Name, Prefix: s.Prefix, Module: m, Isolated: s.Workers != nil, InputTimeout: s.InputTimeout, Net: s.Net}
	if p.InputTimeout <= 0 {
		p.InputTimeout = DefaultInputTimeout
	}
	switch {
	case s.Unprefixed:
		p.Prefix = ""
	case s.Prefix == "":
		p.Prefix = s.Name
	}
	if p.Tools, err = parseManifest(p, doc); err != nil {
		if cached != nil {
			return nil, nil, fmt.Errorf("%w: %w", errCachedManifest, err)
		}
		return nil, nil, fmt.Errorf("plugin %q: manifest: %w", s.Name, err)
	}
	return p, doc, nil
}

// Close unloads the plugin and drops its idle network connections.
func (p *Plugin) Close(ctx context.Context) error {
	if p.Net != nil {
		p.Net.Close()
	}
	return p.Module.Close(ctx)
}

var toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,48}$`)

func parseManifest(p *Plugin, doc []byte) ([]*Tool, error) {
	if !utf8.Valid(doc) {
		return nil, errors.New("not valid UTF-8")
	}
	var m struct {
		features
		Tools []struct {
			Name         string          `json:"name"`
			Title        string          `json:"title"`
			Description  string          `json:"description"`
			InputSchema  json.RawMessage `json:"inputSchema"`
			OutputSchema json.RawMessage `json:"outputSchema"`
			Annotations  json.RawMessage `json:"annotations"`
			Execution    *struct {
				TaskSupport TaskSupport `json:"taskSupport"`
				TaskStart   string      `json:"taskStart"`
				Resumable   bool        `json:"resumable"`
			} `json:"execution"`
		} `json:"tools"`
	}
	d := json.NewDecoder(bytes.NewReader(doc))
	d.DisallowUnknownFields()
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	var tools []*Tool
	seen := map[string]bool{}
	var errs []error
	for i, decl := range m.Tools {
		t := &Tool{
			Name: p.qualify(decl.Name), GuestName: decl.Name, Plugin: p,
			Title: decl.Title, Description: decl.Description,
			InputSchema: decl.InputSchema, OutputSchema: decl.OutputSchema, Annotations: decl.Annotations,
			TaskSupport: TaskForbidden,
		}
		if decl.Execution != nil && decl.Execution.TaskSupport != "" {
			t.TaskSupport = decl.Execution.TaskSupport
		}
		taskStart := ""
		if decl.Execution != nil {
			taskStart = decl.Execution.TaskStart
			t.Resumable = decl.Execution.Resumable
		}
		switch taskStart {
		case "", "server":
		case "guest":
			t.GuestStartsTask = true
		default:
			errs = append(errs, fmt.Errorf("tools[%d] (%q): execution.taskStart %q is not server or guest", i, decl.Name, taskStart))
			continue
		}
		if err := t.prepare(seen); err != nil {
			errs = append(errs, fmt.Errorf("tools[%d] (%q): %w", i, decl.Name, err))
			continue
		}
		tools = append(tools, t)
	}
	if err := parseFeatures(p, m.features); err != nil {
		errs = append(errs, err)
	}
	return tools, errors.Join(errs...)
}

// prepare validates a declared tool and resolves its schemas.
func (t *Tool) prepare(seen map[string]bool) error {
	switch {
	case !toolNameRE.MatchString(t.GuestName):
		return errors.New("name must be 1-48 characters of A-Z a-z 0-9 _ -")
	case seen[t.GuestName]:
		return errors.New("declared twice")
	case len(t.Name) > MaxToolNameLen:
		return fmt.Errorf("full name %q is longer than %d characters; give the plugin a shorter name or prefix", t.Name, MaxToolNameLen)
	case t.GuestStartsTask && t.TaskSupport == TaskForbidden:
		return errors.New(`execution.taskStart "guest" needs taskSupport optional or required`)
	case t.Resumable && t.TaskSupport == TaskForbidden:
		return errors.New(`execution.resumable needs taskSupport optional or required`)
	case t.Resumable && t.GuestStartsTask:
		return errors.New(`execution.resumable needs taskStart "server": a call the guest moves into a task has no recipe to resume from`)
	case !utf8.ValidString(t.Title) || !utf8.ValidString(t.Description):
		return errors.New("title and description must be UTF-8")
	}
	switch t.TaskSupport {
	case TaskForbidden, TaskOptional, TaskRequired:
	default:
		return fmt.Errorf("execution.taskSupport %q is not forbidden, optional or required", t.TaskSupport)
	}
	seen[t.GuestName] = true
	var err error
	if t.input, err = compileSchema(t.InputSchema); err != nil {
		return fmt.Errorf("inputSchema: %w", err)
	}
	if t.headers, err = paramHeaders(t.InputSchema); err != nil {
		return fmt.Errorf("inputSchema: %w", err)
	}
	if t.OutputSchema != nil {
		if t.output, err = compileSchema(t.OutputSchema); err != nil {
			return fmt.Errorf("outputSchema: %w", err)
		}
	}
	if t.Annotations != nil && !isObject(t.Annotations) {
		return errors.New("annotations must be a JSON object")
	}
	return nil
}

func isObject(raw json.RawMessage) bool {
	t := bytes.TrimLeft(raw, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}
