package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/mcptest"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox/rootfs"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks/boltstore"
)

// binary is the real mcp-wasmhost, built once for these tests.
var binary string

func TestMain(m *testing.M) {
	path, remove, err := testenv.BuildServer()
	if err != nil {
		panic(err)
	}
	binary = path
	code := m.Run()
	remove()
	os.Exit(code)
}

// connectStdio starts the binary with args and connects a client over its stdio.
func connectStdio(t *testing.T, args ...string) (*mcp.ClientSession, *testenv.SyncBuffer) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	stderr := &testenv.SyncBuffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, stderr
}

func callText(t *testing.T, cs *mcp.ClientSession, name string, args any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%s) = %v", name, err)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// bundledConfig is config.toml as README's first command runs it, copied with its
// relative paths made absolute and its state (task store, compilation cache, the
// writable notes folder) moved into the test's own folders, so that a server the developer runs meanwhile does not
// hold the task store's lock.
func bundledConfig(t *testing.T, notes string) string {
	t.Helper()
	b, err := os.ReadFile(testenv.Path("config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	doc := regexp.MustCompile(`(?m)^(path|host) = "([^"/][^"]*)"`).ReplaceAllStringFunc(string(b), func(m string) string {
		key, rel, _ := strings.Cut(m, ` = "`)
		return fmt.Sprintf("%s = %q", key, testenv.Path(strings.TrimSuffix(rel, `"`)))
	})
	doc = strings.Replace(doc, fmt.Sprintf("host = %q", testenv.Path("plugins/toolbox/notes")), fmt.Sprintf("host = %q", notes), 1)
	doc = strings.Replace(doc, `data_dir = ""`, fmt.Sprintf("data_dir = %q", t.TempDir()), 1)
	doc = strings.Replace(doc, `cache_dir = ""`, fmt.Sprintf("cache_dir = %q", testenv.CacheDir()), 1)
	return writeConfig(t, doc)
}

