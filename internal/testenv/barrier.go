package testenv

import (
	"context"
	"sync"

	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// Barrier is a sandbox.Host whose requests all wait until n calls have asked (or
// their call ends), then answer ErrUnavailable: all n instances are then live, each at
// the point of its request, at the same time.
type Barrier struct {
	asked sync.WaitGroup
	all   chan struct{}
}

// NewBarrier returns a Barrier for n calls.
func NewBarrier(n int) *Barrier {
	b := &Barrier{all: make(chan struct{})}
	b.asked.Add(n)
	go func() { b.asked.Wait(); close(b.all) }()
	return b
}

func (*Barrier) Log(context.Context, sandbox.Level, string)         {}
func (*Barrier) Progress(context.Context, float64, float64, string) {}

func (b *Barrier) Request(ctx context.Context, _ string, _ []byte) ([]byte, error) {
	b.asked.Done()
	select {
	case <-b.all:
	case <-ctx.Done():
	}
	return nil, sandbox.ErrUnavailable
}
