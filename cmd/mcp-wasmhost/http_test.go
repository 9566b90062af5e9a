package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/mcptest"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
)

// startHTTP runs the binary on a loopback port with cfg and returns its /mcp URL and
// its log (at debug).
func startHTTP(t testing.TB, cfg string) (string, *testenv.SyncBuffer) {
	t.Helper()
	return startHTTPOn(t, cfg, "127.0.0.1:0")
}

// startHTTPAt runs the binary listening on addr and returns its log.
func startHTTPAt(t *testing.T, cfg, addr string) *testenv.SyncBuffer {
	t.Helper()
	_, log := startHTTPOn(t, cfg, addr)
	return log
}

func startHTTPOn(t testing.TB, cfg, addr string) (string, *testenv.SyncBuffer) {
	t.Helper()
	log := &testenv.SyncBuffer{}
	cmd := exec.Command(binary, "--config", cfg, "--http", addr, "--log-level", "debug")
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	urlRE := regexp.MustCompile(`url=(http://\S+/mcp)`)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := urlRE.FindStringSubmatch(log.String()); m != nil {
			return m[1], log
		}
	}
	t.Fatalf("the server did not report its URL; its log:\n%s", log)
	return "", nil
}

// waitLog waits (generously) until the log has a line matching re, and returns it.
func waitLog(t *testing.T, log *testenv.SyncBuffer, re *regexp.Regexp) []string {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := re.FindStringSubmatch(log.String()); m != nil {
			return m
		}
	}
	return nil
}

// rawPost sends one JSON-RPC message and returns the open response.
func rawPost(ctx context.Context, t *testing.T, client *http.Client, url string, header map[string]string, msg map[string]any) *http.Response {
	t.Helper()
	body, _ := json.Marshal(msg)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestDisconnectStopsSyncCall: a sync call whose HTTP client closes the connection is
// stopped (its instance freed) and sends nothing more, on the stateless wire
// (2026-07-28) and in a 2025-11-25 session.
func TestDisconnectStopsSyncCall(t *testing.T) {
	cfg := writeConfig(t, serverTOML(t)+pluginTOML(t, "toolbox", "plugins/toolbox/toolbox.wasm", ""))
	url, log := startHTTP(t, cfg)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	slow := map[string]any{"name": "toolbox_slow_count", "arguments": map[string]any{"to": 500, "delay_ms": 20}}
	tests := []struct {
		name string
		call func(ctx context.Context) *http.Response
	}{
		{"stateless", func(ctx context.Context) *http.Response {
			params := map[string]any{"_meta": map[string]any{"progressToken": "p",
				"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
				"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
				"io.modelcontextprotocol/clientCapabilities": map[string]any{}}}
			for k, v := range slow {
				params[k] = v
			}
			return rawPost(ctx, t, client, url, map[string]string{"MCP-Protocol-Version": "2026-07-28",
				"Mcp-Method": "tools/call", "Mcp-Name": "toolbox_slow_count"},
				map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
		}},
		{"session", func(ctx context.Context) *http.Response {
			resp := rawPost(context.Background(), t, client, url, nil, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize",
				"params": map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
					"clientInfo": map[string]any{"name": "raw", "version": "1"}}})
			resp.Body.Close()
			h := map[string]string{"Mcp-Session-Id": resp.Header.Get("Mcp-Session-Id"), "MCP-Protocol-Version": "2025-11-25"}
			rawPost(context.Background(), t, client, url, h, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}).Body.Close()
			params := map[string]any{"_meta": map[string]any{"progressToken": "p"}}
			for k, v := range slow {
				params[k] = v
			}
			return rawPost(ctx, t, client, url, h, map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params})
		}},
	}
	stoppedRE := regexp.MustCompile(`call stopped: its client went away.*stopped_in=(\S+)`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := strings.Count(log.String(), "call stopped: its client went away")
			ctx, cancel := context.WithCancel(context.Background())
			resp := tt.call(ctx)
			// Running: its first progress notification arrived.
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() && !strings.Contains(sc.Text(), "notifications/progress") {
			}
			cancel() // the client goes away: the connection closes
			resp.Body.Close()
			closed := time.Now()
			var stopped []string
			for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if all := stoppedRE.FindAllStringSubmatch(log.String(), -1); len(all) > before {
					stopped = all[len(all)-1]
					break
				}
			}
			if stopped == nil {
				t.Fatalf("the call was not stopped after its client went away; %d progress notifications could not be delivered",
					strings.Count(log.String(), "progress notification not delivered"))
			}
			t.Logf("guest stopped %s after the server saw the disconnect; log line seen %v after the close",
				stopped[1], time.Since(closed).Round(time.Millisecond))
			undelivered := strings.Count(log.String(), "progress notification not delivered")
			time.Sleep(300 * time.Millisecond) // 15 steps of the guest, had it gone on
			if n := strings.Count(log.String(), "progress notification not delivered"); n != undelivered {
				t.Errorf("%d progress notifications after the call was stopped, want none", n-undelivered)
			}
		})
	}
}

