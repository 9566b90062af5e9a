package hostile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/mcptest"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
)

// Waiting for a person is not run time (#13, finding 6): a plugin's timeout counts only
// the time its guest runs, not the time it waits for an answer to a request for input;
// input_timeout bounds that wait instead. Each mode runs the same guests: in a worker
// process (the default) and in the server's process (trusted).
var inputModes = []struct{ name, extra string }{
	{"worker", ""},
	{"trusted", "trusted = true"},
}

// inputServer starts the binary with the plugins given as name -> (wasm, extra config
// lines) and a 2025-11-25 client whose answers to elicitation come from answer.
func inputServer(t *testing.T, plugins map[string][2]string, answer func(*jsonrpc.Request) (any, error)) (*mcptest.Client, *testenv.SyncBuffer) {
	t.Helper()
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "[server]\ncache_dir = %q\nlog_level = \"debug\"\n\n[tasks]\nstore = \"memory\"\n\n", testenv.CacheDir())
	for name, p := range plugins {
		path := testenv.Path(p[0])
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&cfg, "[[plugins]]\nname = %q\npath = %q\nsha256 = %q\n%s\n\n", name, path, digest(b), p[1])
	}
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "--config", path)
	stderr := &testenv.SyncBuffer{}
	cmd.Stderr = stderr
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", stderr)
		}
	})
	return mcptest.Dial(t, &mcp.CommandTransport{Command: cmd}, answer), stderr
}

// accept is a person's answer to asker's question.
var accept = map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}

// finalStatus polls the task until it ends and returns "<status>: <statusMessage>".
func finalStatus(t *testing.T, c *mcptest.Client, id string, bound time.Duration) string {
	t.Helper()
	for deadline := time.Now().Add(bound); ; time.Sleep(20 * time.Millisecond) {
		got := c.Get(id)
		switch got.Status {
		case "completed", "failed", "cancelled":
			return got.Status + ": " + got.StatusMessage
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s is still %s (%s) after %v", id, got.Status, got.StatusMessage, bound)
		}
	}
}

// resultText is the text of a finished task's tool result.
func resultText(t *testing.T, c *mcptest.Client, id string) string {
	t.Helper()
	var res struct {
		Content []struct{ Text string }
	}
	c.MustCall("tasks/result", map[string]any{"taskId": id}, &res)
	if len(res.Content) == 0 {
		t.Fatalf("tasks/result(%s) has no content", id)
	}
	return res.Content[0].Text
}

// TestInputWaitIsNotRunTime: a task whose guest waits two minutes for a person's answer
// with timeout = "5s" completes with the answer (the case: a 35 s wait failed
// with "exceeded its time limit of 30s").
func TestInputWaitIsNotRunTime(t *testing.T) {
	const wait = 2 * time.Minute
	for _, mode := range inputModes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			c, _ := inputServer(t, map[string][2]string{
				"asker": {"testdata/wasm/asker.wasm", "timeout = \"5s\"\n" + mode.extra},
			}, func(*jsonrpc.Request) (any, error) {
				time.Sleep(wait)
				return accept, nil
			})
			task := c.CreateTask("asker_ask", map[string]any{}, map[string]any{}, nil)
			start := time.Now()
			c.WaitStatus(task.TaskID, "input_required")
			got := finalStatus(t, c, task.TaskID, wait+2*generous)
			if got != "completed: " {
				t.Fatalf("task after a %v wait = %q, want completed", wait, got)
			}
			if text := resultText(t, c, task.TaskID); text != "accept" {
				t.Errorf("tasks/result = %q, want the answer %q", text, "accept")
			}
			t.Logf("%s: completed after %v with timeout 5s", mode.name, time.Since(start).Round(time.Second))
		})
	}
}

// TestRunTimeAfterAnInputWait: the budget stands still only while the guest waits. A
// guest that loops after a 7 s wait for its answer is stopped 5 s (its timeout) after
// the answer: in process, in a worker by the worker's own clock (askloop), and in a
// worker by the supervisor's watchdog, which kills a guest wazero cannot interrupt
// (askspin).
func TestRunTimeAfterAnInputWait(t *testing.T) {
	const answerAfter = 7 * time.Second
	cases := []struct{ name, plugin, wasm, extra, want string }{
		{"worker", "askloop", "testdata/wasm/askloop.wasm", "", `failed: tool returned an error: plugin "askloop" was stopped: it exceeded its time limit of 5s`},
		{"trusted", "askloop", "testdata/wasm/askloop.wasm", "trusted = true", `failed: tool returned an error: plugin "askloop" was stopped: it exceeded its time limit of 5s`},
		{"worker watchdog", "askspin", "testdata/wasm/askspin.wasm", "", `failed: tool returned an error: plugin "askspin" was stopped: it exceeded its time limit of 5s (its worker process was killed`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var answered time.Time
			c, _ := inputServer(t, map[string][2]string{
				tc.plugin: {tc.wasm, "timeout = \"5s\"\n" + tc.extra},
			}, func(*jsonrpc.Request) (any, error) {
				time.Sleep(answerAfter)
				mu.Lock()
				answered = time.Now()
				mu.Unlock()
				return map[string]any{"action": "accept", "content": map[string]any{}}, nil
			})
			task := c.CreateTask(tc.plugin+"_ask", map[string]any{}, map[string]any{}, nil)
			got := finalStatus(t, c, task.TaskID, answerAfter+5*time.Second+2*generous)
			ended := time.Now()
			if !strings.HasPrefix(got, tc.want) {
				t.Fatalf("task = %q, want %q", got, tc.want)
			}
			mu.Lock()
			defer mu.Unlock()
			if answered.IsZero() {
				t.Fatal("the task ended before its question was answered: the wait counted as run time")
			}
			// The guest ran on for its whole budget after the answer (less what it used
			// before asking, next to nothing); a lower bound, which no slow machine breaks.
			if ran := ended.Sub(answered); ran < 4*time.Second {
				t.Errorf("the guest was stopped %v after the answer, want its 5s budget", ran)
			}
			t.Logf("%s: stopped %v after the answer", tc.name, ended.Sub(answered).Round(10*time.Millisecond))
		})
	}
}

