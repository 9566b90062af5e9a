package metrics

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// series keeps the children of the per-call metrics once resolved: a call looks
// its plugin, its tool and outcome and its request up once each, rather than
// hashing the label values of eight or so series (WithLabelValues) every call.
// Every label value is bounded (doc.go), and so is each map. A series appears in
// the scrape when first used, as with WithLabelValues.
type series struct {
	mu       sync.RWMutex
	plugins  map[string]*pluginSeries
	tools    map[toolKey]prometheus.Observer
	requests map[requestKey]*requestSeries
}

type toolKey struct{ plugin, tool, outcome string }

type requestKey struct{ method, wire, transport string }

type requestSeries struct {
	count prometheus.Counter
	time  prometheus.Observer
}

// pluginSeries are a plugin's report series. Those not every call has (CPU, host
// calls by kind) are resolved at their first use.
type pluginSeries struct {
	queue, instantiate, run, memory prometheus.Observer
	cpu                             atomic.Pointer[prometheus.Observer]
	hostCalls                       [sandbox.NumHostCalls]atomic.Pointer[prometheus.Counter]
}

// lookup returns the value of key in *mp, made by make and kept if it is not there.
func lookup[K comparable, V any](mu *sync.RWMutex, mp *map[K]V, key K, make func() V) V {
	mu.RLock()
	v, ok := (*mp)[key]
	mu.RUnlock()
	if ok {
		return v
	}
	mu.Lock()
	defer mu.Unlock()
	if v, ok := (*mp)[key]; ok {
		return v
	}
	if *mp == nil {
		*mp = map[K]V{}
	}
	v = make()
	(*mp)[key] = v
	return v
}

func (s *series) request(m *Metrics, k requestKey) *requestSeries {
	return lookup(&s.mu, &s.requests, k, func() *requestSeries {
		return &requestSeries{count: m.requests.WithLabelValues(k.method, k.wire, k.transport), time: m.requestTime.WithLabelValues(k.method)}
	})
}

func (s *series) tool(m *Metrics, k toolKey) prometheus.Observer {
	return lookup(&s.mu, &s.tools, k, func() prometheus.Observer {
		return m.toolCalls.WithLabelValues(k.plugin, k.tool, k.outcome)
	})
}

func (s *series) plugin(m *Metrics, plugin string) *pluginSeries {
	return lookup(&s.mu, &s.plugins, plugin, func() *pluginSeries {
		return &pluginSeries{queue: m.queue.WithLabelValues(plugin), instantiate: m.instantiate.WithLabelValues(plugin),
			run: m.run.WithLabelValues(plugin), memory: m.memory.WithLabelValues(plugin)}
	})
}

func (p *pluginSeries) cpuOf(m *Metrics, plugin string) prometheus.Observer {
	if o := p.cpu.Load(); o != nil {
		return *o
	}
	o := m.cpu.WithLabelValues(plugin)
	p.cpu.Store(&o)
	return o
}

func (p *pluginSeries) hostCallsOf(m *Metrics, plugin string, k sandbox.HostCall) prometheus.Counter {
	if c := p.hostCalls[k].Load(); c != nil {
		return *c
	}
	c := m.hostCalls.WithLabelValues(plugin, k.String())
	p.hostCalls[k].Store(&c)
	return c
}