// TestDisconnectKeepsTask: a task lives on when the HTTP client that created it goes
// away.
func TestDisconnectKeepsTask(t *testing.T) {
	cfg := writeConfig(t, serverTOML(t)+pluginTOML(t, "toolbox", "plugins/toolbox/toolbox.wasm", ""))
	url, _ := startHTTP(t, cfg)
	c := &mcptest.Stateless{URL: url, Caps: mcptest.TasksExtension(),
		Client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	resp, err := c.Call("tools/call", map[string]any{"name": "toolbox_slow_count",
		"arguments": map[string]any{"to": 10, "delay_ms": 50}}, nil)
	if err != nil || resp.Error != nil {
		t.Fatalf("tools/call = %v, %v", resp, err)
	}
	var created struct {
		ResultType string `json:"resultType"`
		TaskID     string `json:"taskId"`
	}
	json.Unmarshal(resp.Result, &created)
	if created.ResultType != "task" || created.TaskID == "" {
		t.Fatalf("tools/call = %s, want a task", resp.Result)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		got, err := c.Call("tasks/get", map[string]any{"taskId": created.TaskID}, nil)
		if err != nil || got.Error != nil {
			t.Fatalf("tasks/get = %v, %v", got, err)
		}
		if strings.Contains(string(got.Result), `"status":"completed"`) {
			if !strings.Contains(string(got.Result), `"counted":10`) {
				t.Errorf("tasks/get = %s, want the count to 10", got.Result)
			}
			return
		}
		if !strings.Contains(string(got.Result), `"status":"working"`) || time.Now().After(deadline) {
			t.Fatalf("tasks/get = %s, want working, then completed", got.Result)
		}
	}
}

// fromSource is a stateless client of the Tasks extension whose connections come
// from the loopback address ip.
func fromSource(url, ip string) *mcptest.Stateless {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &mcptest.Stateless{URL: url, Caps: mcptest.TasksExtension(),
		Client: &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}}
}

// TestAnonymousQuotas: anonymous stateless clients share an owner, not a quota. Client
// A using up its max_per_client does not stop client B (another source address);
// all anonymous clients together stop at max_anonymous. A task's ID stays the
// capability: B may read A's task.
func TestAnonymousQuotas(t *testing.T) {
	cfg := writeConfig(t, fmt.Sprintf("[server]\ncache_dir = %q\n\n[tasks]\ndata_dir = %q\nmax_per_client = 2\nmax_anonymous = 3\n\n",
		testenv.CacheDir(), t.TempDir())+pluginTOML(t, "toolbox", "plugins/toolbox/toolbox.wasm", ""))
	url, _ := startHTTP(t, cfg)
	a, b, c := fromSource(url, "127.0.0.2"), fromSource(url, "127.0.0.3"), fromSource(url, "127.0.0.4")
	start := func(s *mcptest.Stateless) (string, *mcptest.Response) {
		resp, err := s.Call("tools/call", map[string]any{"name": "toolbox_slow_count",
			"arguments": map[string]any{"to": 300, "delay_ms": 100}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var created struct {
			TaskID string `json:"taskId"`
		}
		json.Unmarshal(resp.Result, &created)
		return created.TaskID, resp
	}
	steps := []struct {
		name   string
		client *mcptest.Stateless
		refuse string // "" means the task starts
	}{
		{"A's first", a, ""},
		{"A's second", a, ""},
		{"A's third: over its max_per_client", a, "the limit per client is 2"},
		{"B's first: A does not block it", b, ""},
		{"C's first: over max_anonymous", c, "max_anonymous"},
	}
	var first string
	for _, st := range steps {
		id, resp := start(st.client)
		switch {
		case st.refuse == "" && (resp.Error != nil || id == ""):
			t.Errorf("%s: tools/call = %+v %s, want a task", st.name, resp.Error, resp.Result)
		case st.refuse != "" && (resp.Error == nil || !strings.Contains(resp.Error.Message, st.refuse)):
			t.Errorf("%s: tools/call = %+v %s, want refused with %q", st.name, resp.Error, resp.Result, st.refuse)
		}
		if first == "" {
			first = id
		}
	}
	got, err := b.Call("tasks/get", map[string]any{"taskId": first}, nil)
	if err != nil || got.Error != nil || !strings.Contains(string(got.Result), first) {
		t.Errorf("tasks/get of A's task by B = %+v, %v, want the task (its ID is the capability)", got, err)
	}
}

// TestDuplicateKeyArguments: arguments with a key twice are refused (-32602) before
// any guest runs: the guest would read them otherwise than the check did.
func TestDuplicateKeyArguments(t *testing.T) {
	cfg := writeConfig(t, serverTOML(t)+pluginTOML(t, "toolbox", "plugins/toolbox/toolbox.wasm", ""))
	url, _ := startHTTP(t, cfg)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"toolbox_slow_count",` +
		`"arguments":{"to":1,"to":1000},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "toolbox_slow_count"} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	out.ReadFrom(resp.Body)
	if !strings.Contains(out.String(), `"code":-32602`) || !strings.Contains(out.String(), "duplicate object key") {
		t.Errorf("tools/call with a key twice = HTTP %d %s, want -32602 naming the duplicate key", resp.StatusCode, out.String())
	}
}
