package harness

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Replicas are the processes of one Server started on its one config.toml: on a
// shared store (PostgreSQL, or SQLite on one data_dir) they serve one task space.
type Replicas []*Proc

// openReplicas starts the s.Replicas processes of s (at least one) over transport
// and opens sessions spread across them in turn: session i is on replica i % n. Over
// stdio each process has its one session. A 2025-11-25 session stays on its replica,
// so a worker that creates and polls its tasks on one session is sticky to one.
func (e *Env) openReplicas(ctx context.Context, s Server, transport string, sessions int, caps Caps) (Replicas, []*Client, error) {
	n := max(s.Replicas, 1)
	var rs Replicas
	for i := range n {
		p, err := s.Start(ctx, transport)
		if err != nil {
			e.closeReplicas(rs, nil)
			return nil, nil, fmt.Errorf("replica %d of %d: %w", i+1, n, err)
		}
		rs = append(rs, p)
	}
	if transport == Stdio {
		sessions = n
	}
	var cs []*Client
	for i := range sessions {
		c, err := rs[i%n].Dial(ctx, e.hc, caps)
		if err != nil {
			e.closeReplicas(rs, cs)
			return nil, nil, fmt.Errorf("replica %d of %d: %w", i%n+1, n, err)
		}
		cs = append(cs, c)
	}
	return rs, cs, nil
}

// closeReplicas ends the sessions and the processes (see closeAll).
func (e *Env) closeReplicas(rs Replicas, cs []*Client) {
	for _, c := range cs {
		c.Close()
	}
	for _, p := range rs {
		e.closeAll(p, nil)
	}
}

// CPU is the processor time the replicas and their worker processes have used so
// far, summed (see Proc.CPU).
func (rs Replicas) CPU() (time.Duration, error) {
	var total time.Duration
	var errs []error
	for _, p := range rs {
		d, err := p.CPU()
		total += d
		errs = append(errs, err)
	}
	return total, errors.Join(errs...)
}

// Stderr is the end of what each replica wrote to stderr, under its number.
func (rs Replicas) Stderr() string {
	if len(rs) == 1 {
		return rs[0].Stderr()
	}
	var b strings.Builder
	for i, p := range rs {
		fmt.Fprintf(&b, "-- replica %d of %d:\n%s\n", i+1, len(rs), p.Stderr())
	}
	return b.String()
}

// replicaRatios adds to figure 2, for each variant of several replicas, its rate and
// CPU per task (its servers', and PostgreSQL's where measured) over those of the
// variant of one process on the same store.
func replicaRatios(f *Figure) {
	for _, v := range Variants {
		if v.Replicas <= 1 || !v.in(2) {
			continue
		}
		for _, base := range Variants {
			if base.Store != v.Store || base.Replicas > 1 || !base.in(2) {
				continue
			}
			for _, tr := range []string{Stdio, HTTP} {
				for _, c := range concurrencies {
					f.ratio(fmt.Sprintf("%s / %s, %s, c=%d", v.Name, base.Name, tr, c),
						fmt.Sprintf("%s, %s, c=%d", v.Name, tr, c), fmt.Sprintf("%s, %s, c=%d", base.Name, tr, c))
					for _, cpu := range []string{"server CPU per task", "PostgreSQL CPU per task"} {
						f.ratio(fmt.Sprintf("%s, %s / %s, %s, c=%d", cpu, v.Name, base.Name, tr, c),
							fmt.Sprintf("%s, %s, c=%d, %s", v.Name, tr, c, cpu), fmt.Sprintf("%s, %s, c=%d, %s", base.Name, tr, c, cpu))
					}
				}
			}
			f.Notes = append(f.Notes, fmt.Sprintf("%s: %d processes of the binary share the one PostgreSQL database (every write transaction "+
				"takes one advisory lock, so writes serialize across replicas, docs/STORE.md); they, PostgreSQL and the client share the 2 cores, "+
				"so more replicas add no cores here: the ratio rows to %s show what sharing the database costs.", v.Name, v.Replicas, base.Name))
			break
		}
	}
}

// postgresCPU meters the harness's PostgreSQL server (Env.pgCPU).
type postgresCPU struct{ e *Env }

func (p postgresCPU) CPU() (time.Duration, error) { return p.e.pgCPU() }

// noCPU meters nothing: for a server without a PostgreSQL store.
type noCPU struct{}

func (noCPU) CPU() (time.Duration, error) { return 0, nil }
