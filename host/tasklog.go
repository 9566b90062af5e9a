package host

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
)

// A task's journal (docs/ABI.md, "Task logs and checkpoints"): the live log its
// guest writes (task_log), which clients read as a resource while the task runs,
// and the checkpoint a resumable tool's guest saves (checkpoint_save) and reads back
// after a resume (checkpoint_load).
const (
	logURIPrefix = "mcp-wasmhost://tasks/"
	logURISuffix = "/log"
	// logTemplate is the resource template of every task's log; offset (bytes since
	// the log's first byte ever written) reads its tail.
	logTemplate = "mcp-wasmhost://tasks/{taskId}/log{?offset}"
	// logMetaKey names the log's URI in a task's _meta.
	logMetaKey = "io.github.mcp-wasmhost/log"
	// maxLogRead bounds the text one resources/read of a log returns; the next read
	// goes on from the offset its _meta gives (next), and more says whether there is
	// more to read (docs/ABI.md documents both).
	maxLogRead = 256 << 10
	// logNotifyEvery bounds how often a log's subscribers are told it grew: a guest
	// appending lines in a loop sends one notification per interval, not per line.
	logNotifyEvery = 100 * time.Millisecond
)

// logURI is the resource URI of task id's log.
func logURI(id string) string { return logURIPrefix + id + logURISuffix }

// parseLogURI reads a task log URI (logTemplate): the task ID and the offset (0 when
// absent). ok is false for any other URI.
func parseLogURI(uri string) (id string, offset int64, ok bool, err error) {
	rest, found := strings.CutPrefix(uri, logURIPrefix)
	if !found {
		return "", 0, false, nil
	}
	path, query, _ := strings.Cut(rest, "?")
	id, found = strings.CutSuffix(path, logURISuffix)
	if !found || id == "" || strings.ContainsAny(id, "/%") {
		return "", 0, false, nil
	}
	if query != "" {
		q, err := url.ParseQuery(query)
		if err != nil {
			return id, 0, true, fmt.Errorf("task log %s: bad query: %v", uri, err)
		}
		for k := range q {
			if k != "offset" {
				return id, 0, true, fmt.Errorf("task log %s: unknown parameter %q (only offset)", uri, k)
			}
		}
		if v := q.Get("offset"); v != "" {
			if offset, err = strconv.ParseInt(v, 10, 64); err != nil || offset < 0 {
				return id, 0, true, fmt.Errorf("task log %s: offset must be a whole number of bytes, 0 or more", uri)
			}
		}
	}
	return id, offset, true, nil
}

// logMeta is a task result's _meta that names its log.
func logMeta(id string) mcp.Meta { return mcp.Meta{logMetaKey: logURI(id)} }

// servesTaskLogs reports whether the catalog has a tool that runs as a task: then
// every task's log is a resource, and resources can be subscribed to.
func servesTaskLogs(c *plugins.Catalog) bool {
	for _, t := range c.Tools() {
		if t.TaskSupport != plugins.TaskForbidden {
			return true
		}
	}
	return false
}

// registerTaskLogs adds the template of task logs.
func (s *Server) registerTaskLogs() {
	if !servesTaskLogs(s.catalog) {
		return
	}
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: logTemplate, Name: "task-log", Title: "Task log", MIMEType: "text/plain",
		Description: "The live log of one of your tasks: the lines its tool wrote so far. offset reads from a byte offset (the next offset is in the contents' _meta); subscribe to be told when it grows.",
	}, s.readTaskLog)
}

// readTaskLog serves resources/read of a task log: only to the task's owner (anyone
// else is told it does not exist, as for tasks/get).
func (s *Server) readTaskLog(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	id, offset, ok, err := parseLogURI(uri)
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, invalidParams("%v", err)
	}
	c := callerFrom(ctx, req.Session)
	page, t, err := s.tasks.ReadLog(ctx, c.owner, id, offset, maxLogRead)
	if errors.Is(err, tasks.ErrNotFound) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	if errors.Is(err, tasks.ErrNoJournal) {
		return &mcp.ReadResourceResult{Cacheable: mcp.Cacheable{CacheScope: "private"}, Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain",
			Meta: mcp.Meta{logMetaKey: map[string]any{"status": t.Status, "unavailable": err.Error()}}}}}, nil
	}
	if err != nil {
		return nil, err
	}
	text := string(page.Text)
	if offset < page.Dropped {
		text = fmt.Sprintf("[mcp-wasmhost: the first %d bytes of this log were dropped to keep it within its bound]\n", page.Dropped) + text
	}
	next := page.Offset + int64(len(page.Text))
	// A log is its owner's and grows: private, and stale at once (2026-07-28 caching).
	return &mcp.ReadResourceResult{Cacheable: mcp.Cacheable{CacheScope: "private"}, Contents: []*mcp.ResourceContents{{
		URI: uri, MIMEType: "text/plain", Text: text,
		Meta: mcp.Meta{logMetaKey: map[string]any{
			"offset": page.Offset, "next": next, "end": page.End(), "dropped": page.Dropped,
			"status": t.Status, "more": next < page.End(),
		}},
	}}}, nil
}

