package hostile_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
)

// bodyTimeout is the hostile HTTP server's body_read_timeout.
const bodyTimeout = time.Second

// TestTrickledBodies: twenty clients that send their POST bodies a byte at a time are
// each cut off after body_read_timeout with 408, and a well-behaved client is served
// meanwhile (issue #12, finding 8: before, all twenty were still open after 25 s).
func TestTrickledBodies(t *testing.T) {
	b, err := os.ReadFile(testenv.Path("plugins/textkit/textkit.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("[server]\ncache_dir = %q\nbody_read_timeout = %q\n\n[tasks]\nstore = \"memory\"\n\n"+
		"[[plugins]]\nname = \"textkit\"\npath = %q\nsha256 = %q\n",
		testenv.CacheDir(), bodyTimeout, testenv.Path("plugins/textkit/textkit.wasm"), digest(b))
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, _ := serveHTTP(t, path)

	const clients = 20
	type cut struct {
		took   time.Duration
		answer string
		err    error
	}
	cuts := make([]cut, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			cuts[i].took, cuts[i].answer, cuts[i].err = testenv.Trickle(addr, 25*time.Second)
		})
	}
	// Meanwhile a well-behaved client connects and calls a tool.
	client := mcp.NewClient(&mcp.Implementation{Name: "polite", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "textkit_ping", Arguments: map[string]any{}}); err != nil {
		t.Errorf("a polite client's call while bodies trickle: %v", err)
	}
	wg.Wait()
	var slowest time.Duration
	for i, c := range cuts {
		switch {
		case c.err != nil:
			t.Errorf("trickling client %d: %v", i, c.err)
		case !strings.HasPrefix(c.answer, "HTTP/1.1 408 "):
			t.Errorf("trickling client %d was answered %.60q after %v, want 408", i, c.answer, c.took)
		case c.took > bodyTimeout+generous:
			t.Errorf("trickling client %d held its connection for %v, want it cut after %v", i, c.took, bodyTimeout)
		}
		slowest = max(slowest, c.took)
	}
	t.Logf("%d trickled bodies cut; the last after %v (body_read_timeout %v)", clients, slowest, bodyTimeout)
}

// serveHTTP starts the binary serving Streamable HTTP and returns its host:port and
// what it logs.
func serveHTTP(t *testing.T, config string) (string, *testenv.SyncBuffer) {
	t.Helper()
	cmd := exec.Command(binary, "--config", config, "--http", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	urlRE := regexp.MustCompile(`url=http://(\S+)/mcp`)
	found := make(chan string, 1)
	log := &testenv.SyncBuffer{}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			fmt.Fprintln(log, sc.Text())
			if m := urlRE.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case addr := <-found:
		return addr, log
	case <-time.After(time.Minute):
		t.Fatalf("the server did not report its URL; its log:\n%s", log)
	}
	return "", nil
}
