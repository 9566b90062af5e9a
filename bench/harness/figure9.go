package harness

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// sink is an OTLP/HTTP collector that reads and drops every export: the server's
// traces cost what encoding and sending them costs, on loopback.
type sink struct {
	srv   *http.Server
	url   string
	bytes atomic.Int64
}

func newSink() (*sink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &sink{url: "http://" + ln.Addr().String()}
	s.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		s.bytes.Add(n)
	}), ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(ln)
	return s, nil
}

func (s *sink) close() { s.srv.Close() }

// Figure9 is the cost of observability on a C-guest call: the same server plain,
// with [server] metrics, and with metrics and [server.tracing] (every trace
// sampled, and one in ten), interleaved in every repetition, in worker and trusted mode, over stdio
// and HTTP.
func (e *Env) Figure9(ctx context.Context) (*Figure, error) {
	d := pick(e, 4*time.Second, 300*time.Millisecond)
	f := &Figure{N: 9, Title: "Observability overhead: metrics, metrics + tracing, on a C-guest call",
		What: fmt.Sprintf("16 workers call `textkit_ping` back to back for %s (over stdio on one shared connection, over HTTP one session each); "+
			"the server's CPU time per call (its worker processes included) and the rate, for three configs of the same plugin started one after another "+
			"in an order that rotates with each repetition.", d),
		Baseline:  "the same server with neither metrics nor tracing (plain), in the same mode, transport and repetition.",
		Reproduce: "go run ./bench/cmd/benchall -figures 9"}
	col, err := newSink()
	if err != nil {
		return nil, err
	}
	defer col.close()
	obs := []struct{ name, lines string }{
		{"plain", ""},
		{"metrics", `metrics = "127.0.0.1:0"`},
		{"metrics + tracing", fmt.Sprintf("metrics = \"127.0.0.1:0\"\n\n[server.tracing]\nendpoint = %q\nsample_ratio = 1", col.url)},
		{"metrics + tracing 10%", fmt.Sprintf("metrics = \"127.0.0.1:0\"\n\n[server.tracing]\nendpoint = %q\nsample_ratio = 0.1", col.url)},
	}
	modes := []Variant{Variants[0], Variants[1]}
	for rep := range e.Reps {
		e.logf("figure 9, repetition %d", rep+1)
		for _, mode := range modes {
			for _, tr := range []string{HTTP, Stdio} {
				for k := range obs {
					o := obs[(k+rep)%len(obs)] // interleaved: each config goes first in turn
					v := mode
					v.ServerLines = o.lines
					s, err := e.Ours(v, "", textkit)
					if err != nil {
						return nil, err
					}
					p, cs, err := e.open(ctx, s, tr, 16, Caps{})
					if err != nil {
						return nil, err
					}
					call := func(ctx context.Context, w int) error {
						return callTool(ctx, cs[w%len(cs)], "textkit_ping", map[string]any{})
					}
					if _, err = loadFor(ctx, 16, d/4, call); err == nil { // warm-up
						var l load
						var cpu float64
						if l, cpu, err = measure(p, func() (load, error) { return loadFor(ctx, 16, d, call) }); err == nil {
							label := fmt.Sprintf("%s, %s, %s", mode.Name, tr, o.name)
							f.add(label, "us CPU/call", cpu)
							f.add(label+", rate", "calls/s", l.Rate)
						}
					}
					e.closeAll(p, cs)
					if err != nil {
						return nil, fmt.Errorf("%s, %s over %s: %w\n%s", mode.Name, o.name, tr, err, p.Stderr())
					}
				}
			}
		}
	}
	for _, mode := range modes {
		for _, tr := range []string{HTTP, Stdio} {
			base := fmt.Sprintf("%s, %s, plain", mode.Name, tr)
			for _, o := range obs[1:] {
				label := fmt.Sprintf("%s, %s, %s", mode.Name, tr, o.name)
				f.ratio(label+" / plain, CPU per call", label, base)
				f.ratio(label+" / plain, rate", label+", rate", base+", rate")
			}
			if r := f.find(fmt.Sprintf("%s, %s, metrics + tracing / plain, CPU per call", mode.Name, tr)); r != nil {
				m := r.Median()
				f.Targets = append(f.Targets, Target{Variant: mode.Name + ", " + tr, Goal: "metrics + tracing < 5% CPU per C-guest call",
					Got: fmt.Sprintf("%+.1f%%", (m-1)*100), Met: m < 1.05,
					Why: "every call makes a server span, validate/queue/instantiate/run spans and their export; see docs/OBSERVABILITY.md"})
			}
		}
	}
	f.Notes = append(f.Notes, fmt.Sprintf("The collector received %d bytes of OTLP protobuf in all.", col.bytes.Load()))
	return f, nil
}
