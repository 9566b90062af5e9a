package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
)

// bridge carries one call's guest requests to the MCP session that made the call.
type bridge struct {
	session       *mcp.ServerSession
	tool          *plugins.Tool                // the tool called, or nil for a resource read, prompt or completion
	plugin        *plugins.Plugin              // with a nil tool: the plugin that serves the request
	label         string                       // with a nil tool: what the request is, for logs
	closeStream   func(mcp.CloseSSEStreamArgs) // nil where the call has no resumable HTTP stream
	logger        *slog.Logger
	progressToken any
	task          *tasks.Handle // nil outside a task
	owner         string        // the task's owner, with task
	srv           *Server       // with task

	mu           sync.Mutex
	lastProgress float64
	sentProgress bool
}

var _ sandbox.Host = (*bridge)(nil)

// name is what the guest serves, for logs: the tool, or the label of the request.
func (b *bridge) name() string {
	if b.tool != nil {
		return b.tool.Name
	}
	return b.label
}

// servedBy is the plugin the guest is.
func (b *bridge) servedBy() *plugins.Plugin {
	if b.tool != nil {
		return b.tool.Plugin
	}
	return b.plugin
}

var mcpLevels = map[sandbox.Level]mcp.LoggingLevel{
	sandbox.LevelDebug:   "debug",
	sandbox.LevelInfo:    "info",
	sandbox.LevelNotice:  "notice",
	sandbox.LevelWarning: "warning",
	sandbox.LevelError:   "error",
}

var slogLevels = map[sandbox.Level]slog.Level{
	sandbox.LevelDebug:   slog.LevelDebug,
	sandbox.LevelInfo:    slog.LevelInfo,
	sandbox.LevelNotice:  slog.LevelInfo,
	sandbox.LevelWarning: slog.LevelWarn,
	sandbox.LevelError:   slog.LevelError,
}

func (b *bridge) Log(ctx context.Context, level sandbox.Level, msg string) {
	b.logger.Log(ctx, slogLevels[level], "guest log", "tool", b.name(), "msg", msg)
	// The session drops messages below the level the client set with logging/setLevel.
	err := b.session.Log(ctx, &mcp.LoggingMessageParams{Level: mcpLevels[level], Logger: b.name(), Data: msg})
	if err != nil {
		b.logger.DebugContext(ctx, "log notification not delivered", "tool", b.name(), "err", err)
	}
}

func (b *bridge) Progress(ctx context.Context, progress, total float64, msg string) {
	if b.progressToken == nil {
		return
	}
	b.mu.Lock()
	// MCP requires progress to increase; a report that does not is dropped.
	if b.sentProgress && progress <= b.lastProgress {
		b.mu.Unlock()
		return
	}
	b.lastProgress, b.sentProgress = progress, true
	b.mu.Unlock()
	p := &mcp.ProgressNotificationParams{ProgressToken: b.progressToken, Progress: progress, Message: msg}
	if total > 0 {
		p.Total = total
	}
	if err := b.session.NotifyProgress(ctx, p); err != nil {
		b.logger.DebugContext(ctx, "progress notification not delivered", "tool", b.name(), "err", err)
	}
}

func (b *bridge) Request(ctx context.Context, method string, params []byte) ([]byte, error) {
	switch method {
	case "elicit":
		return b.elicit(ctx, params)
	case "sample":
		return b.sample(ctx, params)
	case "resource_updated":
		return b.resourceUpdated(ctx, params)
	case "close_stream":
		return b.closeStreamRequest(params)
	}
	return nil, sandbox.ErrUnsupported
}

// sample asks the client's model for a completion (sampling/createMessage). Inside a
// task it goes the way of user input: input_required until the client answers.
func (b *bridge) sample(ctx context.Context, params []byte) ([]byte, error) {
	var p mcp.CreateMessageParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, fmt.Errorf("sample params: %w", err)
	}
	if len(p.Messages) == 0 || p.MaxTokens <= 0 {
		return nil, errors.New("sample params: messages and a positive maxTokens are required")
	}
	init := b.session.InitializeParams()
	if init == nil || init.Capabilities == nil || init.Capabilities.Sampling == nil {
		return nil, sandbox.ErrUnavailable
	}
	p.Meta = nil // _meta is the host's to set, never the guest's
	if b.task == nil {
		res, err := b.session.CreateMessage(ctx, &p)
		if err != nil {
			return nil, err
		}
		return json.Marshal(res)
	}
	p.Meta = mcp.Meta{relatedTaskKey: map[string]string{"taskId": b.task.ID()}}
	return b.ask(ctx, "sampling/createMessage", &p)
}

// ask sends a request to the client on behalf of a task (see Server.deliverInput) and
// waits for the answer.
func (b *bridge) ask(ctx context.Context, method string, params any) ([]byte, error) {
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	return b.task.Ask(ctx, method, raw, func(in *tasks.Input) {
		go b.srv.deliverInput(ctx, b.session, b.owner, b.task.ID(), in)
	})
}

func (b *bridge) elicit(ctx context.Context, params []byte) ([]byte, error) {
	var p struct {
		Message         string          `json:"message"`
		RequestedSchema json.RawMessage `json:"requestedSchema"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, fmt.Errorf("elicit params: %w", err)
	}
	if p.Message == "" {
		return nil, errors.New("elicit params: message is required")
	}
	init := b.session.InitializeParams()
	if init == nil || init.Capabilities == nil || init.Capabilities.Elicitation == nil {
		return nil, sandbox.ErrUnavailable
	}
	ep := &mcp.ElicitParams{Message: p.Message}
	if len(p.RequestedSchema) > 0 {
		var schema map[string]any
		if err := json.Unmarshal(p.RequestedSchema, &schema); err != nil {
			return nil, fmt.Errorf("elicit params: requestedSchema: %w", err)
		}
		ep.RequestedSchema = schema
	}
	var res *mcp.ElicitResult
	if b.task == nil {
		r, err := b.session.Elicit(ctx, ep)
		if err != nil {
			return nil, err
		}
		res = r
	} else {
		r, err := b.elicitInTask(ctx, ep)
		if err != nil {
			return nil, err
		}
		res = r
	}
	return json.Marshal(struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content,omitempty"`
	}{res.Action, res.Content})
}

// elicitInTask asks for input on behalf of a task: the task moves to input_required
// and the request goes to the client at once on the session (stdio, or the HTTP
// standalone stream); a waiting tasks/result also carries it. The first answer wins.
func (b *bridge) elicitInTask(ctx context.Context, ep *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	ep.Meta = mcp.Meta{relatedTaskKey: map[string]string{"taskId": b.task.ID()}}
	reply, err := b.ask(ctx, "elicitation/create", ep)
	if err != nil {
		return nil, err
	}
	var res mcp.ElicitResult
	if err := json.Unmarshal(reply, &res); err != nil {
		return nil, fmt.Errorf("elicitation reply: %w", err)
	}
	return &res, nil
}