// TestBundledConfigOverStdio runs README's first command: the bundled config.toml.
func TestBundledConfigOverStdio(t *testing.T) {
	notes := t.TempDir()
	cmd := exec.Command(binary, "--config", bundledConfig(t, notes))
	stderr := &testenv.SyncBuffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if strings.HasPrefix(req.Params.Message, "Approve this change?") { // jobs_deploy
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
		},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test", Content: &mcp.TextContent{Text: "short"}}, nil
		},
	})
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr)
	}
	defer cs.Close()
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Every bundled tool, called once with arguments a person would give it. (timer,
	// run_job and longrun's tools must run as tasks: the go-sdk client cannot, so they
	// are listed but not called here; tasklog_test.go runs longrun's.)
	calls := map[string]struct {
		args any
		want string
	}{
		"textkit_stats":         {map[string]any{"text": "a b\nc"}, "2 lines, 3 words"},
		"textkit_sha256":        {map[string]any{"text": "abc"}, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		"textkit_base64_encode": {map[string]any{"text": "hi"}, "aGk="},
		"textkit_base64_decode": {map[string]any{"data": "aGk="}, "hi"},
		"textkit_ping":          {map[string]any{}, "pong"},
		"toolbox_json_format":   {map[string]any{"json": `{"a":1}`}, "{\n  \"a\": 1\n}"},
		"toolbox_json_query":    {map[string]any{"json": `{"a":[5]}`, "pointer": "/a/0"}, "5"},
		"toolbox_slow_count":    {map[string]any{"to": 2, "delay_ms": 1}, `"counted":2`},
		"toolbox_list_files":    {map[string]any{}, "ABI.md"},
		"toolbox_read_file":     {map[string]any{"path": "ABI.md"}, "# Guest ABI v1"},
		"toolbox_write_note":    {map[string]any{"name": "n.txt", "text": "hello"}, "Created note n.txt"},
		"toolbox_summarize":     {map[string]any{"text": "a long story"}, "short"},
		// The bundled network policies: public hosts only; nothing without approval.
		"web_fetch":   {map[string]any{"url": "http://169.254.169.254/latest/meta-data/"}, "169.254.169.254 refused"},
		"jobs_deploy": {map[string]any{"service": "api", "version": "1"}, "Not approved (decline): nothing was sent."},
	}
	for _, tool := range list.Tools {
		c, ok := calls[tool.Name]
		if !ok {
			if tool.Name != "toolbox_timer" && tool.Name != "jobs_run_job" && !strings.HasPrefix(tool.Name, "longrun_") {
				t.Errorf("tools/list has %q, which this test does not call", tool.Name)
			}
			continue
		}
		delete(calls, tool.Name)
		if got := callText(t, cs, tool.Name, c.args); !strings.Contains(got, c.want) {
			t.Errorf("%s(%v) = %.80q, want it to contain %q", tool.Name, c.args, got, c.want)
		}
	}
	for name := range calls {
		t.Errorf("tools/list lacks %q (stderr:\n%s)", name, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(notes, "n.txt")); err != nil || string(b) != "hello" {
		t.Errorf("note = %q, %v", b, err)
	}
	if strings.Contains(stderr.String(), "level=ERROR") {
		t.Errorf("stderr has errors:\n%s", stderr)
	}
}

func writeConfig(t testing.TB, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// serverTOML is the [server] and [tasks] tables of a test config: shared compilation
// cache, a task store of the test's own.
func serverTOML(t testing.TB) string {
	return fmt.Sprintf("[server]\ncache_dir = %q\n\n[tasks]\ndata_dir = %q\n\n", testenv.CacheDir(), t.TempDir())
}

func pluginTOML(t testing.TB, name, rel, sha string) string {
	if sha == "" {
		sha = testenv.Spec(t, name, rel).SHA256
	}
	return fmt.Sprintf("[[plugins]]\nname = %q\npath = %q\nsha256 = %q\n\n", name, testenv.Path(rel), sha)
}

// TestRefusedPluginsLeaveTheRest: a plugin with a wrong digest or an import the host
// lacks is refused with the reason in the log; the others are served.
func TestRefusedPluginsLeaveTheRest(t *testing.T) {
	wrong := strings.Repeat("ab", 32)
	cfg := writeConfig(t, serverTOML(t)+
		pluginTOML(t, "textkit", "plugins/textkit/textkit.wasm", "")+
		pluginTOML(t, "tampered", "plugins/textkit/textkit.wasm", wrong)+
		pluginTOML(t, "missiles", "testdata/wasm/missing_import.wasm", ""))
	cs, stderr := connectStdio(t, "--config", cfg)
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range list.Tools {
		if !strings.HasPrefix(tool.Name, "textkit_") {
			t.Errorf("tools/list offers %q from a refused plugin", tool.Name)
		}
	}
	log := stderr.String()
	real := testenv.Spec(t, "textkit", "plugins/textkit/textkit.wasm").SHA256
	for _, want := range []string{
		"has sha256 " + real + ", but config pins " + wrong,
		"imports mcpwh.launch_missiles, which the host does not provide",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("stderr lacks %q:\n%s", want, log)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"unknown key", "[server]\nname = \"x\"\nlog_levle = \"debug\"\n", `:3: unknown key "server.log_levle"`},
		{"syntax", "[server\n", "config.toml"},
		{"bad plugin name", "[[plugins]]\nname = \"Bad_Name\"\npath = \"x.wasm\"\nsha256 = \"" + strings.Repeat("0", 64) + "\"\n", "Bad_Name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), []string{"--config", writeConfig(t, tt.body)}, io.NopCloser(strings.NewReader("")), nopWriteCloser{&stdout}, &stderr)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("run(%s) = %v, want error containing %q", tt.name, err, tt.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout = %q, want nothing on the protocol stream", stdout.String())
			}
		})
	}
	err := run(context.Background(), []string{"--config", "/nonexistent/config.toml"}, nil, nopWriteCloser{io.Discard}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/config.toml") {
		t.Errorf("run(missing config) = %v, want the path named", err)
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func TestVersion(t *testing.T) {
	out, err := exec.Command(binary, "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "mcp-wasmhost ") || !strings.Contains(string(out), "guest ABI 1") {
		t.Errorf("version = %q, %v", out, err)
	}
}

// TestHTTP runs the binary with --http and calls a tool over Streamable HTTP.
func TestHTTP(t *testing.T) {
	cfg := writeConfig(t, serverTOML(t)+
		pluginTOML(t, "textkit", "plugins/textkit/textkit.wasm", ""))
	cmd := exec.Command(binary, "--config", cfg, "--http", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	urlRE := regexp.MustCompile(`url=(http://\S+/mcp)`)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := urlRE.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	var url string
	select {
	case url = <-found:
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not report its URL")
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := callText(t, cs, "textkit_ping", nil); got != "pong" {
		t.Errorf("ping = %q", got)
	}
}

// TestCrashRecovery kills the server with SIGKILL while tasks run: after a restart on
// the same task store, every finished result is still there byte for byte, every task
// that was running reports failed with the restart reason, and IDs stay unique.
func TestCrashRecovery(t *testing.T) {
	cfg := writeConfig(t, serverTOML(t)+
		pluginTOML(t, "textkit", "plugins/textkit/textkit.wasm", "")+
		pluginTOML(t, "toolbox", "plugins/toolbox/toolbox.wasm", ""))
	start := func() (*mcptest.Client, *exec.Cmd) {
		cmd := exec.Command(binary, "--config", cfg)
		return mcptest.Dial(t, &mcp.CommandTransport{Command: cmd}, nil), cmd
	}
	c, cmd := start()
	finished := map[string]json.RawMessage{}
	for i := range 100 {
		var created mcptest.Task
		if i%2 == 0 {
			created = c.CreateTask("textkit_ping", map[string]any{}, map[string]any{}, nil)
		} else {
			created = c.CreateTask("toolbox_slow_count", map[string]any{"to": i%7 + 1, "delay_ms": 0}, map[string]any{}, nil)
		}
		var res json.RawMessage
		c.MustCall("tasks/result", map[string]any{"taskId": created.TaskID}, &res)
		finished[created.TaskID] = res
	}
	var running []string
	for range 20 {
		running = append(running, c.CreateTask("toolbox_timer", map[string]any{"seconds": 25}, map[string]any{}, nil).TaskID)
	}
	c.WaitStatus(running[len(running)-1], "working")
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no shutdown code runs
		t.Fatal(err)
	}
	cmd.Wait()

	c, _ = start()
	for id, want := range finished {
		var got json.RawMessage
		c.MustCall("tasks/result", map[string]any{"taskId": id}, &got)
		if string(got) != string(want) {
			t.Fatalf("tasks/result(%s) after the crash = %s, want %s", id, got, want)
		}
	}
	for _, id := range running {
		got := c.Get(id)
		if got.Status != "failed" || !strings.Contains(got.StatusMessage, "server restarted") {
			t.Errorf("running task after the crash = %s %q, want failed with the restart reason", got.Status, got.StatusMessage)
		}
		if err := c.CallErr("tasks/result", map[string]any{"taskId": id}); !strings.Contains(err.Message, "server restarted") {
			t.Errorf("tasks/result of a task lost in the crash = %v, want the restart reason", err)
		}
	}
	// New tasks get new IDs, and all of them are listed.
	fresh := c.CreateTask("textkit_ping", map[string]any{}, map[string]any{}, nil).TaskID
	if _, dup := finished[fresh]; dup || slices.Contains(running, fresh) {
		t.Errorf("ID %s issued again after the restart", fresh)
	}
	seen, cursor := 0, ""
	for {
		var page struct {
			Tasks      []mcptest.Task `json:"tasks"`
			NextCursor string         `json:"nextCursor"`
		}
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		c.MustCall("tasks/list", params, &page)
		seen += len(page.Tasks)
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if seen != 121 {
		t.Errorf("tasks/list after the crash lists %d tasks, want 121", seen)
	}
}

// TestStoreLocked: on the bolt store, which one process holds at a time, a second
// server refuses to start, naming it. (On the default store both serve:
// TestInstancesShareTasks.)
func TestStoreLocked(t *testing.T) {
	cfg := writeConfig(t, boltTOML(t)+pluginTOML(t, "textkit", "plugins/textkit/textkit.wasm", ""))
	first, _ := connectStdio(t, "--config", cfg)
	if _, err := first.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binary, "--config", cfg).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "tasks.db is locked by another process") {
		t.Errorf("second server = %v:\n%s\nwant a refusal naming the locked store", err, out)
	}
}

// boltTOML is serverTOML on the bolt store.
func boltTOML(t *testing.T) string {
	return strings.Replace(serverTOML(t), "[tasks]\n", "[tasks]\nstore = \"bolt\"\n", 1)
}

func TestCheck(t *testing.T) {
	good := writeConfig(t, serverTOML(t)+pluginTOML(t, "textkit", "plugins/textkit/textkit.wasm", ""))
	out, err := exec.Command(binary, "--config", good, "check").Output()
	if err != nil || !strings.Contains(string(out), "textkit_sha256") || !strings.Contains(string(out), "optional") {
		t.Errorf("check(good) = %v:\n%s", err, out)
	}
	bad := writeConfig(t, serverTOML(t)+pluginTOML(t, "textkit", "plugins/textkit/textkit.wasm", "")+
		pluginTOML(t, "missiles", "testdata/wasm/missing_import.wasm", ""))
	out, err = exec.Command(binary, "--config", bad, "check").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "1 plugin(s) refused") || !strings.Contains(string(out), "launch_missiles") {
		t.Errorf("check(bad) = %v:\n%s", err, out)
	}
}