// subscribeTaskLog accepts a subscription to a log of the subscriber's own task.
func (s *Server) subscribeTaskLog(ctx context.Context, req *mcp.SubscribeRequest) (handled bool, err error) {
	id, _, ok, err := parseLogURI(req.Params.URI)
	if !ok {
		return false, nil
	}
	if err != nil {
		return true, invalidParams("%v", err)
	}
	c := callerFrom(ctx, req.Session)
	if _, err := s.tasks.Get(ctx, c.owner, id); err != nil {
		return true, mcp.ResourceNotFoundError(req.Params.URI)
	}
	return true, nil
}

// logNotifier tells a log's subscribers that it grew: at once, then at most once per
// logNotifyEvery while lines keep coming (the last append is always told).
type logNotifier struct {
	send func(uri string)

	mu      sync.Mutex
	pending map[string]*logTimer // by task ID, while its interval runs
	closed  bool
	wg      sync.WaitGroup
}

type logTimer struct {
	t     *time.Timer
	dirty bool // an append came during the interval
}

func newLogNotifier(send func(uri string)) *logNotifier {
	return &logNotifier{send: send, pending: map[string]*logTimer{}}
}

// grew is tasks.Options.OnLog: it must not block.
func (n *logNotifier) grew(id string, _ tasks.LogState) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	if lt := n.pending[id]; lt != nil {
		lt.dirty = true
		return
	}
	lt := &logTimer{}
	n.pending[id] = lt
	n.wg.Add(1)
	go func() { defer n.wg.Done(); n.send(logURI(id)) }()
	lt.t = time.AfterFunc(logNotifyEvery, func() { n.tick(id) })
}

// tick ends id's interval, telling the appends that came during it.
func (n *logNotifier) tick(id string) {
	n.mu.Lock()
	lt := n.pending[id]
	if lt == nil || n.closed {
		n.mu.Unlock()
		return
	}
	if !lt.dirty {
		delete(n.pending, id)
		n.mu.Unlock()
		return
	}
	lt.dirty = false
	lt.t.Reset(logNotifyEvery)
	n.wg.Add(1)
	n.mu.Unlock()
	defer n.wg.Done()
	n.send(logURI(id))
}

// close stops the timers and waits for the notifications under way.
func (n *logNotifier) close() {
	n.mu.Lock()
	n.closed = true
	for _, lt := range n.pending {
		lt.t.Stop()
	}
	n.mu.Unlock()
	n.wg.Wait()
}

// notifyResourceUpdated tells the clients subscribed to uri that it changed: those of
// resources/subscribe (2025-11-25) and the subscriptions/listen that name it
// (2026-07-28, listen.go).
func (s *Server) notifyResourceUpdated(ctx context.Context, uri string) error {
	s.listens.resourceUpdated(uri)
	return s.mcp.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
}

// taskLog serves a guest's task_log request: {"text": lines} appended to its task's
// log, answered {"end": offset}.
func (b *bridge) taskLog(ctx context.Context, params []byte) ([]byte, error) {
	var p struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, fmt.Errorf(`task_log params must be {"text": string}: %v`, err)
	}
	task := b.currentTask()
	if task == nil {
		return nil, errors.New("task_log: this call is not running as a task; only a task has a log")
	}
	st, err := task.AppendLog(ctx, []byte(p.Text))
	if err != nil {
		return nil, fmt.Errorf("task_log: %w", err)
	}
	return fmt.Appendf(nil, `{"end":%d}`, st.End()), nil
}

// checkpointSave serves checkpoint_save: {"data": base64}, the checkpoint a resumed
// task starts from, stored in one commit.
func (b *bridge) checkpointSave(ctx context.Context, params []byte) ([]byte, error) {
	data, err := checkpointData(params)
	if err != nil {
		return nil, err
	}
	task, err := b.resumableTask("checkpoint_save")
	if err != nil {
		return nil, err
	}
	if len(data) > sandbox.MaxCheckpoint {
		return nil, fmt.Errorf("checkpoint_save: a checkpoint of %d bytes is larger than the ABI's %d", len(data), sandbox.MaxCheckpoint)
	}
	if err := task.SaveCheckpoint(ctx, data); err != nil {
		return nil, fmt.Errorf("checkpoint_save: %w", err)
	}
	return []byte("{}"), nil
}

