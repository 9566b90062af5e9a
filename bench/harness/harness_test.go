package harness

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/mcp-wasmhost/mcp-wasmhost/host"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/pgtest"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
)

// server serves textkit and asker in this process, as the real binary does.
func server(t *testing.T) *host.Server {
	t.Helper()
	e := testenv.Engine(t)
	catalog, err := plugins.NewCatalog([]*plugins.Plugin{
		testenv.Load(t, e, testenv.Spec(t, "textkit", textkit.Path)),
		testenv.Load(t, e, testenv.Spec(t, "asker", asker.Path)),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := host.New(catalog, host.Options{Tasks: tasks.Options{MaxPerOwner: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	return srv
}

// TestClient drives a real server with the harness's client over both transports:
// a sync call, a task polled to completed, a task parked at input_required and
// cancelled, and a JSON-RPC error.
func TestClient(t *testing.T) {
	srv := server(t)
	dial := map[string]func(t *testing.T) *Client{
		"stdio": func(t *testing.T) *Client {
			cr, sw := io.Pipe() // server -> client
			sr, cw := io.Pipe() // client -> server
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- srv.ServeStdio(ctx, sr, sw) }()
			t.Cleanup(func() { cancel(); cw.Close(); <-done })
			c, err := DialStdio(context.Background(), cw, cr, Caps{Elicitation: true})
			if err != nil {
				t.Fatal(err)
			}
			return c
		},
		"http": func(t *testing.T) *Client {
			hs := httptest.NewServer(srv.HTTPHandler())
			t.Cleanup(hs.Close)
			c, err := DialHTTP(context.Background(), &http.Client{}, hs.URL+"/mcp", Caps{Elicitation: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := c.Close(); err != nil {
					t.Errorf("Close() = %v", err)
				}
			})
			return c
		},
	}
	for _, name := range []string{"stdio", "http"} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c := dial[name](t)
			if err := callTool(ctx, c, "textkit_ping", map[string]any{}); err != nil {
				t.Fatalf("callTool(textkit_ping) = %v", err)
			}
			id, err := createTask(ctx, c, "textkit_ping", map[string]any{})
			if err != nil {
				t.Fatalf("createTask(textkit_ping) = %v", err)
			}
			if err := awaitStatus(ctx, c, id, "completed"); err != nil {
				t.Fatalf("awaitStatus(completed) = %v", err)
			}
			parked, err := createTask(ctx, c, "asker_ask", map[string]any{})
			if err != nil {
				t.Fatalf("createTask(asker_ask) = %v", err)
			}
			if err := awaitStatus(ctx, c, parked, "input_required"); err != nil {
				t.Fatalf("awaitStatus(input_required) = %v", err)
			}
			seen, stop := c.ExpectStatus(parked, "cancelled")
			defer stop()
			raw, err := c.Call(ctx, "tasks/cancel", map[string]any{"taskId": parked})
			if task, derr := rawTask(raw); err != nil || derr != nil || task.Status != "cancelled" {
				t.Fatalf("tasks/cancel = %s, %v, want cancelled", raw, err)
			}
			if name == "stdio" { // the server sends notifications/tasks/status on stream transports only
				select {
				case <-seen:
				case <-time.After(30 * time.Second):
					t.Errorf("ExpectStatus(%s, cancelled): no notification within 30 s of the cancel", parked)
				}
			}
			if err := awaitStatus(ctx, c, parked, "completed"); err == nil || !strings.Contains(err.Error(), "cancelled") {
				t.Errorf("awaitStatus(cancelled task, completed) = %v, want an error naming cancelled", err)
			}
			_, err = c.Call(ctx, "tasks/get", map[string]any{"taskId": "no-such-task"})
			var rpc *Error
			if !errors.As(err, &rpc) || rpc.Code != -32602 {
				t.Errorf("tasks/get(unknown) = %v, want JSON-RPC error -32602", err)
			}
		})
	}
}

// TestStdioServerGone: a call on a connection whose server went away fails instead of
// hanging.
func TestStdioServerGone(t *testing.T) {
	srv := server(t)
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdio(ctx, sr, sw) }()
	c, err := DialStdio(context.Background(), cw, cr, Caps{})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	sw.Close()
	if _, err := c.Call(context.Background(), "tools/list", map[string]any{}); err == nil {
		t.Error("tools/list after the server ended succeeded, want an error")
	}
}

func TestReadSSE(t *testing.T) {
	stream := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"elicitation/create\",\"params\":{}}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"ok\":true}}"
	res, err := readSSE(strings.NewReader(stream), 7)
	if err != nil || string(res) != `{"ok":true}` {
		t.Errorf("readSSE = %s, %v, want the response with id 7", res, err)
	}
	if _, err := readSSE(strings.NewReader("data: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\n"), 7); err == nil {
		t.Error("readSSE of a stream without the response succeeded, want an error")
	}
}

