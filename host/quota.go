package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
)

// Defaults of the per-identity quotas in Options.
const (
	// DefaultMaxParked is how many tasks of one identity may wait for its input
	// (input_required) before its new tools/call are refused.
	DefaultMaxParked = 16
	// DefaultMaxToolConcurrency is how many calls of one tool one identity may
	// have running at once.
	DefaultMaxToolConcurrency = 8
)

// Quota names, as a refusal's data.quota says them (and the config keys they come
// from).
const (
	QuotaRateLimit       = "rate_limit"           // [server.auth] rate_limit (package authn)
	QuotaParked          = "max_parked"           // [server.auth] max_parked
	QuotaToolConcurrency = "max_tool_concurrency" // [server.auth] max_tool_concurrency
	QuotaUnfinished      = "max_per_client"       // [tasks] max_per_client
	QuotaAnonymous       = "max_anonymous"        // [tasks] max_anonymous
)

// quotaRetryAfter is the Retry-After (seconds) of a refusal that waits for the
// caller's own tasks or calls to end, which the server cannot foresee: a hint.
const quotaRetryAfter = 1

// QuotaData is the data of every quota refusal: JSON-RPC error -32000 with a
// message naming the limit; over HTTP also status 429 with Retry-After.
type QuotaData struct {
	Quota      string  `json:"quota"`      // which limit (Quota* names)
	Limit      float64 `json:"limit"`      // its value
	RetryAfter int     `json:"retryAfter"` // seconds after which a retry may succeed
}

// quotaError is the JSON-RPC error of a refusal by quota q.
func quotaError(q QuotaData, format string, args ...any) *jsonrpc.Error {
	data, _ := json.Marshal(q) // plain struct: cannot fail
	return &jsonrpc.Error{Code: codeLimit, Message: fmt.Sprintf(format, args...), Data: data}
}

// tooManyTasks turns the task manager's refusal (tasks.ErrTooMany) into a quota
// refusal naming the [tasks] limit it hit; nil for any other error.
func (s *Server) tooManyTasks(err error) *jsonrpc.Error {
	if !errors.Is(err, tasks.ErrTooMany) {
		return nil
	}
	q := QuotaData{Quota: QuotaUnfinished, Limit: float64(s.quotas.maxPerOwner), RetryAfter: quotaRetryAfter}
	if strings.Contains(err.Error(), "max_anonymous") {
		q = QuotaData{Quota: QuotaAnonymous, Limit: float64(s.quotas.maxShared), RetryAfter: quotaRetryAfter}
	}
	return quotaError(q, "%s (%s)", err.Error(), q.Quota)
}

// quotas counts, per authenticated identity (a "user:" owner), the tasks waiting
// for its input and the running calls of each tool. Counted in this process: servers
// sharing a task store count their own.
type quotas struct {
	maxParked, maxToolConcurrency int
	maxPerOwner, maxShared        int // the task manager's, for refusals' data

	mu      sync.Mutex
	parked  map[string]map[string]bool // owner -> ids of its input_required tasks
	running map[runKey]int             // calls running now
}

type runKey struct{ owner, tool string }

func newQuotas(o Options) *quotas {
	q := &quotas{maxParked: o.MaxParked, maxToolConcurrency: o.MaxToolConcurrency,
		maxPerOwner: o.Tasks.MaxPerOwner, maxShared: o.Tasks.MaxShared,
		parked: map[string]map[string]bool{}, running: map[runKey]int{}}
	if q.maxParked <= 0 {
		q.maxParked = DefaultMaxParked
	}
	if q.maxToolConcurrency <= 0 {
		q.maxToolConcurrency = DefaultMaxToolConcurrency
	}
	if q.maxPerOwner <= 0 {
		q.maxPerOwner = 64 // tasks.Manager's default
	}
	if q.maxShared <= 0 {
		q.maxShared = 256
	}
	return q
}

// counted reports whether owner's calls are held to the per-identity quotas: an
// authenticated identity's. The local user, sessions and anonymous requesters have
// the task quotas of [tasks] only.
func counted(owner string) bool { return strings.HasPrefix(owner, "user:") }

