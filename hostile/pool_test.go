package hostile_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/mcptest"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
)

// A call that does not stop gets its worker killed, and with it only the calls that
// share that worker: with two workers per plugin, the tasks of other HTTP clients in
// the other worker complete.
func TestHungCallBlastRadius(t *testing.T) {
	wasm := testenv.Path("testdata/wasm/hangunanswered.wasm")
	b, err := os.ReadFile(wasm)
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("[server]\ncache_dir = %q\n\n[tasks]\nstore = \"memory\"\n\n"+
		"[[plugins]]\nname = \"hang\"\npath = %q\nsha256 = %q\nworkers = 2\ntimeout = \"10s\"\n", testenv.CacheDir(), wasm, digest(b))
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, log := serveHTTP(t, path)
	url := "http://" + addr + "/mcp"
	defer func() {
		if t.Failed() {
			t.Logf("server log:\n%s", log.String())
		}
	}()

	// Twelve clients each start a task whose guest waits for the person's answer.
	release := make(chan struct{})
	answer := func(*jsonrpc.Request) (any, error) {
		<-release
		return map[string]any{"action": "accept", "content": map[string]any{}}, nil
	}
	const clients = 12
	type started struct {
		c    *mcptest.Client
		task mcptest.Task
	}
	var waiting []started
	for range clients {
		c := mcptest.Dial(t, &mcp.StreamableClientTransport{Endpoint: url}, answer)
		task := c.CreateTask("hang_ask", map[string]any{}, map[string]any{}, nil)
		waiting = append(waiting, started{c, task})
	}
	// Over HTTP the server sends a task's request for input on the stream of the
	// client's tasks/result.
	for _, s := range waiting {
		go s.c.Call(context.Background(), "tasks/result", map[string]any{"taskId": s.task.TaskID})
	}
	for _, s := range waiting {
		if !eventuallyWithin(time.Minute, func() bool { return len(s.c.Requests()) == 1 }) {
			t.Fatalf("task %s: its request for input did not reach the client", s.task.TaskID)
		}
	}
	// One more client cannot answer (no elicitation capability): its guest hangs in
	// code no context stops, and cancelling its task gets its worker killed.
	hung := mcptest.DialWith(t, &mcp.StreamableClientTransport{Endpoint: url}, nil, map[string]any{})
	task := hung.CreateTask("hang_ask", map[string]any{}, map[string]any{}, nil)
	time.Sleep(300 * time.Millisecond) // let it reach the endless part
	hung.MustCall("tasks/cancel", map[string]any{"taskId": task.TaskID}, nil)
	// The calls in the killed worker fail, saying why; then the rest are answered.
	if !eventuallyWithin(time.Minute, func() bool {
		for _, s := range waiting {
			if s.c.Get(s.task.TaskID).Status == "failed" {
				return true
			}
		}
		return false
	}) {
		t.Fatal("no task failed after the hung call's worker was killed")
	}
	time.Sleep(200 * time.Millisecond) // the other failures of the same kill
	close(release)
	failed, completed := 0, 0
	for _, s := range waiting {
		var got mcptest.Task
		if !eventuallyWithin(time.Minute, func() bool {
			got = s.c.Get(s.task.TaskID)
			return got.Status == "completed" || got.Status == "failed"
		}) {
			t.Fatalf("task %s is %s, want it finished", got.TaskID, got.Status)
		}
		if got.Status == "completed" {
			completed++
			continue
		}
		failed++
		if !strings.Contains(got.StatusMessage, "did not stop") {
			t.Errorf("task %s failed with %q; want its worker's kill explained", got.TaskID, got.StatusMessage)
		}
	}
	t.Logf("%d tasks failed with the killed worker, %d completed", failed, completed)
	if completed == 0 || failed == 0 {
		t.Errorf("%d of %d tasks completed; want the tasks in the other worker to complete and those in the killed worker to fail",
			completed, clients)
	}
}

func eventuallyWithin(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}