// TestCopyWithSection: the copies figure 5 starts are valid, distinct modules.
func TestCopyWithSection(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.wasm"), filepath.Join(dir, "b.wasm")
	for i, p := range []string{a, b} {
		if err := copyWithSection(testenv.Path(textkit.Path), p, strings.Repeat("x", 200*i+1)); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCustomSections(true))
	defer rt.Close(ctx)
	var hashes []string
	for _, p := range []string{a, b} {
		wasm, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		m, err := rt.CompileModule(ctx, wasm)
		if err != nil {
			t.Fatalf("CompileModule(%s) = %v", p, err)
		}
		found := false
		for _, s := range m.CustomSections() {
			found = found || s.Name() == "benchall"
		}
		if !found {
			t.Errorf("%s has no benchall section", p)
		}
		hashes = append(hashes, string(wasm))
	}
	if hashes[0] == hashes[1] {
		t.Error("the two copies are identical")
	}
}

func TestStatistics(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	for _, c := range []struct {
		in   float64
		want string
	}{{0.1234, "0.123"}, {1.234, "1.23"}, {12.34, "12.3"}, {1234.5, "1234"}, {1234567, "1,234,567"}, {20000, "20,000"}} {
		if got := format(c.in); got != c.want {
			t.Errorf("format(%v) = %q, want %q", c.in, got, c.want)
		}
	}
	f := &Figure{}
	for _, v := range []float64{10, 20, 30} {
		f.add("a", "us", v)
	}
	for _, v := range []float64{5, 5} {
		f.add("b", "us", v)
	}
	f.ratio("a/b", "a", "b")
	r := f.find("a/b")
	if r == nil || !r.Ratio || len(r.Samples) != 2 || r.Samples[0] != 2 || r.Samples[1] != 4 {
		t.Errorf("ratio rows = %+v, want [2 4] (pairs of the same repetition only)", r)
	}
}

// TestReplicaRatios: figure 2 compares each variant of several replicas with the one
// of a single process on the same store, repetition by repetition.
func TestReplicaRatios(t *testing.T) {
	var one, three Variant
	for _, v := range Variants {
		switch {
		case v.Store == "postgres" && v.Replicas > 1:
			three = v
		case v.Store == "postgres":
			one = v
		}
	}
	if one.Name == "" || three.Name == "" || !one.in(2) || !three.in(2) {
		t.Fatalf("Variants = %+v, want PostgreSQL with one and with several replicas in figure 2", Variants)
	}
	f := &Figure{}
	for _, c := range []struct {
		v    Variant
		rate float64
	}{{one, 100}, {three, 150}} {
		f.add(c.v.Name+", stdio, c=16", "tasks/s", c.rate)
		f.add(c.v.Name+", stdio, c=16, server CPU per task", "us CPU", c.rate*10)
		f.add(c.v.Name+", stdio, c=16, PostgreSQL CPU per task", "us CPU", c.rate*2)
	}
	replicaRatios(f)
	for _, label := range []string{
		three.Name + " / " + one.Name + ", stdio, c=16",
		"server CPU per task, " + three.Name + " / " + one.Name + ", stdio, c=16",
		"PostgreSQL CPU per task, " + three.Name + " / " + one.Name + ", stdio, c=16",
	} {
		if r := f.find(label); r == nil || !r.Ratio || len(r.Samples) != 1 || r.Samples[0] != 1.5 {
			t.Errorf("row %q = %+v, want the ratio 1.5", label, r)
		}
	}
	if len(f.Notes) != 1 {
		t.Errorf("Notes = %q, want one note on the replicas", f.Notes)
	}
}

// TestPostgresCPU: the harness finds its PostgreSQL server's processes and reads their
// CPU time; without a server it says so.
func TestPostgresCPU(t *testing.T) {
	if _, err := (&Env{}).pgCPU(); err == nil {
		t.Error("pgCPU() without a PostgreSQL server succeeded, want an error")
	}
	e := &Env{pg: pgtest.Start(t)}
	before, err := e.pgCPU()
	if err != nil {
		t.Fatalf("pgCPU() = %v", err)
	}
	dsn, err := e.pg.CreateDatabase(context.Background()) // work for the server: a new database
	if err != nil {
		t.Fatal(err)
	}
	after, err := e.pgCPU()
	if err != nil || after < before || after == 0 {
		t.Errorf("pgCPU() after creating %s = %v, %v; want at least %v and more than 0", dsn, after, err, before)
	}
}