// TestCheckConformanceConfig: the fixture config that conformance/run.sh serves loads,
// with its pin, and offers the suite's names unprefixed.
func TestCheckConformanceConfig(t *testing.T) {
	out, err := exec.Command(binary, "--config", testenv.Path("conformance/config.toml"), "check").CombinedOutput()
	for _, want := range []string{"test_simple_text ", "test_prompt_with_arguments ", "test://static-binary ", "test://template/{id}/data "} {
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("check(conformance/config.toml) = %v, want %q in:\n%s", err, want, out)
		}
	}
}

// TestPrefixCollision: two plugins offering the same names unprefixed refuse to start,
// naming both; with distinct prefixes they load.
func TestPrefixCollision(t *testing.T) {
	sha := testenv.Spec(t, "textkit", "plugins/textkit/textkit.wasm").SHA256
	plugin := func(name, prefix string) string {
		return fmt.Sprintf("[[plugins]]\nname = %q\nprefix = %q\npath = %q\nsha256 = %q\n\n", name, prefix, testenv.Path("plugins/textkit/textkit.wasm"), sha)
	}
	out, err := exec.Command(binary, "--config", writeConfig(t, serverTOML(t)+plugin("a", "")+plugin("b", "")), "check").CombinedOutput()
	if err == nil || !strings.Contains(string(out), `tool "sha256" is offered by plugins "a" and "b"`) {
		t.Errorf("check(two unprefixed) = %v:\n%s\nwant the collision named", err, out)
	}
	out, err = exec.Command(binary, "--config", writeConfig(t, serverTOML(t)+plugin("a", "")+plugin("b", "kit")), "check").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "kit_sha256") || !strings.Contains(string(out), "\nsha256 ") {
		t.Errorf("check(unprefixed and kit) = %v:\n%s", err, out)
	}
}

