package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"

	"github.com/mcp-wasmhost/mcp-wasmhost/host"
	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
)

// runCall is `mcp-wasmhost call`: one tool call (or resources/read, prompts/get)
// through the server's own loading, worker, checks and limits, with an in-memory
// MCP client that prints what the server sends and answers its requests.
func runCall(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcp-wasmhost call", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var pf pluginFlags
	pf.register(fs, true)
	answersFile := fs.String("answers", "", "answer elicitation and sampling from this file: JSON lines or a JSON array of {\"action\",\"content\"} or {\"text\",\"model\"}, in order")
	asJSON := fs.Bool("json", false, "print logs, progress and the result as JSON lines on stdout")
	resource := fs.String("resource", "", "read this resource URI instead of calling a tool")
	prompt := fs.String("prompt", "", "get this prompt instead of calling a tool; ARGS is a JSON object of its string arguments")
	asTask := fs.Bool("task", false, "run the tool as a task even if it may also run in the request (a tool whose taskSupport is required always runs as one)")
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: mcp-wasmhost call [flags] PLUGIN.wasm TOOL [ARGS-JSON]
       mcp-wasmhost call [flags] PLUGIN.wasm --resource URI
       mcp-wasmhost call [flags] PLUGIN.wasm --prompt NAME [ARGS-JSON]
       mcp-wasmhost call --config FILE [flags] PLUGIN-NAME TOOL [ARGS-JSON]

Runs one tool as the server would and prints the result on stdout; logs, progress
and a task's status changes go to stderr. A tool whose taskSupport is "required"
runs as a task (--task: any tool that supports one). Exits 1 if the tool fails, 2 on
bad usage.

flags:
`)
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &exitError{code: 2, err: err}
	}
	var target, tool, argsJSON string
	switch {
	case *resource != "" && *prompt != "":
		return usage("call: --resource and --prompt exclude each other")
	case *asTask && (*resource != "" || *prompt != ""):
		return usage("call: --task runs a tool, not --resource or --prompt")
	case *resource != "":
		if len(pos) != 1 {
			fs.Usage()
			return usage("call --resource: want PLUGIN only, got %d arguments", len(pos))
		}
		target = pos[0]
	default:
		want := "PLUGIN TOOL [ARGS-JSON]"
		if *prompt != "" {
			want = "PLUGIN [ARGS-JSON]"
			pos = slices.Insert(pos, min(1, len(pos)), *prompt)
		}
		if len(pos) < 2 || len(pos) > 3 {
			fs.Usage()
			return usage("call: want %s", want)
		}
		target, tool = pos[0], pos[1]
		argsJSON = "{}"
		if len(pos) == 3 {
			argsJSON = pos[2]
		}
	}
	var arguments map[string]any
	if argsJSON != "" {
		d := json.NewDecoder(strings.NewReader(argsJSON))
		d.UseNumber()
		if err := d.Decode(&arguments); err != nil || arguments == nil || d.More() {
			return usage("call: arguments %q are not a JSON object", argsJSON)
		}
	}

	out := &printer{stdout: stdout, stderr: stderr, json: *asJSON}
	answers := &answerer{out: out}
	if *answersFile != "" {
		if answers.script, err = readAnswers(*answersFile); err != nil {
			return usage("call --answers: %v", err)
		}
		answers.source = *answersFile
	} else if isTerminal(stdin) {
		answers.ask = bufio.NewReader(stdin)
	}

	cfg, i, err := pf.pluginConfig(target)
	if err != nil {
		return err
	}
	logger, err := stderrLogger(pf.logLevel, stderr)
	if err != nil {
		return err
	}
	l, err := loadPlugin(ctx, cfg, i, logger)
	if err != nil {
		return err
	}
	defer l.Close(context.WithoutCancel(ctx))

	var name string // the tool's, as a client sees it
	var clientEnd mcp.Transport
	clientEnd, serverEnd := mcp.NewInMemoryTransports()
	if *resource == "" && *prompt == "" {
		name = resolveName(l, tool, false)
		if t, ok := l.catalog.Lookup(name); ok {
			switch {
			case *asTask && t.TaskSupport == plugins.TaskForbidden:
				return usage("call --task: tool %s does not support tasks (taskSupport forbidden)", tool)
			case *asTask || t.TaskSupport == plugins.TaskRequired:
				clientEnd = &taskTransport{inner: clientEnd, tool: name, out: out}
			}
		}
	}

	srv, err := host.New(l.catalog, host.Options{Name: l.cfg.Server.Name, Version: version(), Logger: logger})
	if err != nil {
		return err
	}
	defer srv.Close(context.WithoutCancel(ctx))
	ss, err := srv.Connect(ctx, serverEnd)
	if err != nil {
		return err
	}
	defer ss.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "mcp-wasmhost-call", Version: version()}, &mcp.ClientOptions{
		ElicitationHandler:   answers.elicit,
		CreateMessageHandler: answers.sample,
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			out.event("log", r.Params, fmt.Sprintf("[%s] %v", r.Params.Level, r.Params.Data))
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			p := r.Params
			text := fmt.Sprintf("progress %g", p.Progress)
			if p.Total > 0 {
				text += fmt.Sprintf("/%g", p.Total)
			}
			if p.Message != "" {
				text += " " + p.Message
			}
			out.event("progress", p, text)
		},
	})
	// 2025-11-25, as most clients speak it: elicitation and sampling are requests
	// to the client, logs and progress notifications.
	cs, err := client.Connect(ctx, clientEnd, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return err
	}
	defer cs.Close()
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		return err
	}

	switch {
	case *resource != "":
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: *resource})
		if err != nil {
			return fmt.Errorf("resources/read %s: %w", *resource, err)
		}
		return out.resource(res)
	case *prompt != "":
		strs := map[string]string{}
		for k, v := range arguments {
			s, ok := v.(string)
			if !ok {
				return usage("call --prompt: argument %q is %T; prompt arguments are strings", k, v)
			}
			strs[k] = s
		}
		res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: resolveName(l, tool, true), Arguments: strs})
		if err != nil {
			return fmt.Errorf("prompts/get %s: %w", tool, err)
		}
		return out.prompt(res)
	}
	params := &mcp.CallToolParams{Name: name, Arguments: arguments}
	params.SetProgressToken("call")
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		return fmt.Errorf("tools/call %s: %w", tool, err)
	}
	return out.result(tool, res)
}

// resolveName accepts the name a client sees or the name the guest declared.
func resolveName(l *loadedPlugin, name string, prompt bool) string {
	if prompt {
		for _, p := range l.catalog.Prompts() {
			if p.Name == name || p.GuestName == name {
				return p.Name
			}
		}
		return name
	}
	if _, ok := l.catalog.Lookup(name); ok {
		return name
	}
	for _, t := range l.catalog.Tools() {
		if t.GuestName == name {
			return t.Name
		}
	}
	return name
}

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	// /dev/null is a character device too: only a terminal answers TCGETS.
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// printer writes what the server sends: logs and progress on stderr and the result
// on stdout, or every one of them as a JSON line on stdout.
type printer struct {
	mu             sync.Mutex
	stdout, stderr io.Writer
	json           bool
}

// event prints a notification or a note of call's own.
func (p *printer) event(kind string, v any, text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.json {
		b, _ := json.Marshal(map[string]any{"type": kind, kind: v})
		fmt.Fprintf(p.stdout, "%s\n", b)
		return
	}
	fmt.Fprintln(p.stderr, text)
}

func (p *printer) final(kind string, v any) {
	b, _ := json.Marshal(map[string]any{"type": kind, kind: v})
	fmt.Fprintf(p.stdout, "%s\n", b)
}

// result prints a tool result and turns isError into exit code 1 with its reason.
func (p *printer) result(tool string, r *mcp.CallToolResult) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var text []string
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			text = append(text, t.Text)
			continue
		}
		b, _ := json.Marshal(c)
		text = append(text, string(b))
	}
	if p.json {
		p.final("result", r)
	} else if !r.IsError {
		for _, t := range text {
			fmt.Fprintln(p.stdout, t)
		}
		if len(r.Content) == 0 && r.StructuredContent != nil {
			b, _ := json.MarshalIndent(r.StructuredContent, "", "  ")
			fmt.Fprintf(p.stdout, "%s\n", b)
		}
	}
	if r.IsError {
		return fmt.Errorf("tool %s failed: %s", tool, strings.Join(text, "\n"))
	}
	return nil
}

func (p *printer) resource(r *mcp.ReadResourceResult) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.json {
		p.final("resource", r)
		return nil
	}
	for _, c := range r.Contents {
		if c.Blob != nil {
			fmt.Fprintf(p.stdout, "%s: %d bytes of %s (use --json for the bytes)\n", c.URI, len(c.Blob), c.MIMEType)
			continue
		}
		fmt.Fprintln(p.stdout, c.Text)
	}
	return nil
}

func (p *printer) prompt(r *mcp.GetPromptResult) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.json {
		p.final("prompt", r)
		return nil
	}
	for _, m := range r.Messages {
		if t, ok := m.Content.(*mcp.TextContent); ok {
			fmt.Fprintf(p.stdout, "%s: %s\n", m.Role, t.Text)
			continue
		}
		b, _ := json.Marshal(m.Content)
		fmt.Fprintf(p.stdout, "%s: %s\n", m.Role, b)
	}
	return nil
}

// scriptedAnswer is one scripted answer: to an elicitation (Action, Content) or to a
// sampling request (Text, Model).
type scriptedAnswer struct {
	Action  string         `json:"action,omitempty"` // accept, decline or cancel
	Content map[string]any `json:"content,omitempty"`
	Text    *string        `json:"text,omitempty"`  // the model's reply
	Model   string         `json:"model,omitempty"` // "" means "scripted"
}

// readAnswers reads a JSON array of answers or one answer per line.
func readAnswers(path string) ([]scriptedAnswer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var raws []json.RawMessage
	var where []string
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '[' {
		if err := json.Unmarshal(t, &raws); err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		for i := range raws {
			where = append(where, fmt.Sprintf("%s: answer %d", path, i+1))
		}
	} else {
		for n, line := range bytes.Split(b, []byte("\n")) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			raws = append(raws, line)
			where = append(where, fmt.Sprintf("%s:%d", path, n+1))
		}
	}
	out := make([]scriptedAnswer, len(raws))
	for i, raw := range raws {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.DisallowUnknownFields()
		if err := d.Decode(&out[i]); err != nil {
			return nil, fmt.Errorf("%s: %v", where[i], err)
		}
		a := out[i]
		switch {
		case a.Action != "" && a.Text != nil:
			return nil, fmt.Errorf("%s: an answer has action (elicitation) or text (sampling), not both", where[i])
		case a.Text != nil:
		case a.Action == "accept" || a.Action == "decline" || a.Action == "cancel":
		default:
			return nil, fmt.Errorf("%s: want {\"action\": \"accept\"|\"decline\"|\"cancel\", \"content\": {...}} or {\"text\": \"...\"}", where[i])
		}
	}
	return out, nil
}

// answerer answers the server's requests for input: from a script, by asking on the
// terminal, or (neither) by declining.
type answerer struct {
	out    *printer
	source string // the script's file
	ask    *bufio.Reader

	mu     sync.Mutex
	script []scriptedAnswer
	used   int
}

func (a *answerer) next() (scriptedAnswer, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.used == len(a.script) {
		return scriptedAnswer{}, false
	}
	a.used++
	return a.script[a.used-1], true
}

func (a *answerer) elicit(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	msg := r.Params.Message
	switch {
	case a.source != "":
		ans, ok := a.next()
		if !ok {
			a.out.event("note", map[string]string{"declined": msg}, fmt.Sprintf("elicitation declined: %s has no answer left for %q", a.source, msg))
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
		if ans.Action == "" {
			return nil, fmt.Errorf("answer %d of %s is a sampling answer, but the plugin asked for elicitation: %q", a.used, a.source, msg)
		}
		a.out.event("note", map[string]any{"elicitation": msg, "answer": ans.Action}, fmt.Sprintf("elicitation %q: %s (%s answer %d)", msg, ans.Action, a.source, a.used))
		return &mcp.ElicitResult{Action: ans.Action, Content: ans.Content}, nil
	case a.ask != nil:
		return a.askElicit(msg, r.Params.RequestedSchema)
	}
	a.out.event("note", map[string]string{"declined": msg}, fmt.Sprintf("elicitation declined (no --answers file, and stdin is not a terminal): %q", msg))
	return &mcp.ElicitResult{Action: "decline"}, nil
}

func (a *answerer) sample(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	var prompt []string
	for _, m := range r.Params.Messages {
		if t, ok := m.Content.(*mcp.TextContent); ok {
			prompt = append(prompt, fmt.Sprintf("%s: %s", m.Role, t.Text))
		}
	}
	reply := func(text, model string) *mcp.CreateMessageResult {
		if model == "" {
			model = "scripted"
		}
		return &mcp.CreateMessageResult{Content: &mcp.TextContent{Text: text}, Model: model, Role: "assistant"}
	}
	switch {
	case a.source != "":
		ans, ok := a.next()
		if !ok {
			return nil, fmt.Errorf("sampling declined: %s has no answer left", a.source)
		}
		if ans.Text == nil {
			return nil, fmt.Errorf("answer %d of %s is an elicitation answer, but the plugin asked for sampling", a.used, a.source)
		}
		a.out.event("note", map[string]any{"sampling": prompt, "answer": *ans.Text}, fmt.Sprintf("sampling answered from %s (answer %d)", a.source, a.used))
		return reply(*ans.Text, ans.Model), nil
	case a.ask != nil:
		fmt.Fprintf(a.out.stderr, "The plugin asks the model (system: %q):\n  %s\nReply: ", r.Params.SystemPrompt, strings.Join(prompt, "\n  "))
		line, err := a.ask.ReadString('\n')
		if err != nil && line == "" {
			return nil, fmt.Errorf("sampling: no reply read: %w", err)
		}
		return reply(strings.TrimRight(line, "\r\n"), "terminal"), nil
	}
	a.out.event("note", map[string]any{"declined": prompt}, "sampling declined (no --answers file, and stdin is not a terminal)")
	return nil, errors.New("sampling declined: no --answers file, and stdin is not a terminal")
}

// askElicit asks the person at the terminal: accept, decline or cancel, then each
// field of the requested schema.
func (a *answerer) askElicit(msg string, schema any) (*mcp.ElicitResult, error) {
	w := a.out.stderr
	fmt.Fprintf(w, "The plugin asks: %s\nAnswer [a]ccept, [d]ecline or [c]ancel (default accept): ", msg)
	line, err := a.ask.ReadString('\n')
	if err != nil && line == "" {
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "d", "decline":
		return &mcp.ElicitResult{Action: "decline"}, nil
	case "c", "cancel":
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}
	var s struct {
		Properties map[string]struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Default any    `json:"default"`
		} `json:"properties"`
	}
	b, _ := json.Marshal(schema)
	json.Unmarshal(b, &s)
	content := map[string]any{}
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		p := s.Properties[name]
		for {
			fmt.Fprintf(w, "  %s (%s", name, p.Type)
			if p.Title != "" {
				fmt.Fprintf(w, ", %s", p.Title)
			}
			if p.Default != nil {
				fmt.Fprintf(w, ", default %v", p.Default)
			}
			fmt.Fprint(w, "): ")
			line, err := a.ask.ReadString('\n')
			line = strings.TrimSpace(line)
			if line == "" {
				if p.Default != nil {
					content[name] = p.Default
				}
				break
			}
			v, perr := typedValue(p.Type, line)
			if perr == nil {
				content[name] = v
				break
			}
			fmt.Fprintln(w, "  ", perr)
			if err != nil {
				break
			}
		}
	}
	return &mcp.ElicitResult{Action: "accept", Content: content}, nil
}

// typedValue reads a terminal answer as the schema's type.
func typedValue(typ, s string) (any, error) {
	switch typ {
	case "boolean":
		switch strings.ToLower(s) {
		case "y", "yes", "true":
			return true, nil
		case "n", "no", "false":
			return false, nil
		}
		return nil, fmt.Errorf("%q: answer yes or no", s)
	case "integer":
		return strconv.ParseInt(s, 10, 64)
	case "number":
		return strconv.ParseFloat(s, 64)
	}
	return s, nil
}
