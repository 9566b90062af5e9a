package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/mcptest"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks/sqlstore"
)

// extTask is a task as tasks/get answers it on the Tasks extension's wire.
type extTask struct {
	ResultType    string                     `json:"resultType"`
	TaskID        string                     `json:"taskId"`
	Status        string                     `json:"status"`
	StatusMessage string                     `json:"statusMessage"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	Error         *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// pollExt polls tasks/get on c until cond holds, for at most limit.
func pollExt(t *testing.T, c *mcptest.Client, id string, limit time.Duration, cond func(extTask) bool) extTask {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		var got extTask
		c.MustCall("tasks/get", map[string]any{"taskId": id}, &got)
		if cond(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s is %s (%s) after %v", id, got.Status, got.StatusMessage, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestInstancesShareTasks runs three servers on the default store and one data_dir,
// as a desktop app and two IDEs would: all three serve, and a task started through
// one is fetched, answered, waited for, listed and cancelled through another. A server killed
// with SIGKILL leaves its running task failed, with the reason, seen from a survivor.
func TestInstancesShareTasks(t *testing.T) {
	notes := t.TempDir()
	cfg := bundledConfig(t, notes)
	start := func(caps map[string]any) (*mcptest.Client, *exec.Cmd) {
		cmd := exec.Command(binary, "--config", cfg)
		return mcptest.DialWith(t, &mcp.CommandTransport{Command: cmd}, nil, caps), cmd
	}
	a, cmdA := start(mcptest.TasksExtension())
	b, _ := start(mcptest.TasksExtension())
	legacy, _ := start(map[string]any{})

	call := func(c *mcptest.Client, tool string, args any) string {
		t.Helper()
		var created extTask
		c.MustCall("tools/call", map[string]any{"name": tool, "arguments": args}, &created)
		if created.ResultType != "task" || created.TaskID == "" {
			t.Fatalf("tools/call(%s) = %+v, want a task", tool, created)
		}
		return created.TaskID
	}

	// An input request of a task run by A is shown and answered through B.
	note := call(a, "toolbox_write_note", map[string]any{"name": "shared.txt", "text": "from A, confirmed in B"})
	got := pollExt(t, b, note, 30*time.Second, func(x extTask) bool { return len(x.InputRequests) == 1 })
	var key string
	for k := range got.InputRequests {
		key = k
	}
	b.MustCall("tasks/update", map[string]any{"taskId": note, "inputResponses": map[string]any{
		key: map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}}, nil)
	pollExt(t, b, note, 30*time.Second, func(x extTask) bool { return x.Status == "completed" })
	if text, err := os.ReadFile(filepath.Join(notes, "shared.txt")); err != nil || string(text) != "from A, confirmed in B" {
		t.Errorf("note written by A after B's answer = %q, %v", text, err)
	}

	// tasks/result through a third server waits for the outcome of A's task.
	count := call(a, "toolbox_slow_count", map[string]any{"to": 5, "delay_ms": 100})
	var res struct {
		StructuredContent map[string]any `json:"structuredContent"`
	}
	legacy.MustCall("tasks/result", map[string]any{"taskId": count}, &res)
	if res.StructuredContent["counted"] != float64(5) {
		t.Errorf("tasks/result through another server = %+v, want the count to 5", res)
	}

	// tasks/list through the third server lists A's tasks: the local user owns them
	// on every server.
	var page struct {
		Tasks []mcptest.Task `json:"tasks"`
	}
	legacy.MustCall("tasks/list", map[string]any{}, &page)
	listed := map[string]bool{}
	for _, x := range page.Tasks {
		listed[x.TaskID] = true
	}
	if !listed[note] || !listed[count] {
		t.Errorf("tasks/list through another server = %v, want %s and %s", page.Tasks, note, count)
	}

	// A cancel through B ends A's task.
	timer := call(a, "toolbox_timer", map[string]any{"seconds": 60})
	pollExt(t, b, timer, 30*time.Second, func(x extTask) bool { return x.Status == "working" })
	b.MustCall("tasks/cancel", map[string]any{"taskId": timer}, nil)
	pollExt(t, a, timer, 10*time.Second, func(x extTask) bool { return x.Status == "cancelled" })

	// SIGKILL of A: its running task is reported failed through B.
	lost := call(a, "toolbox_timer", map[string]any{"seconds": 60})
	pollExt(t, b, lost, 30*time.Second, func(x extTask) bool { return x.Status == "working" })
	if err := cmdA.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmdA.Wait()
	killed := time.Now()
	got = pollExt(t, b, lost, sqlstore.Lease+2*sqlstore.RenewEvery, func(x extTask) bool { return x.Status != "working" })
	t.Logf("task of the killed server reported %s %v after the kill", got.Status, time.Since(killed).Round(time.Millisecond))
	if got.Status != "failed" || got.Error == nil || !strings.Contains(got.Error.Message, "server running this task stopped") {
		t.Errorf("task of the killed server = %+v, want failed with the reason", got)
	}
	// B and the third server still serve.
	pollExt(t, legacy, call(b, "textkit_ping", map[string]any{}), 30*time.Second, func(x extTask) bool { return x.Status == "completed" })
}

// TestSQLiteStoreRefused: a server started on a task store that is not one, is
// damaged, or was written by a newer version exits with an error naming the file, and
// leaves the file as it was.
func TestSQLiteStoreRefused(t *testing.T) {
	good := filepath.Join(t.TempDir(), "tasks.sqlite")
	st, err := sqlstore.Open(context.Background(), good, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		now := time.Now().UTC()
		st.Put(context.Background(), tasks.Task{ID: fmt.Sprintf("t%03d", i), Owner: "local", Status: tasks.Completed,
			CreatedAt: now, LastUpdatedAt: now, FinishedAt: now, TTL: time.Hour, Result: json.RawMessage(`{"content":[]}`)})
	}
	st.Close()
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	newer := filepath.Join(t.TempDir(), "tasks.sqlite")
	os.WriteFile(newer, b, 0o600)
	db, err := sql.Open("sqlite", newer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE schema_version SET version = 7`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	nb, _ := os.ReadFile(newer)
	damaged := bytes.Clone(b)
	for i := 4096; i < len(damaged); i++ {
		damaged[i] = 0xA5
	}
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"not a database", bytes.Repeat([]byte("not a task store "), 500), " is corrupt or not a task store"},
		{"pages overwritten", damaged, " is corrupt or not a task store"},
		{"newer schema", nb, " was written by a newer mcp-wasmhost: schema version 7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dataDir := t.TempDir()
			path := filepath.Join(dataDir, "tasks.sqlite")
			os.WriteFile(path, tt.data, 0o600)
			cfg := writeConfig(t, fmt.Sprintf("[server]\ncache_dir = %q\n\n[tasks]\ndata_dir = %q\n\n", testenv.CacheDir(), dataDir)+
				pluginTOML(t, "textkit", "plugins/textkit/textkit.wasm", ""))
			cmd := exec.Command(binary, "--config", cfg)
			cmd.Stdin = strings.NewReader("")
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), path+tt.want) {
				t.Errorf("server on a store (%s) = %v:\n%s\nwant exit status 1 and %q", tt.name, err, out, path+tt.want)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, tt.data) {
				t.Errorf("server on a store (%s) changed the file", tt.name)
			}
		})
	}
}

