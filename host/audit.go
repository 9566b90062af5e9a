package host

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/audit"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
)

// The audit trail (package audit, Options.Audit): the middleware writes one line per
// tools/call, resources/read and prompts/get when it is answered; the task manager's
// OnChange one per task status change; a task's run one when it ends, with its
// outcome and host calls. Lines are queued, never waited for.

// maxAuditOrigins bounds the egress origins one line lists.
const maxAuditOrigins = 32

// callRecord collects what one call's guest asked of the host, for its audit line.
// A nil callRecord (no audit trail) collects nothing.
type callRecord struct {
	mu     sync.Mutex
	inputs map[string]int
	egress []string
	taskID string // the task the call became
}

// input counts one request for input (elicitation/create, sampling/createMessage).
func (r *callRecord) input(method string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.inputs == nil {
		r.inputs = map[string]int{}
	}
	r.inputs[method]++
}

// seen records an origin an "http" request named (egress.Call.Seen).
func (r *callRecord) seen(origin string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.egress) < maxAuditOrigins && !slices.Contains(r.egress, origin) {
		r.egress = append(r.egress, origin)
	}
}

// seenFunc is seen, or nil for a nil record.
func (r *callRecord) seenFunc() func(string) {
	if r == nil {
		return nil
	}
	return r.seen
}

// startedTask notes the task the call became.
func (r *callRecord) startedTask(id string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.taskID = id
}

// fill copies what was collected into rec.
func (r *callRecord) fill(rec *audit.Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.inputs) > 0 {
		rec.Inputs = make(map[string]int, len(r.inputs))
		for k, v := range r.inputs {
			rec.Inputs[k] = v
		}
	}
	rec.Egress = slices.Clone(r.egress)
	if r.taskID != "" {
		rec.TaskID = r.taskID
	}
}

// identityOf is who a request's line names: the verified identity over HTTP,
// "local" for the local user (stdio), "" for an unauthenticated HTTP client.
func identityOf(extra *mcp.RequestExtra, c caller) string {
	if extra != nil && extra.TokenInfo != nil && extra.TokenInfo.UserID != "" {
		return extra.TokenInfo.UserID
	}
	if c.owner == localOwner {
		return localOwner
	}
	return ""
}

// auditRequest writes the line of one answered request.
func (s *Server) auditRequest(start time.Time, method string, ss *mcp.ServerSession, extra *mcp.RequestExtra, c caller,
	fill func(*audit.Record), res mcp.Result, err error) {
	rec := audit.Record{Time: start, Identity: identityOf(extra, c), Requester: c.owner, Source: c.source,
		Method: method, DurationMS: float64(time.Since(start).Microseconds()) / 1000}
	if ss != nil {
		rec.Session = ss.ID()
	}
	fill(&rec)
	if c.rec != nil {
		c.rec.fill(&rec)
	}
	rec.Outcome, rec.ErrorCode = outcomeOf(res, err)
	if rec.TaskID != "" && err == nil {
		rec.Outcome, rec.Status = audit.OutcomeTask, string(tasks.Working)
	}
	s.audit.Record(rec)
}

// outcomeOf names a request's outcome for its audit line.
func outcomeOf(res mcp.Result, err error) (string, int64) {
	if err != nil {
		var we *jsonrpc.Error
		if errors.As(err, &we) {
			return audit.OutcomeError, we.Code
		}
		return audit.OutcomeError, jsonrpc.CodeInternalError
	}
	switch r := res.(type) {
	case *completeResult:
		return outcomeOf(r.Result, nil)
	case *mcp.CallToolResult:
		if r.IsError {
			return audit.OutcomeIsError, 0
		}
		if r.InputRequests != nil {
			return audit.OutcomeInputRequired, 0
		}
	case *inputRequiredResult:
		return audit.OutcomeInputRequired, 0
	}
	return audit.OutcomeOK, 0
}

// auditStatus writes the line of a task's status change (OnChange, under the
// task's lock: Record only queues).
func (s *Server) auditStatus(t tasks.Task) {
	if s.audit == nil || !s.statusChanged(t) {
		return
	}
	rec := audit.Record{Time: t.LastUpdatedAt, Identity: ownerIdentity(t.Owner), Requester: t.Owner,
		Method: audit.MethodTaskStatus, TaskID: t.ID, Status: string(t.Status)}
	if t.Error != nil {
		rec.ErrorCode = t.Error.Code
	}
	s.audit.Record(rec)
}

// auditRun writes the line of a task's run that ended: its tool, outcome, how long
// it ran and what its guest asked of the host.
func (s *Server) auditRun(start time.Time, taskID, owner, tool string, r *callRecord, res *mcp.CallToolResult, err error) {
	if s.audit == nil {
		return
	}
	rec := audit.Record{Time: start, Identity: ownerIdentity(owner), Requester: owner, Method: audit.MethodTaskRun,
		Tool: tool, DurationMS: float64(time.Since(start).Microseconds()) / 1000}
	if r != nil {
		r.fill(&rec)
	}
	rec.TaskID = taskID
	rec.Outcome, rec.ErrorCode = outcomeOf(res, err)
	s.audit.Record(rec)
}

// ownerIdentity is the identity of a task owner: an authenticated one's, "local",
// or "" (a session or anonymous requester, named by the line's requester).
func ownerIdentity(owner string) string {
	if id, ok := strings.CutPrefix(owner, "user:"); ok {
		return id
	}
	if owner == localOwner {
		return localOwner
	}
	return ""
}

// taskStatuses is the last status written of each unfinished task, so that a change
// of a task's status message alone (tasks.Handle.Note) writes no line.
type taskStatuses struct {
	mu   sync.Mutex
	last map[string]tasks.Status
}

// statusChanged reports whether t's status differs from the last written, and
// records it; a terminal status forgets the task.
func (s *Server) statusChanged(t tasks.Task) bool {
	ts := &s.auditStatuses
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.last == nil {
		ts.last = map[string]tasks.Status{}
	}
	prev, ok := ts.last[t.ID]
	if t.Status.Terminal() {
		delete(ts.last, t.ID)
	} else {
		ts.last[t.ID] = t.Status
	}
	// A task's first change seen here is a change from working (its status at
	// creation) unless it is still working.
	if !ok {
		prev = tasks.Working
	}
	return prev != t.Status
}
