package host

import (
	"context"
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
	b.mu.Lock()
	b.httpRequests++
	call := egress.Call{Tool: b.name(), Seq: b.httpRequests}
	if b.task != nil {
		call.Task = b.task.ID()
	}
	b.mu.Unlock()
	return p.Net.Do(ctx, call, params)
}