// TestStoreDamaged: a server started on a truncated or overwritten task store exits
// with an error naming the file, not a fault (a truncated store was a SIGBUS), and
// leaves the file as it was.
func TestStoreDamaged(t *testing.T) {
	good := filepath.Join(t.TempDir(), "tasks.db")
	st, err := boltstore.Open(good)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		now := time.Now().UTC()
		st.Put(context.Background(), tasks.Task{ID: fmt.Sprintf("t%03d", i), Owner: "local", Status: tasks.Completed,
			CreatedAt: now, LastUpdatedAt: now, FinishedAt: now, TTL: time.Hour, Result: json.RawMessage(`{"content":[]}`)})
	}
	st.Close()
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		data []byte
	}{
		{"truncated mid meta page", b[:2000]},
		{"truncated after the meta pages", b[:8192]},
		{"truncated mid data", b[:len(b)/2+100]},
		{"meta pages overwritten", append(bytes.Repeat([]byte{0xA5}, 8192), b[8192:]...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dataDir := t.TempDir()
			path := filepath.Join(dataDir, "tasks.db")
			os.WriteFile(path, tt.data, 0o600)
			cfg := writeConfig(t, fmt.Sprintf("[server]\ncache_dir = %q\n\n[tasks]\nstore = \"bolt\"\ndata_dir = %q\n\n", testenv.CacheDir(), dataDir)+
				pluginTOML(t, "textkit", "plugins/textkit/textkit.wasm", ""))
			cmd := exec.Command(binary, "--config", cfg)
			cmd.Stdin = strings.NewReader("")
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), path+" is corrupt") {
				t.Errorf("server on a store %s = %v:\n%s\nwant exit status 1 and an error naming the file", tt.name, err, out)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, tt.data) {
				t.Errorf("server on a store %s changed the file", tt.name)
			}
		})
	}
}

