package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
)

// listenParams are the params of a 2026-07-28 listen for task notifications.
var listenParams = map[string]any{
	"notifications": map[string]any{"taskIds": []string{"any"}},
	"_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
	},
}

// finalResult reports whether line is the listen's result {resultType: "complete"}
// tagged with its subscription ID.
func finalResult(line, id string) bool {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Result struct {
			ResultType string                     `json:"resultType"`
			Meta       map[string]json.RawMessage `json:"_meta"`
		} `json:"result"`
	}
	return json.Unmarshal([]byte(line), &msg) == nil && string(msg.ID) == id &&
		msg.Result.ResultType == "complete" && string(msg.Result.Meta["io.modelcontextprotocol/subscriptionId"]) == id
}

// TestListenShutdown: when the real binary gets SIGTERM, an open listen gets its
// final result {resultType: "complete"} at once, over HTTP (before, the HTTP server's
// 5 s shutdown wait ran out and cut the connection) and over stdio, and over stdio
// also when the client closes stdin; then the process exits.
func TestListenShutdown(t *testing.T) {
	cfg := writeConfig(t, serverTOML(t)+pluginTOML(t, "fixture", "conformance/fixture/fixture.wasm", ""))

	t.Run("HTTP", func(t *testing.T) {
		log := &testenv.SyncBuffer{}
		cmd := exec.Command(binary, "--config", cfg, "--http", "127.0.0.1:0")
		cmd.Stderr = log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		m := waitLog(t, log, regexp.MustCompile(`url=(http://\S+/mcp)`))
		if m == nil {
			t.Fatalf("no URL in the log:\n%s", log)
		}
		resp := rawPost(t.Context(), t, http.DefaultClient, m[1], map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"},
			map[string]any{"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen", "params": listenParams})
		defer resp.Body.Close()
		lines := make(chan string, 16)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
					lines <- data
				}
			}
		}()
		if ack := <-lines; !strings.Contains(ack, "notifications/subscriptions/acknowledged") {
			t.Fatalf("first event %q, want the acknowledgement", ack)
		}
		// A listen for resource updates only, which go-sdk would serve itself.
		resp2 := rawPost(t.Context(), t, http.DefaultClient, m[1], map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"},
			map[string]any{"jsonrpc": "2.0", "id": "R", "method": "subscriptions/listen", "params": map[string]any{
				"notifications": map[string]any{"resourceSubscriptions": []string{"test://watched-resource"}}, "_meta": listenParams["_meta"]}})
		defer resp2.Body.Close()
		sc2 := bufio.NewScanner(resp2.Body)
		for sc2.Scan() && !strings.Contains(sc2.Text(), "notifications/subscriptions/acknowledged") {
		}
		start := time.Now()
		cmd.Process.Signal(syscall.SIGTERM)
		var took time.Duration
		for line := range lines {
			if finalResult(line, `"L"`) {
				took = time.Since(start)
			}
		}
		if took == 0 {
			t.Fatalf("the listen's stream ended without its result; log:\n%s", log)
		}
		gotR := false
		for sc2.Scan() {
			if data, ok := strings.CutPrefix(sc2.Text(), "data: "); ok && finalResult(data, `"R"`) {
				gotR = true
			}
		}
		if !gotR {
			t.Error("the resource listen's stream ended without its result")
		}
		waitErr := make(chan error, 1)
		go func() { waitErr <- cmd.Wait() }()
		select {
		case <-waitErr:
		case <-time.After(4 * time.Second):
			t.Fatal("the server did not exit within 4 s of SIGTERM")
		}
		exited := time.Since(start)
		t.Logf("result %v after SIGTERM, exit after %v", took, exited)
		if took > time.Second {
			t.Errorf("the result came %v after SIGTERM, want it at once (under 1 s)", took)
		}
	})

	t.Run("stdio", func(t *testing.T) {
		stdio(t, cfg, func(cmd *exec.Cmd, _ io.WriteCloser) { cmd.Process.Signal(syscall.SIGTERM) })
	})
	// The client closing stdin ends the listen too, instead of holding the drain
	// (which waits up to 30 s for the answers of requests already read).
	t.Run("stdin closed", func(t *testing.T) {
		stdio(t, cfg, func(_ *exec.Cmd, in io.WriteCloser) { in.Close() })
	})
}

// stdio opens a listen over the binary's stdio, ends the input or the process with
// stop, and checks that the listen's result comes at once and the process exits.
func stdio(t *testing.T, cfg string, stop func(*exec.Cmd, io.WriteCloser)) {
	cmd := exec.Command(binary, "--config", cfg)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	log := &testenv.SyncBuffer{}
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	send := func(msg map[string]any) {
		b, _ := json.Marshal(msg)
		if _, err := in.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	send(map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "raw", "version": "1"}}})
	<-lines
	send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	send(map[string]any{"jsonrpc": "2.0", "id": 5, "method": "subscriptions/listen", "params": listenParams})
	if ack := <-lines; !strings.Contains(ack, "notifications/subscriptions/acknowledged") {
		t.Fatalf("first message %q, want the acknowledgement; log:\n%s", ack, log)
	}
	start := time.Now()
	stop(cmd, in)
	var took time.Duration
	for line := range lines {
		if finalResult(line, `5`) {
			took = time.Since(start)
		}
	}
	if took == 0 {
		t.Fatalf("stdout ended without the listen's result; log:\n%s", log)
	}
	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()
	select {
	case <-waitErr:
	case <-time.After(4 * time.Second):
		t.Fatal("the server did not exit within 4 s")
	}
	t.Logf("result %v after the stop, exit after %v", took, time.Since(start))
	if took > time.Second {
		t.Errorf("the result came %v after the stop, want it at once (under 1 s)", took)
	}
}
