package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/mcptest"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
)

// answer is one JSON-RPC response as a client reads it off the wire.
type answer struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// lineClient speaks newline-delimited JSON-RPC to the binary's stdio, byte for byte
// what the test writes, as a client with a bug or a hostile one would.
type lineClient struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *testenv.SyncBuffer

	mu      sync.Mutex
	answers []answer
	arrived chan struct{} // a token per answer read
	ended   chan struct{} // closed when stdout ends
}

func startLines(t *testing.T, cfg string) *lineClient {
	t.Helper()
	c := &lineClient{t: t, cmd: exec.Command(binary, "--config", cfg), stderr: &testenv.SyncBuffer{},
		arrived: make(chan struct{}, 1000), ended: make(chan struct{})}
	c.cmd.Stderr = c.stderr
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.cmd.Process.Kill(); c.cmd.Wait() })
	go func() {
		defer close(c.ended)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var a answer
			if json.Unmarshal(sc.Bytes(), &a) != nil || (a.Result == nil && a.Error == nil) {
				continue // a notification or request from the server
			}
			c.mu.Lock()
			c.answers = append(c.answers, a)
			c.mu.Unlock()
			c.arrived <- struct{}{}
		}
	}()
	return c
}

func (c *lineClient) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.stdin, line+"\n"); err != nil {
		c.t.Fatalf("write %.60q: %v\nstderr:\n%s", line, err, c.stderr)
	}
}

// await returns the answer with this id (its JSON text), waiting for it.
func (c *lineClient) await(id string) answer {
	c.t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		c.mu.Lock()
		for _, a := range c.answers {
			if string(a.ID) == id {
				c.mu.Unlock()
				return a
			}
		}
		c.mu.Unlock()
		select {
		case <-c.arrived:
		case <-c.ended:
			c.mu.Lock()
			defer c.mu.Unlock()
			for _, a := range c.answers {
				if string(a.ID) == id {
					return a
				}
			}
			c.t.Fatalf("the server's output ended with no answer to id %s\nstderr:\n%s", id, c.stderr)
		case <-deadline:
			c.t.Fatalf("no answer to id %s\nstderr:\n%s", id, c.stderr)
		}
	}
}

func (c *lineClient) initialize() {
	c.t.Helper()
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"lines","version":"1"}}}`)
	if a := c.await("1"); a.Error != nil {
		c.t.Fatalf("initialize: %+v", a.Error)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// TestStdioBadLines (issue #12, finding 4): a truncated line, a line nested 100,000
// deep and a 20 MB line each get an error answer, the next request is answered, and a
// task that was running meanwhile finishes.
func TestStdioBadLines(t *testing.T) {
	cfg := writeConfig(t, serverTOML(t)+
		pluginTOML(t, "textkit", "plugins/textkit/textkit.wasm", "")+
		pluginTOML(t, "toolbox", "plugins/toolbox/toolbox.wasm", ""))
	c := startLines(t, cfg)
	c.initialize()
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"toolbox_timer","arguments":{"seconds":2},"task":{}}}`)
	var created struct {
		Task struct {
			TaskID string `json:"taskId"`
		} `json:"task"`
	}
	if a := c.await("2"); a.Error != nil || json.Unmarshal(a.Result, &created) != nil || created.Task.TaskID == "" {
		t.Fatalf("tools/call as a task = %s %+v", a.Result, a.Error)
	}

	big := `{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"textkit_stats","arguments":{"text":"` +
		strings.Repeat("a", 20<<20) + `"}}}`
	bad := []struct {
		name, line string
		id         string // of the error answer
		code       int64
	}{
		{"truncated", `{"jsonrpc":"2.0","id":10,"method":"tools/li`, "", -32700},
		{"100000 deep", `{"jsonrpc":"2.0","id":"deep","method":"tools/list","params":` + strings.Repeat("[", 100_000), `"deep"`, -32600},
		{"20 MB", big, `"big"`, -32600},
	}
	for i, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			c.send(b.line)
			next := fmt.Sprint(100 + i)
			c.send(`{"jsonrpc":"2.0","id":` + next + `,"method":"tools/list"}`)
			if a := c.await(next); a.Error != nil || !bytes.Contains(a.Result, []byte("textkit_stats")) {
				t.Errorf("tools/list after the %s line = %.80s %+v", b.name, a.Result, a.Error)
			}
			if b.id != "" {
				if a := c.await(b.id); a.Error == nil || a.Error.Code != b.code {
					t.Errorf("answer to the %s line = %+v, want code %d", b.name, a.Error, b.code)
				}
			}
		})
	}
	c.mu.Lock()
	var nulls []int64
	for _, a := range c.answers {
		if string(a.ID) == "null" && a.Error != nil {
			nulls = append(nulls, a.Error.Code)
		}
	}
	c.mu.Unlock()
	if len(nulls) != 1 || nulls[0] != -32700 {
		t.Errorf("answers with id null: codes %v, want one -32700 (the truncated line)", nulls)
	}
	c.send(`{"jsonrpc":"2.0","id":3,"method":"tasks/result","params":{"taskId":"` + created.Task.TaskID + `"}}`)
	if a := c.await("3"); a.Error != nil || !bytes.Contains(a.Result, []byte("done")) {
		t.Errorf("tasks/result of the task that ran meanwhile = %s %+v", a.Result, a.Error)
	}
}

