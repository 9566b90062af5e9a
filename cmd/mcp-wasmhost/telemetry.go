package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/config"
	"github.com/mcp-wasmhost/mcp-wasmhost/egress"
	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
	"github.com/mcp-wasmhost/mcp-wasmhost/telemetry/metrics"
	"github.com/mcp-wasmhost/mcp-wasmhost/telemetry/trace"
)

// telemetry is the server's metrics and tracer, each nil when off.
type telemetry struct {
	metrics *metrics.Metrics
	tracer  *trace.Tracer
	live    liveInstances
	wg      sync.WaitGroup
	cancel  context.CancelFunc // ends the metrics listener
}

// liveInstances reads each plugin's live instances, once the catalog is loaded.
type liveInstances struct {
	catalog atomic.Pointer[plugins.Catalog]
}

func (l *liveInstances) Live() map[string]metrics.Instances {
	c := l.catalog.Load()
	if c == nil {
		return nil
	}
	out := map[string]metrics.Instances{}
	for _, p := range c.Plugins() {
		out[p.Name] = metrics.Instances{Count: p.Module.Live(), MemoryBytes: p.Module.LiveMemory()}
	}
	return out
}

// startTelemetry starts what [server] metrics and [server.tracing] configure: the
// metrics listener (until ctx ends; stop waits for it) and the span exporter.
func startTelemetry(ctx context.Context, s config.Server, logger *slog.Logger) (*telemetry, error) {
	t := &telemetry{}
	ctx, t.cancel = context.WithCancel(ctx)
	if s.Tracing.Endpoint != "" {
		tr, err := trace.New(trace.Options{Endpoint: s.Tracing.Endpoint, SampleRatio: s.Tracing.SampleRatio,
			Headers: s.Tracing.Headers, Service: s.Name, Version: version(), Logger: logger})
		if err != nil {
			return nil, err
		}
		t.tracer = tr
		logger.Info("sending traces", "endpoint", s.Tracing.Endpoint, "sample_ratio", s.Tracing.SampleRatio)
	}
	if s.Metrics != "" {
		ln, err := net.Listen("tcp", s.Metrics)
		if err != nil {
			t.stop(ctx)
			return nil, fmt.Errorf("[server] metrics: %w", err)
		}
		t.metrics = metrics.New(&t.live)
		logger.Info("serving metrics", "url", "http://"+ln.Addr().String()+"/metrics")
		t.wg.Go(func() {
			if err := t.metrics.Serve(ctx, ln); err != nil {
				logger.Error("metrics listener stopped", "err", err)
			}
		})
	}
	return t, nil
}

// stop flushes the spans still queued and stops the metrics listener.
func (t *telemetry) stop(ctx context.Context) {
	if t.cancel != nil {
		t.cancel()
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_ = t.tracer.Shutdown(ctx)
	t.wg.Wait()
}

// egressOptions adds the metrics and the trace context to a plugin's egress; a nil
// t (the toolkit's commands) adds nothing.
func (t *telemetry) egressOptions(o *egress.Options) {
	if t == nil {
		return
	}
	if t.metrics != nil {
		o.Observe = t.metrics.Egress
	}
	if t.tracer != nil {
		o.Propagate = t.tracer.Inject
	}
}