// checkpointData decodes checkpoint_save's params, {"data": base64}. The form both
// SDKs send, with nothing but base64 in the string, is decoded directly: a 1 MiB
// checkpoint costs about 2 ms of CPU this way, 10-18 ms through encoding/json
// (measured on this machine). Anything else goes through encoding/json, which
// decides.
func checkpointData(params []byte) ([]byte, error) {
	const prefix, suffix = `{"data":"`, `"}`
	if b64, ok := bytes.CutPrefix(bytes.TrimSpace(params), []byte(prefix)); ok {
		if b64, ok = bytes.CutSuffix(b64, []byte(suffix)); ok && !bytes.ContainsAny(b64, "\\\"") {
			data := make([]byte, base64.StdEncoding.DecodedLen(len(b64)))
			n, err := base64.StdEncoding.Decode(data, b64)
			if err != nil {
				return nil, fmt.Errorf("checkpoint_save: data is not standard padded base64: %v", err)
			}
			return data[:n], nil
		}
	}
	var p struct {
		Data []byte `json:"data"` // base64
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, fmt.Errorf(`checkpoint_save params must be {"data": base64}: %v`, err)
	}
	return p.Data, nil
}

// checkpointLoad serves checkpoint_load: the checkpoint the task resumed from
// ({"data": null} on its first run) and how many times it was resumed.
func (b *bridge) checkpointLoad(context.Context, []byte) ([]byte, error) {
	task, err := b.resumableTask("checkpoint_load")
	if err != nil {
		return nil, err
	}
	cp, resumes := task.Resumed()
	var data any
	if cp != nil {
		data = cp
	}
	return json.Marshal(map[string]any{"data": data, "resumes": resumes})
}

// resumableTask is the call's task, for the checkpoint requests of a resumable tool.
func (b *bridge) resumableTask(method string) (*tasks.Handle, error) {
	if b.tool == nil || !b.tool.Resumable {
		return nil, fmt.Errorf("%s: the tool does not declare execution.resumable", method)
	}
	task := b.currentTask()
	if task == nil {
		return nil, fmt.Errorf("%s: this call is not running as a task; only a task is resumed", method)
	}
	return task, nil
}

// recipe is what a resumable task records to run its tool again after its server
// stopped: the tool, its (checked) arguments, and what the client could answer.
type recipe struct {
	Tool      string                  `json:"tool"`
	Arguments json.RawMessage         `json:"arguments"`
	Caps      *mcp.ClientCapabilities `json:"caps,omitempty"`
}

// recordRecipe makes the task of a resumable tool one that is resumed, not failed,
// when its server stops. A task that cannot record it runs on, not resumable.
func (s *Server) recordRecipe(ctx context.Context, h *tasks.Handle, t *plugins.Tool, args json.RawMessage, caps *mcp.ClientCapabilities) {
	raw, err := json.Marshal(recipe{Tool: t.Name, Arguments: args, Caps: caps})
	if err == nil {
		err = h.SetRecipe(ctx, raw)
	}
	if err != nil {
		s.logger.WarnContext(ctx, "task will not be resumed if its server stops", "tool", t.Name, "task", h.ID(), "err", err)
	}
}

// resumeTask is tasks.Options.Resume: the work of an adopted task, its tool run
// again with the same arguments (it reads its checkpoint with checkpoint_load). Its
// requests for input wait in the task for the client (no session pushes them).
func (s *Server) resumeTask(a tasks.Adopted) (tasks.Func, error) {
	var r recipe
	if err := json.Unmarshal(a.Recipe, &r); err != nil {
		return nil, fmt.Errorf("its recipe is unreadable: %v", err)
	}
	t, ok := s.catalog.Lookup(r.Tool)
	switch {
	case !ok:
		return nil, fmt.Errorf("this server does not serve its tool %q", r.Tool)
	case !t.Resumable:
		return nil, fmt.Errorf("its tool %q no longer declares execution.resumable", r.Tool)
	}
	owner := a.Task.Owner
	return func(ctx context.Context, h *tasks.Handle) (json.RawMessage, string, *tasks.Error) {
		b := &bridge{tool: t, logger: s.logger, srv: s, caps: r.Caps, task: h, owner: owner}
		res, err := s.runTool(ctx, t, r.Arguments, b)
		return taskOutcome(res, err)
	}, nil
}

// restartable reports whether err stopped a resumable task's guest in a way that a
// fresh instance from its last checkpoint may get past: its worker process died under
// it (a crash, a kill). A trap or a limit is the guest's own, and would recur.
func restartable(err error) bool {
	var ge *sandbox.GuestError
	return errors.As(err, &ge) && ge.Kind == sandbox.KindAborted
}
