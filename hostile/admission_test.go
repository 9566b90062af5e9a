package hostile_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/mcptest"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
)

// A plugin at its limit queues a call and shows the wait in the task's statusMessage,
// and refuses a call past its queue with JSON-RPC error -32000 that names the limit;
// the queued task then runs and completes.
func TestAdmissionOverTheWire(t *testing.T) {
	wasm := testenv.Path("plugins/toolbox/toolbox.wasm")
	b, err := os.ReadFile(wasm)
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`[server]
cache_dir = %q

[tasks]
store = "memory"

[[plugins]]
name = "toolbox"
path = %q
sha256 = %q
max_concurrent = 1
max_queued = 1
queue_timeout = "1m"
workers = 1
`, testenv.CacheDir(), wasm, digest(b))
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "--config", path)
	stderr := &testenv.SyncBuffer{}
	cmd.Stderr = stderr
	c := mcptest.Dial(t, &mcp.CommandTransport{Command: cmd}, nil)

	// The running call: 20 steps of 100 ms.
	running := c.CreateTask("toolbox_slow_count", map[string]any{"to": 20, "delay_ms": 100}, map[string]any{}, nil)
	queued := c.CreateTask("toolbox_slow_count", map[string]any{"to": 1, "delay_ms": 1}, map[string]any{}, nil)
	if !eventually(func() bool {
		return strings.Contains(c.Get(queued.TaskID).StatusMessage, `plugin "toolbox" is at its limit of 1 concurrent calls`)
	}) {
		t.Fatalf("queued task = %+v; want its wait in statusMessage", c.Get(queued.TaskID))
	}
	werr := c.CallErr0("tools/call", map[string]any{"name": "toolbox_slow_count", "arguments": map[string]any{"to": 1}})
	want := `plugin "toolbox" is at its limit of 1 concurrent calls and 1 queued; try again later`
	if werr == nil || werr.Code != -32000 || werr.Message != want {
		t.Fatalf("tools/call past the queue = %v; want -32000 %q", werr, want)
	}
	if got := c.WaitStatus(queued.TaskID, "completed"); got.StatusMessage != "" {
		t.Errorf("completed queued task statusMessage = %q, want none", got.StatusMessage)
	}
	c.WaitStatus(running.TaskID, "completed")
	if t.Failed() {
		t.Logf("server log:\n%s", stderr.String())
	}
}
