// Command fakejobs serves the fake asynchronous job service (plugins/jobs/fakejobs)
// that the bundled jobs plugin reaches in config.toml:
//
//	go run ./cmd/fakejobs                      # on 127.0.0.1:8787, jobs take 10s
//	go run ./cmd/fakejobs -addr 127.0.0.1:9000 -duration 1m
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/plugins/jobs/fakejobs"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8787", "address to listen on")
	duration := flag.Duration("duration", 10*time.Second, "how long a job runs unless it asks otherwise")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *addr, *duration); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, addr string, duration time.Duration) error {
	srv := &http.Server{Addr: addr, Handler: fakejobs.New(duration), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.ListenAndServe() }()
	fmt.Fprintf(os.Stderr, "fakejobs: serving http://%s/jobs (jobs take %v)\n", addr, duration)
	select {
	case err := <-done:
		return fmt.Errorf("serve %s: %w", addr, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shut down %s: %w", addr, err)
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