// taskChanged follows t's status for the parked count.
func (q *quotas) taskChanged(t tasks.Task) {
	if !counted(t.Owner) {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	set := q.parked[t.Owner]
	if t.Status == tasks.InputRequired {
		if set == nil {
			set = map[string]bool{}
			q.parked[t.Owner] = set
		}
		set[t.ID] = true
		return
	}
	delete(set, t.ID)
	if len(set) == 0 {
		delete(q.parked, t.Owner)
	}
}

// admit takes a running call of tool for owner, or refuses it: owner has
// maxParked tasks waiting for its input, or maxToolConcurrency calls of tool
// running. The slot is released by the request, or by the task that takes it over.
func (q *quotas) admit(owner, tool string) (*slot, error) {
	if !counted(owner) {
		return nil, nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if n := len(q.parked[owner]); n >= q.maxParked {
		return nil, quotaError(QuotaData{Quota: QuotaParked, Limit: float64(q.maxParked), RetryAfter: quotaRetryAfter},
			"too many tasks waiting for your input: %d (max_parked is %d); answer or cancel one first", n, q.maxParked)
	}
	k := runKey{owner, tool}
	if n := q.running[k]; n >= q.maxToolConcurrency {
		return nil, quotaError(QuotaData{Quota: QuotaToolConcurrency, Limit: float64(q.maxToolConcurrency), RetryAfter: quotaRetryAfter},
			"too many calls of %s running: %d (max_tool_concurrency is %d); wait for one to end", tool, n, q.maxToolConcurrency)
	}
	q.running[k]++
	return &slot{q: q, key: k}, nil
}

// slot is one running call admitted by quotas.admit. A nil slot (a caller not
// counted) does nothing.
type slot struct {
	q    *quotas
	key  runKey
	once sync.Once
	task atomic.Bool // a task took it over: the request does not release it
}

// release gives the slot back, once.
func (s *slot) release() {
	if s == nil {
		return
	}
	s.once.Do(func() {
		s.q.mu.Lock()
		defer s.q.mu.Unlock()
		if s.q.running[s.key]--; s.q.running[s.key] <= 0 {
			delete(s.q.running, s.key)
		}
	})
}

// takeOver hands the slot to a task, which releases it when its run ends; the
// request that admitted the call then leaves it alone.
func (s *slot) takeOver() *slot {
	if s == nil {
		return nil
	}
	s.task.Store(true)
	return s
}

// handBack returns a slot a task was to take over to the request (the task was
// not started).
func (s *slot) handBack() {
	if s != nil {
		s.task.Store(false)
	}
}

// requestDone releases the slot unless a task took it over.
func (s *slot) requestDone() {
	if s != nil && !s.task.Load() {
		s.release()
	}
}

// admitCall holds a tools/call to the running-call and parked quotas of its caller
// (an authenticated identity), then routes it; the call's slot goes back when the
// request ends, unless a task took it over.
func (s *Server) admitCall(ctx context.Context, req *mcp.CallToolRequest, c caller, next mcp.MethodHandler) (mcp.Result, error) {
	if req.Params != nil {
		if _, ok := s.catalog.Lookup(req.Params.Name); ok {
			sl, err := s.quotas.admit(c.owner, req.Params.Name)
			if err != nil {
				return nil, err
			}
			defer sl.requestDone()
			c.slot = sl
			ctx = withCaller(ctx, c)
		}
	}
	return s.callTool(ctx, req, c, next)
}

// answeredQuota makes the HTTP response of a request refused by a quota a 429
// with the refusal's Retry-After.
func (s *Server) answeredQuota(extra *mcp.RequestExtra, err error) {
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != codeLimit || len(we.Data) == 0 {
		return
	}
	var q QuotaData
	if json.Unmarshal(we.Data, &q) != nil || q.Quota == "" {
		return
	}
	s.httpReqs.of(extra).refuse(q.RetryAfter)
}
