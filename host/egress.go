package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/mcp-wasmhost/mcp-wasmhost/egress"
)

// httpRequest serves the guest's "http" request: made by this process under the
// plugin's network policy (package egress), with the call's context, so a
// cancellation or the call's deadline ends it.
func (b *bridge) httpRequest(ctx context.Context, params []byte) ([]byte, error) {
	p := b.servedBy()
	if p.Net == nil {
		return nil, fmt.Errorf("plugin %s has no network; grant origins in [[plugins.net]]", p.Name)
	}
	return p.Net.Do(ctx, b.nextCall(), params)
}

// nextCall counts one more request of the call and names it for the audit line.
func (b *bridge) nextCall() egress.Call {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.httpRequests++
	call := egress.Call{Tool: b.name(), Seq: b.httpRequests, Seen: b.rec.seenFunc()}
	if b.task != nil {
		call.Task = b.task.ID()
	}
	return call
}

// httpOnCancel serves the guest's "http_on_cancel" request: the policy checks the
// request now, and the host keeps it, one per call, to make it itself if the call
// is cancelled (onCancelled). Params null or {} clear it.
func (b *bridge) httpOnCancel(params []byte) ([]byte, error) {
	p := b.servedBy()
	if p.Net == nil {
		return nil, fmt.Errorf("plugin %s has no network; grant origins in [[plugins.net]]", p.Name)
	}
	var keep []byte
	if t := bytes.TrimSpace(params); len(t) > 0 && !bytes.Equal(t, []byte("null")) && !emptyObject(t) {
		if err := p.Net.Check(params); err != nil {
			return nil, err
		}
		keep = bytes.Clone(params)
	}
	b.mu.Lock()
	b.onCancel = keep
	b.mu.Unlock()
	return []byte(`{}`), nil
}

// emptyObject reports whether raw is a JSON object with no members.
func emptyObject(raw []byte) bool {
	n := len(raw)
	return n >= 2 && raw[0] == '{' && raw[n-1] == '}' && len(bytes.TrimSpace(raw[1:n-1])) == 0
}

// onCancelled ends a call's run (ctx, err of the guest): a run that ended because its
// context was cancelled (tasks/cancel, a sync call's client gone, the call's context
// cancelled) makes the request its guest registered with "http_on_cancel", detached
// from ctx and bounded by the plugin's net timeout; a run that ended any other way
// (result, error, time limit) drops it. A sync run stopped to ask the client for
// input (mrtr) was not cancelled.
func (b *bridge) onCancelled(ctx context.Context) {
	b.mu.Lock()
	params, mrtr := b.onCancel, b.mrtr
	b.onCancel = nil
	b.mu.Unlock()
	if params == nil || !errors.Is(ctx.Err(), context.Canceled) {
		return
	}
	if mrtr != nil {
		if pending, _, bad := mrtr.asked(); pending != nil || bad != nil {
			return
		}
	}
	call := b.nextCall()
	call.OnCancel = true
	// Do bounds the request by the plugin's net timeout; the audit line reports it.
	_, _ = b.servedBy().Net.Do(context.WithoutCancel(ctx), call, params)
}