// TestWorkerInheritsNoDescriptors: a server started with fd 7 open (as a supervisor or
// a shell may leave one) does not pass it to its workers: they hold stdin, stdout,
// stderr and the Go runtime's own descriptors only.
func TestWorkerInheritsNoDescriptors(t *testing.T) {
	marker, err := os.Create(filepath.Join(t.TempDir(), "inherited-marker"))
	if err != nil {
		t.Fatal(err)
	}
	defer marker.Close()
	cfg := writeConfig(t, serverTOML(t)+pluginTOML(t, "textkit", "plugins/textkit/textkit.wasm", ""))
	cmd := exec.Command(binary, "--config", cfg)
	cmd.ExtraFiles = []*os.File{nil, nil, nil, nil, marker} // fd 7
	cmd.Stderr = &testenv.SyncBuffer{}
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := callText(t, cs, "textkit_ping", map[string]any{}); got == "" {
		t.Fatal("textkit_ping answered nothing")
	}
	if fds := testenv.Descriptors(cmd.Process.Pid); fds[7] != marker.Name() {
		t.Fatalf("server fd 7 = %q, want the marker %s (the test must hand it over)", fds[7], marker.Name())
	}
	held, workers := testenv.StrayDescriptors(cmd.Process.Pid, func(string) bool { return false })
	if workers == 0 {
		t.Fatal("the server has no worker process")
	}
	for _, h := range held {
		t.Errorf("%s; want nothing the server inherited", h)
	}
}

// TestKernelFileSystemGrantsRefused: `check` refuses every plugin granted /proc, /sys,
// /dev or below, directly or through a link, in a worker or trusted, naming the rule;
// the plugin with an ordinary grant loads.
func TestKernelFileSystemGrantsRefused(t *testing.T) {
	link := filepath.Join(t.TempDir(), "to-proc")
	if err := os.Symlink("/proc", link); err != nil {
		t.Fatal(err)
	}
	sha := testenv.Spec(t, "escape", "testdata/wasm/escape.wasm").SHA256
	var cfg strings.Builder
	cfg.WriteString(serverTOML(t))
	grants := map[string]string{"proc": "/proc", "self": "/proc/self", "kernel": "/sys/kernel", "dev": "/dev", "link": link, "ok": t.TempDir()}
	for name, host := range grants {
		for _, trusted := range []bool{false, true} {
			fmt.Fprintf(&cfg, "[[plugins]]\nname = \"%s%v\"\npath = %q\nsha256 = %q\ntrusted = %v\n\n[[plugins.dirs]]\nhost = %q\nguest = \"/data\"\n\n",
				name, trusted, testenv.Path("testdata/wasm/escape.wasm"), sha, trusted, host)
		}
	}
	out, _ := exec.Command(binary, "--config", writeConfig(t, cfg.String()), "check").CombinedOutput()
	if !strings.Contains(string(out), "10 plugin(s) refused") {
		t.Errorf("check = \n%s\nwant 10 plugins refused", out)
	}
	for name := range grants {
		for _, trusted := range []bool{false, true} {
			plugin := fmt.Sprintf("%s%v", name, trusted)
			var line string
			for l := range strings.Lines(string(out)) {
				if strings.Contains(l, `"`+plugin+`"`) || strings.Contains(l, plugin+"_fs") {
					line = l
					break
				}
			}
			refused := strings.Contains(line, rootfs.SpecialRule)
			if refused == (name == "ok") {
				t.Errorf("check: plugin %s (grant %s): %q; want it refused naming the rule: %v", plugin, grants[name], line, name != "ok")
			}
		}
	}
}