// TestInputTimeout: input_timeout ends a wait nobody answers. The guest's request fails
// with {"error": "no answer within 2s"} (asker returns that as its error) and the
// task's statusMessage says so; a task's ttl, if shorter, bounds the wait instead; a
// synchronous call is bounded the same way.
func TestInputTimeout(t *testing.T) {
	for _, mode := range inputModes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			never := make(chan struct{})
			t.Cleanup(func() { close(never) })
			c, stderr := inputServer(t, map[string][2]string{
				"asker":    {"testdata/wasm/asker.wasm", "input_timeout = \"2s\"\n" + mode.extra},
				"patient":  {"testdata/wasm/asker.wasm", mode.extra},
				"askloop2": {"testdata/wasm/askloop.wasm", "timeout = \"1s\"\ninput_timeout = \"2s\"\n" + mode.extra},
			}, func(*jsonrpc.Request) (any, error) {
				<-never // nobody answers
				return nil, context.Canceled
			})
			t.Run("task", func(t *testing.T) {
				task := c.CreateTask("asker_ask", map[string]any{}, map[string]any{}, nil)
				c.WaitStatus(task.TaskID, "input_required")
				got := finalStatus(t, c, task.TaskID, 2*time.Second+2*generous)
				if want := "failed: tool returned an error: could not ask: no answer within 2s"; got != want {
					t.Errorf("task = %q, want %q", got, want)
				}
				// The parked instance's memory is logged (debug): asker's is one page.
				if want := "memory_bytes=65536"; !strings.Contains(stderr.String(), want) {
					t.Errorf("server log lacks %q when the task parked:\n%s", want, stderr)
				}
			})
			t.Run("task ttl shorter than input_timeout", func(t *testing.T) {
				task := c.CreateTask("patient_ask", map[string]any{}, map[string]any{"ttl": 3000}, nil)
				got := finalStatus(t, c, task.TaskID, 3*time.Second+2*generous)
				if want := "failed: tool returned an error: could not ask: no answer within 3s"; got != want {
					t.Errorf("task = %q, want %q", got, want)
				}
			})
			t.Run("statusMessage while the guest runs on", func(t *testing.T) {
				// askloop2 loops after its request fails: its task is working, and says why.
				task := c.CreateTask("askloop2_ask", map[string]any{}, map[string]any{}, nil)
				c.WaitStatus(task.TaskID, "input_required")
				deadline := time.Now().Add(2*time.Second + generous)
				for {
					got := c.Get(task.TaskID)
					if got.Status == "working" && got.StatusMessage == "no answer within 2s" {
						break
					}
					// (working with no message for a moment, between the end of the
					// wait and the note)
					pending := got.Status == "input_required" || got.Status == "working" && got.StatusMessage == ""
					if !pending || time.Now().After(deadline) {
						t.Fatalf("task = %s (%q), want working with %q", got.Status, got.StatusMessage, "no answer within 2s")
					}
					time.Sleep(5 * time.Millisecond)
				}
				got := finalStatus(t, c, task.TaskID, time.Second+2*generous)
				if want := "failed: tool returned an error: plugin \"askloop2\" was stopped: it exceeded its time limit of 1s"; !strings.HasPrefix(got, want) {
					t.Errorf("task = %q, want %q", got, want)
				}
			})
			t.Run("synchronous call", func(t *testing.T) {
				raw, err := c.Call(context.Background(), "tools/call", map[string]any{"name": "asker_ask", "arguments": map[string]any{}})
				if err != nil {
					t.Fatalf("tools/call = %v", err)
				}
				var res struct {
					Content []struct{ Text string }
					IsError bool
				}
				if err := json.Unmarshal(raw, &res); err != nil || len(res.Content) == 0 {
					t.Fatalf("tools/call = %s, %v", raw, err)
				}
				if want := "could not ask: no answer within 2s"; !res.IsError || res.Content[0].Text != want {
					t.Errorf("tools/call = %s, want an error %q", raw, want)
				}
			})
		})
	}
}
