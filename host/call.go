package host

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
)

// errClientGone is the cause of a sync call's end when its HTTP client went away.
var errClientGone = errors.New("the client went away")

// callOutcome is what a run of a guest ended with.
type callOutcome struct {
	res *mcp.CallToolResult
	err error
}

// callSync runs tool t for one tools/call whose arguments were checked, answering in
// the request. On a stateless session a guest's request for input ends the round
// with InputRequiredResult (see mrtr.go), and a repeated call runs the guest again
// with the answers. With mayStartTask the guest may move the call into a task (the
// "task" request); the answer is then the task.
func (s *Server) callSync(ctx context.Context, req *mcp.CallToolRequest, t *plugins.Tool, c caller, mayStartTask bool) (mcp.Result, error) {
	// A sync call ends when its client goes away: nobody is left to get its answer,
	// and its guest would hold an instance for nothing. Not where the client may
	// resume the stream (resumable stateful HTTP, where a guest may also close the
	// stream on purpose); a task lives on by design.
	if hr := s.httpReqs.of(req.Extra); hr != nil && (c.wire.stateless() || !s.resumable) {
		var gone context.CancelCauseFunc
		ctx, gone = context.WithCancelCause(ctx)
		defer gone(nil)
		stop := context.AfterFunc(hr.ctx, func() { gone(errClientGone) })
		defer stop()
	}
	b := &bridge{session: req.Session, tool: t, logger: s.logger, progressToken: req.Params.GetProgressToken(),
		caps: c.caps, owner: c.owner, srv: s, closeStream: closeStreamOf(req), rec: c.rec}
	// The run outlives the request only if it becomes a task; until then the
	// request's end ends it (below).
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	moved := false // to a task, which then owns the run
	defer func() {
		if !moved {
			cancel()
		}
	}()
	// Multi round-trip where the server cannot ask mid-call (2026-07-28), and on the
	// extension's wire on any session: its clients answer input through it (and
	// through tasks/update), not as requests from the server.
	if c.wire.roundTrips() {
		answers, err := s.replayedAnswers(t.Name, req.Params.Arguments, req.Params.RequestState, req.Params.InputResponses, c)
		if err != nil {
			return nil, err
		}
		b.mrtr = &mrtrRun{answers: answers, cancel: cancel}
	}
	done := make(chan callOutcome, 1)
	started := make(chan tasks.Task, 1)
	// The run moves into a task, or the request's end stops it: one or the other,
	// decided under moveMu (a run stopped after it moved would lose the task's work).
	var moveMu sync.Mutex
	requestEnded := false
	if mayStartTask {
		b.startTask = func() (*tasks.Handle, error) {
			moveMu.Lock()
			if requestEnded {
				moveMu.Unlock()
				return nil, errors.New("the request ended before the call could move into a task")
			}
			handle := make(chan *tasks.Handle, 1)
			task, err := s.startTask(ctx, req, t, c, 0, func(tctx context.Context, tb *bridge) (*mcp.CallToolResult, error) {
				handle <- tb.currentTask()
				stop := context.AfterFunc(tctx, cancel) // the task's cancellation stops the run
				defer stop()
				defer cancel()
				o := <-done
				return o.res, o.err
			})
			if err != nil {
				moveMu.Unlock()
				return nil, err
			}
			started <- task
			moveMu.Unlock()
			return <-handle, nil
		}
	}
	go func() {
		res, err := s.runTool(runCtx, t, req.Params.Arguments, b)
		done <- callOutcome{res, err}
	}()

	var o callOutcome
	select {
	case task := <-started:
		moved = true
		return c.wire.created(task), nil
	case o = <-done:
	case <-ctx.Done():
		moveMu.Lock()
		requestEnded = true
		select {
		case <-started: // the task owns the run now, and ends with it
			moved = true
			moveMu.Unlock()
			return nil, ctx.Err()
		default:
		}
		moveMu.Unlock()
		cancel()
		at := time.Now()
		<-done
		if errors.Is(context.Cause(ctx), errClientGone) {
			s.logger.Info("call stopped: its client went away", "tool", t.Name, "stopped_in", time.Since(at))
		}
		return nil, ctx.Err()
	}
	// The run ended; if it had moved into a task just before, the task waits for it.
	select {
	case task := <-started:
		moved = true
		done <- o
		return c.wire.created(task), nil
	default:
	}
	if b.mrtr != nil {
		pending, prior, bad := b.mrtr.asked()
		if bad != nil {
			return nil, bad
		}
		if pending != nil {
			reqs, state, err := s.inputRequired(t.Name, req.Params.Arguments, c, pending, prior)
			if err != nil {
				return nil, err
			}
			return c.wire.inputRequired(reqs, state), nil
		}
	}
	return o.res, o.err
}

// inputRequired answers a round that needs input: the pending requests, each under
// the guest's key or the next "input-N", and the signed state to send back with the
// answers. name is what the state is bound to (the tool, or the prompt or resource
// read), with args.
func (s *Server) inputRequired(name string, args json.RawMessage, c caller, pending []pendingInput, prior map[string]json.RawMessage) (mcp.InputRequestMap, string, error) {
	digest, err := argsDigest(args)
	if err != nil {
		return nil, "", invalidParams("arguments: %v", err)
	}
	st := requestState{Tool: name, Args: digest, Owner: c.owner, Answers: prior}
	reqs := make(mcp.InputRequestMap, len(pending))
	for _, p := range pending {
		st.Keys = append(st.Keys, p.key)
		reqs[p.key] = p.params
	}
	state, err := s.states.issue(st, time.Now())
	if err != nil {
		return nil, "", invalidParams("%v", err)
	}
	return reqs, state, nil
}

// replayedAnswers returns the answers a repeated round gives the guest, by key: those
// of earlier rounds (in the signed requestState) and this round's inputResponses for
// the keys the last round asked; other keys are ignored, and a key asked but not
// answered is asked again. inputResponses without requestState are a first round's
// (SEP-2322 lets a client answer before it is asked): the guest takes those whose
// keys it asks for. A requestState that fails its check is -32602.
func (s *Server) replayedAnswers(name string, args json.RawMessage, state string, responses mcp.InputResponseMap, c caller) (map[string]json.RawMessage, error) {
	if state == "" {
		if len(responses) == 0 {
			return nil, nil
		}
		answers := make(map[string]json.RawMessage, len(responses))
		for key, r := range responses {
			raw, err := json.Marshal(r)
			if err != nil || r == nil {
				return nil, invalidParams("inputResponses[%q]: not a result", key)
			}
			answers[key] = raw
		}
		return answers, nil
	}
	st, err := s.states.verify(state, name, args, c.owner, time.Now())
	if err != nil {
		return nil, invalidParams("%v", err)
	}
	answers := make(map[string]json.RawMessage, len(st.Answers)+len(st.Keys))
	for k, v := range st.Answers {
		answers[k] = v
	}
	for _, key := range st.Keys {
		r, ok := responses[key]
		if !ok || r == nil {
			continue // asked again
		}
		raw, err := json.Marshal(r)
		if err != nil {
			return nil, invalidParams("inputResponses[%q]: %v", key, err)
		}
		answers[key] = raw
	}
	if err := s.states.consume(context.Background(), st); err != nil {
		return nil, invalidParams("%v", err)
	}
	return answers, nil
}