// TestCPUProfile: --cpu-profile writes the server's CPU profile (gzipped protobuf, as
// go tool pprof reads it) when the server exits, mode 0600.
func TestCPUProfile(t *testing.T) {
	cfg := writeConfig(t, serverTOML(t)+pluginTOML(t, "textkit", "plugins/textkit/textkit.wasm", ""))
	path := filepath.Join(t.TempDir(), "server.pprof")
	cs, stderr := connectStdio(t, "--config", cfg, "--cpu-profile", path)
	for range 50 {
		callText(t, cs, "textkit_ping", map[string]any{})
	}
	if err := cs.Close(); err != nil { // closes stdin and waits for the server to exit
		t.Fatalf("close: %v\n%s", err, stderr)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("no profile: %v\n%s", err, stderr)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("profile mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("profile is not gzip: %v", err)
	}
	body, err := io.ReadAll(zr)
	if err != nil || len(body) == 0 {
		t.Errorf("profile body = %d bytes, %v", len(body), err)
	}
}

// TestCheckWarmStart: a start caches what each plugin described beside the
// compilation cache, and the next start, which reads it, offers the same tools. A
// module that changed is refused even though an entry of the old one is there.
func TestCheckWarmStart(t *testing.T) {
	cache := t.TempDir()
	toml := fmt.Sprintf("[server]\ncache_dir = %q\n\n[tasks]\ndata_dir = %q\n\n", cache, t.TempDir())
	good := writeConfig(t, toml+pluginTOML(t, "textkit", "plugins/textkit/textkit.wasm", ""))
	cold, err := exec.Command(binary, "--config", good, "check").Output()
	if err != nil || !strings.Contains(string(cold), "textkit_sha256") {
		t.Fatalf("check(cold) = %v:\n%s", err, cold)
	}
	entries, _ := filepath.Glob(filepath.Join(cache, "manifests", "*.json"))
	if len(entries) != 1 {
		t.Fatalf("manifest cache holds %v, want one entry", entries)
	}
	warm, err := exec.Command(binary, "--config", good, "check").Output()
	if err != nil || string(warm) != string(cold) {
		t.Errorf("check(warm) = %v:\n%s\nwant as cold:\n%s", err, warm, cold)
	}
	// The same path and pin, but other bytes: the pin refuses it before any cache.
	path := filepath.Join(t.TempDir(), "textkit.wasm")
	b, _ := os.ReadFile(testenv.Path("plugins/textkit/textkit.wasm"))
	os.WriteFile(path, b[:len(b)/2], 0o644)
	sum := testenv.Spec(t, "textkit", "plugins/textkit/textkit.wasm").SHA256
	bad := writeConfig(t, toml+fmt.Sprintf("[[plugins]]\nname = \"textkit\"\npath = %q\nsha256 = %q\n", path, sum))
	if out, err := exec.Command(binary, "--config", bad, "check").CombinedOutput(); err == nil || !strings.Contains(string(out), "refusing to load it") {
		t.Errorf("check(changed module) = %v:\n%s", err, out)
	}
}