// TestStdioPipedEOF (issue #12, finding 4): a client that pipes its requests and closes
// stdin gets every answer before the server exits.
func TestStdioPipedEOF(t *testing.T) {
	cfg := writeConfig(t, serverTOML(t)+pluginTOML(t, "toolbox", "plugins/toolbox/toolbox.wasm", ""))
	c := startLines(t, cfg)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n" +
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"toolbox_slow_count","arguments":{"to":3,"delay_ms":300}}}`)
	c.stdin.Close()
	select {
	case <-c.ended:
	case <-time.After(60 * time.Second):
		t.Fatalf("the server did not end after its input did\nstderr:\n%s", c.stderr)
	}
	exited := make(chan error, 1)
	go func() { exited <- c.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("exit: %v\nstderr:\n%s", err, c.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("the server did not exit after its input ended")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	got := map[string]answer{}
	for _, a := range c.answers {
		got[string(a.ID)] = a
	}
	for _, id := range []string{"1", "2", "3"} {
		if a, ok := got[id]; !ok || a.Error != nil {
			t.Errorf("answer to id %s = %+v, %v; want a result (answers: %d of 3)", id, a.Error, ok, len(got))
		}
	}
	if !bytes.Contains(got["3"].Result, []byte(`counted`)) {
		t.Errorf("tools/call answer = %s", got["3"].Result)
	}
}

// post sends one JSON-RPC body; it returns the status, the session header and the
// JSON-RPC answer (from a JSON body or the first SSE data line).
func post(t *testing.T, url, session, body string) (int, string, answer) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var a answer
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimPrefix(line, "data: ")
		if json.Unmarshal([]byte(line), &a) == nil && (a.Result != nil || a.Error != nil) {
			break
		}
	}
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), a
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}`

// TestHTTPLimits (issue #12, findings 8 and 11): a POST without a session gets 400 and
// -32600 (a stateless 2026-07-28 request still works); a body over max_message_bytes
// gets 413; sessions beyond max_sessions are refused with 503 until idle ones expire;
// a trickled body is cut after body_read_timeout.
func TestHTTPLimits(t *testing.T) {
	cfg := writeConfig(t, strings.Replace(serverTOML(t), "[server]\n",
		"[server]\nbody_read_timeout = \"500ms\"\nmax_sessions = 2\nsession_idle_timeout = \"2s\"\nmax_message_bytes = 2097152\n", 1)+
		pluginTOML(t, "textkit", "plugins/textkit/textkit.wasm", ""))
	url, _ := startHTTP(t, cfg)

	t.Run("missing session", func(t *testing.T) {
		status, _, a := post(t, url, "", `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`)
		if status != http.StatusBadRequest || a.Error == nil || a.Error.Code != -32600 || string(a.ID) != "5" {
			t.Errorf("tools/list without a session = %d %+v id %s, want 400, code -32600, id 5", status, a.Error, a.ID)
		}
		sl := &mcptest.Stateless{URL: url}
		for _, method := range []string{"server/discover", "tools/list"} {
			resp, err := sl.Call(method, nil, nil)
			if err != nil || resp.HTTPStatus != http.StatusOK || resp.Error != nil {
				t.Errorf("stateless 2026-07-28 %s without a session = %+v, %v; want 200 and a result", method, resp, err)
			}
		}
	})

	t.Run("oversized body", func(t *testing.T) {
		body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"` + strings.Repeat("x", 2<<20) + `"}}`
		if status, _, _ := post(t, url, "", body); status != http.StatusRequestEntityTooLarge {
			t.Errorf("a body over max_message_bytes = %d, want 413", status)
		}
	})

	t.Run("session cap and idle expiry", func(t *testing.T) {
		for i := range 2 {
			if status, id, a := post(t, url, "", initBody); status != http.StatusOK || id == "" || a.Error != nil {
				t.Fatalf("initialize #%d = %d session %q %+v", i+1, status, id, a.Error)
			}
		}
		status, id, a := post(t, url, "", initBody)
		if status != http.StatusServiceUnavailable || id != "" || a.Error == nil || a.Error.Code != -32000 {
			t.Fatalf("initialize beyond max_sessions = %d session %q %+v, want 503 and code -32000", status, id, a.Error)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			status, id, _ := post(t, url, "", initBody)
			if status == http.StatusOK && id != "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("initialize after the idle timeout = %d, want the idle sessions gone", status)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})

	t.Run("trickled body", func(t *testing.T) {
		took, answer, err := testenv.Trickle(strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp"), 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(answer, "HTTP/1.1 408 ") {
			t.Errorf("answer to a trickled body = %.60q, want 408 Request Timeout", answer)
		}
		if took > 15*time.Second {
			t.Errorf("a trickled body held its connection for %v, want it cut after body_read_timeout (500ms)", took)
		}
		t.Logf("trickled body cut after %v (body_read_timeout 500ms)", took)
	})
}

// TestMessageLimitAbovePluginInput: a plugin input that no message could carry is a
// configuration error, and raising max_message_bytes fixes it.
func TestMessageLimitAbovePluginInput(t *testing.T) {
	plugin := pluginTOML(t, "textkit", "plugins/textkit/textkit.wasm", "") + "max_input_bytes = 16777216\n"
	out, err := exec.Command(binary, "--config", writeConfig(t, serverTOML(t)+plugin), "check").CombinedOutput()
	if err == nil || !strings.Contains(string(out), `plugin "textkit": max_input_bytes 16777216 is not below [server] max_message_bytes 8388608`) {
		t.Errorf("check(max_input_bytes 16 MiB) = %v:\n%s\nwant the limits named", err, out)
	}
	raised := strings.Replace(serverTOML(t), "[server]\n", "[server]\nmax_message_bytes = 20000000\n", 1)
	if out, err := exec.Command(binary, "--config", writeConfig(t, raised+plugin), "check").CombinedOutput(); err != nil {
		t.Errorf("check(max_message_bytes raised) = %v:\n%s", err, out)
	}
}