// TestInstancesShareRequestState: on 2026-07-28, a requestState one server issued is
// accepted by another on the same data_dir (they share the key file), and only once
// across both (they share the used nonces).
func TestInstancesShareRequestState(t *testing.T) {
	notes := t.TempDir()
	cfg := bundledConfig(t, notes)
	urlA, _ := startHTTP(t, cfg)
	urlB, _ := startHTTP(t, cfg)
	caps := map[string]any{"elicitation": map[string]any{}}
	a, b := &mcptest.Stateless{URL: urlA, Caps: caps}, &mcptest.Stateless{URL: urlB, Caps: caps}
	type round struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	args := map[string]any{"name": "mrtr.txt", "text": "asked by A, answered to B"}
	r, err := a.Call("tools/call", map[string]any{"name": "toolbox_write_note", "arguments": args}, nil)
	if err != nil || r.Error != nil {
		t.Fatalf("round 1 on A = %v, %v", r, err)
	}
	var r1 round
	json.Unmarshal(r.Result, &r1)
	if r1.ResultType != "input_required" || len(r1.InputRequests) != 1 || r1.RequestState == "" {
		t.Fatalf("round 1 on A = %s, want InputRequiredResult", r.Result)
	}
	var key string
	for k := range r1.InputRequests {
		key = k
	}
	again := map[string]any{"name": "toolbox_write_note", "arguments": args, "requestState": r1.RequestState,
		"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}}
	r, err = b.Call("tools/call", again, nil)
	if err != nil || r.Error != nil || !strings.Contains(string(r.Result), `"resultType":"complete"`) {
		t.Fatalf("round 2 on B = %s, %v, %v; want the call completed", r.Result, r.Error, err)
	}
	if text, err := os.ReadFile(filepath.Join(notes, "mrtr.txt")); err != nil || string(text) != "asked by A, answered to B" {
		t.Errorf("note = %q, %v", text, err)
	}
	r, err = a.Call("tools/call", again, nil)
	if err != nil || r.Error == nil || !strings.Contains(r.Error.Message, "already used") {
		t.Errorf("round 2 replayed on A = %s, %v, %v; want already used", r.Result, r.Error, err)
	}
}

// TestPostgresStoreRefused: a server whose PostgreSQL store cannot be reached exits
// with an error naming the URL, its password shown as xxxxx.
func TestPostgresStoreRefused(t *testing.T) {
	const pw = "pw-8d1f3a"
	dsn := "postgres://mcp:" + pw + "@/tasks?host=" + filepath.Join(t.TempDir(), "nosocket") + "&connect_timeout=2"
	cfg := writeConfig(t, fmt.Sprintf("[server]\ncache_dir = %q\n\n[tasks]\nstore = %q\ndata_dir = %q\n\n", testenv.CacheDir(), dsn, t.TempDir())+
		pluginTOML(t, "textkit", "plugins/textkit/textkit.wasm", ""))
	cmd := exec.Command(binary, "--config", cfg)
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "task store postgres://mcp:xxxxx@/tasks?") ||
		!strings.Contains(string(out), "is unreachable") {
		t.Errorf("server on an unreachable PostgreSQL = %v:\n%s\nwant exit status 1 naming the store, unreachable", err, out)
	}
	if strings.Contains(string(out), pw) {
		t.Errorf("the server printed the password:\n%s", out)
	}
}
