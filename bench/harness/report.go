package harness

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// Machine describes where a run happened.
type Machine struct {
	CPU, Kernel, Go, Node string
	Cores                 int
	LoadBefore, LoadAfter string // /proc/loadavg
}

// ReadMachine reads the machine's details.
func ReadMachine() Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version(), CPU: "unknown", Kernel: "unknown", Node: "not found", LoadBefore: loadavg()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if out, err := exec.Command("node", "--version").Output(); err == nil {
		m.Node = strings.TrimSpace(string(out))
	}
	return m
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// Write renders the figures as docs/BENCHMARKS.md.
func Write(w io.Writer, m Machine, e *Env, figs []*Figure, took time.Duration) error {
	m.LoadAfter = loadavg()
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# Benchmarks\n\n")
	p("Written by `make bench` (`go run ./bench/cmd/benchall`) on %s in %s. Every figure stands beside its baseline\n", time.Now().UTC().Format("2006-01-02 15:04 MST"), took.Round(time.Second))
	p("measured in the same run, by the same raw JSON-RPC client (`bench/harness`), against the real binaries.\n")
	p("Each row is the median of %d repetitions (figure 4: at least 5), with the smallest and largest in brackets; read the\n", e.Reps)
	p("ratios, not the absolute numbers.\n\n")
	if e.Smoke {
		p("**Smoke run**: a few samples per figure, to prove the harness works; the numbers mean nothing.\n\n")
	}
	p("## Machine\n\n")
	p("| | |\n|---|---|\n")
	p("| CPU | %s |\n| cores | %d |\n| kernel | %s |\n| Go | %s |\n| Node.js (TypeScript peer) | %s |\n", m.CPU, m.Cores, m.Kernel, m.Go, m.Node)
	p("| load average (1, 5, 15 min) before / after | %s / %s |\n\n", m.LoadBefore, m.LoadAfter)
	p("This run shared its 2 cores with other busy jobs, so every figure is noisy; the integrator reruns\n")
	p("`make bench` on a quiet machine before quoting absolute numbers. Client and server always share the cores.\n\n")
	p("Configurations of mcp-wasmhost measured (`Variants` in bench/harness/env.go):\n\n")
	for _, v := range Variants {
		extra := ""
		if v.PluginLines != "" {
			extra = ", plugins with `" + strings.ReplaceAll(v.PluginLines, "\n", "; ") + "`"
		}
		figsIn := "all figures"
		if v.Figures != nil {
			figsIn = fmt.Sprintf("figures %v", v.Figures)
		}
		store := fmt.Sprintf("`store = %q`", v.Store)
		if v.Store == "postgres" {
			store = "`store = \"postgres://...\"` (a PostgreSQL 15 server the harness starts, unix socket, its defaults)"
		}
		if v.Replicas > 1 {
			store += fmt.Sprintf(", %d server processes on the one database, the load spread across them", v.Replicas)
		}
		p("- **%s**: %s%s (%s).\n", v.Name, store, extra, figsIn)
	}
	p("\nPeers: mcp-go v1.2.1 (`bench/peers/mcpgo`, its own Go module) and the TypeScript SDK 1.32.2\n")
	p("(`bench/peers/ts`, pinned in package-lock.json), each serving natively the trivial tool `ping` and\n")
	p("`ask` (requests user input, for figure 4).\n\n")
	p("## Targets\n\n| target | configuration | got | met | what holds it back |\n|---|---|---|---|---|\n")
	for _, f := range figs {
		for _, t := range f.Targets {
			met, why := "yes", ""
			if !t.Met {
				met, why = "**no**", t.Why
			}
			p("| %s (figure %d) | %s | %s | %s | %s |\n", t.Goal, f.N, t.Variant, t.Got, met, why)
		}
	}
	for _, f := range figs {
		p("\n## %d. %s\n\n", f.N, f.Title)
		p("%s\n\nBaseline: %s\n\n", f.What, f.Baseline)
		p("| | median | [min, max] | unit |\n|---|---|---|---|\n")
		for _, r := range f.Rows {
			lo, hi := r.Spread()
			label := r.Label
			if r.Ratio {
				label = "*ratio* " + label
			}
			p("| %s | %s | [%s, %s] | %s |\n", label, format(r.Median()), format(lo), format(hi), r.Unit)
		}
		for _, n := range f.Notes {
			p("\n%s\n", n)
		}
		p("\nReproduce: `%s`\n", f.Reproduce)
	}
	p("\n## Reproduce everything\n\n```sh\nmake bench          # all figures, %d repetitions, writes docs/BENCHMARKS.md\n", 3)
	p("make bench-smoke    # a few seconds per figure, asserts nothing about time (CI)\n")
	p("go test ./bench -run '^$' -bench . -benchtime 2s   # the in-process Go benchmarks\n```\n\n")
	p("The harness builds `cmd/mcp-wasmhost` and the mcp-go peer, runs `npm ci` in bench/peers/ts when its\n")
	p("packages are missing, and generates every config.toml from a template (bench/harness/env.go).\n")
	_, err := io.WriteString(w, b.String())
	return err
}
