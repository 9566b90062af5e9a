// Command benchall runs the benchmark figures (issues #8, #13, #15, #20 and #22) against the real
// binaries (mcp-wasmhost and the native peers in bench/peers) and writes them, with the
// machine's details, as Markdown.
//
//	go run ./bench/cmd/benchall [-smoke] [-reps N] [-figures 1,2,...] [-out docs/BENCHMARKS.md]
//
// Run it from the repository root. -smoke takes a few samples per figure and proves
// that every step works; it asserts nothing about time. Any failing step exits 1.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/bench/harness"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "benchall:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, log io.Writer) error {
	fs := flag.NewFlagSet("benchall", flag.ContinueOnError)
	smoke := fs.Bool("smoke", false, "a few samples per figure: proves the harness works, measures nothing")
	reps := fs.Int("reps", 0, "repetitions per figure (default 3, smoke 1)")
	only := fs.String("figures", "1,2,3,4,5,6,7,9,10,11,12", "the figures to run, comma-separated")
	out := fs.String("out", "docs/BENCHMARKS.md", "where to write the report")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *reps == 0 {
		*reps = 3
		if *smoke {
			*reps = 1
		}
	}
	if *reps < 1 || *reps > 100 {
		return fmt.Errorf("-reps %d: want 1-100", *reps)
	}
	var picked []int
	for _, s := range strings.Split(*only, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || harness.Figures[n] == nil {
			return fmt.Errorf("-figures %q: want numbers of figures: 1-7, 9-12", *only)
		}
		picked = append(picked, n)
	}
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(root, "bench/peers/mcpgo/go.mod")); err != nil {
		return errors.New("run benchall from the repository root")
	}
	machine := harness.ReadMachine()
	start := time.Now()
	env, err := harness.Setup(ctx, root, *smoke, *reps, log)
	if err != nil {
		return err
	}
	defer env.Close()
	var figs []*harness.Figure
	for _, n := range picked {
		t0 := time.Now()
		f, err := harness.Figures[n](env, ctx)
		if err == nil {
			err = env.Err()
		}
		if err != nil {
			return fmt.Errorf("figure %d: %w", n, err)
		}
		fmt.Fprintf(log, "figure %d done in %s\n", n, time.Since(t0).Round(time.Millisecond))
		figs = append(figs, f)
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		return err
	}
	file, err := os.Create(*out)
	if err != nil {
		return err
	}
	if err := harness.Write(file, machine, env, figs, time.Since(start)); err != nil {
		file.Close()
		return err
	}
	if err := file.Close(); err != nil {
		return err
	}
	fmt.Fprintf(log, "wrote %s\n", *out)
	return nil
}
