package hostile_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/mcptest"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox/rootfs"
)

// binary is the real mcp-wasmhost, built once for the suite.
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

// timeout is the hostile plugins' time limit.
const timeout = time.Second

// slowTimeout is the time limit of the memory bomb and the stack overflow: a Go guest
// that fills its memory spends seconds in its own garbage collector before it gives up,
// and wazero takes about a second to grow a guest's stack to its ceiling.
const slowTimeout = 30 * time.Second

// generous bounds every measured time in an assertion: far above the target, so a
// noisy machine never fails the suite, but a guest that is never stopped does.
const generous = 5 * time.Second

// envSecret is in the server's environment: no guest may ever see it.
const envSecret = "MCPWH_HOSTILE_ENV_SECRET=env-secret-5f1c"

// server starts the binary with every hostile plugin, the benign textkit, and plugins
// that must be refused at load, with envSecret in its environment and an inherited
// marker file open as fd 7.
func server(t *testing.T) (*mcptest.Client, *testenv.SyncBuffer, escapeDirs, *exec.Cmd) {
	t.Helper()
	dirs := newEscapeDirs(t)
	garbage := filepath.Join(t.TempDir(), "garbage.wasm")
	if err := os.WriteFile(garbage, []byte("\x00asm\x01\x00\x00\x00this is not a module"), 0o644); err != nil {
		t.Fatal(err)
	}
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "[server]\ncache_dir = %q\n\n[tasks]\nstore = \"memory\"\n\n", testenv.CacheDir())
	plugin := func(name, path string, extra ...string) {
		limit := timeout
		// These end by themselves (a memory limit, a stack overflow, the host-call
		// limit), so they get the long limit: under load 1 s is too short for them to
		// get there.
		if name == "memhog" || name == "stack" || name == "hostflood" {
			limit = slowTimeout
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&cfg, "[[plugins]]\nname = %q\npath = %q\nsha256 = %q\ntimeout = %q\n%s\n\n",
			name, path, digest(b), limit, strings.Join(extra, "\n"))
	}
	for _, p := range []string{"loop", "calltree", "stack", "flood", "hostflood", "badptr", "askspin", "sleeper"} {
		plugin(p, testenv.Path("testdata/wasm/"+p+".wasm"))
	}
	plugin("napper", testenv.Path("testdata/wasm/sleeper.wasm"), "trusted = true")
	plugin("memhog", testenv.Path("testdata/wasm/memhog.wasm"), "memory_mib = 32")
	plugin("escape", testenv.Path("testdata/wasm/escape.wasm"),
		"[[plugins.dirs]]", fmt.Sprintf("host = %q", dirs.ro), `guest = "/ro"`,
		"[[plugins.dirs]]", fmt.Sprintf("host = %q", dirs.rw), `guest = "/rw"`, "writable = true")
	plugin("textkit", testenv.Path("plugins/textkit/textkit.wasm"))
	// Grants of kernel file systems: /proc/<server pid>/environ is the server's environment.
	plugin("procgrant", testenv.Path("testdata/wasm/escape.wasm"), "[[plugins.dirs]]", `host = "/proc"`, `guest = "/proc"`)
	plugin("proclink", testenv.Path("testdata/wasm/escape.wasm"), "[[plugins.dirs]]", fmt.Sprintf("host = %q", dirs.procLink), `guest = "/self"`)
	plugin("missing", testenv.Path("testdata/wasm/missing_import.wasm"))
	for _, p := range []string{"refbomb", "deepschema", "badheader", "widecheck"} {
		plugin(p, testenv.Path("testdata/wasm/"+p+".wasm"))
	}
	plugin("truncated", testenv.Path("testdata/wasm/truncated.wasm"))
	plugin("garbage", garbage)
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "--config", path)
	cmd.Env = append(os.Environ(), envSecret)
	cmd.ExtraFiles = []*os.File{nil, nil, nil, nil, dirs.inherited} // fd 7
	stderr := &testenv.SyncBuffer{}
	cmd.Stderr = stderr
	never := make(chan struct{})
	t.Cleanup(func() { close(never) })
	c := mcptest.Dial(t, &mcp.CommandTransport{Command: cmd}, func(r *jsonrpc.Request) (any, error) {
		<-never // the person never answers: the task stays input_required
		return nil, errors.New("gone")
	})
	return c, stderr, dirs, cmd
}

// escapeDirs are a read-only and a writable grant whose symlinks lead outside, a link
// to /proc/self, and the file the server inherits as fd 7.
type escapeDirs struct {
	ro, rw, outside, procLink string
	inherited                 *os.File
}

const secret = "top secret"

func newEscapeDirs(t *testing.T) escapeDirs {
	d := escapeDirs{ro: t.TempDir(), rw: t.TempDir(), outside: t.TempDir()}
	d.procLink = filepath.Join(d.outside, "self")
	if err := os.Symlink("/proc/self", d.procLink); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(d.outside, "inherited-marker"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	d.inherited = f
	if err := os.WriteFile(filepath.Join(d.outside, "secret.txt"), []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{d.ro, d.rw} {
		if err := os.Symlink(filepath.Join(d.outside, "secret.txt"), filepath.Join(dir, "link-out")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(d.outside, filepath.Join(dir, "dirlink-out")); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// shape is one attack and the outcome it must come to.
type shape struct {
	name   string
	tool   string
	args   any
	task   bool          // run as a task
	cancel time.Duration // as a task: cancel it this long after it was created (or at input_required)
	ask    bool          // cancel once the task asks for input
	// want is what the outcome must contain: the task's final status and message, the
	// result's text, or the JSON-RPC error.
	want string
	// bound is how long the outcome may take, asserted with generous added.
	bound time.Duration
}

// outcome is what one shape came to, and how it went for the benign plugin meanwhile.
type outcome struct {
	text    string
	took    time.Duration // call: to the response; task: creation (or cancel) to terminal
	benign  int           // benign tasks completed meanwhile
	getP99  time.Duration
	getMax  time.Duration
	getSeen int
}

func TestHostileGuests(t *testing.T) {
	c, stderr, dirs, cmd := server(t)
	// Refused at load, with the reason, while the rest is served.
	for _, want := range []string{
		`plugin=missing err="plugin \"missing\": imports mcpwh.launch_missiles, which the host does not provide"`,
		`plugin=truncated err="plugin \"truncated\" is not a valid WebAssembly module`,
		`plugin=garbage err="plugin \"garbage\" is not a valid WebAssembly module`,
		// A plugin's schemas are bounded at load: the refusal names the tool and the bound.
		`plugin=refbomb err="plugin \"refbomb\": manifest: tools[1] (\"bomb\"): inputSchema: /$defs/d0: 4.4e+12 subschema evaluations can apply to one value, over the limit of 4096 (MaxAmplification)"`,
		`plugin=deepschema err="plugin \"deepschema\": manifest: tools[1] (\"deep\"): inputSchema: JSON nests deeper than the limit of 128 levels (MaxSchemaDepth)"`,
		// x-mcp-header on an object property is refused at load, naming the property,
		// before go-sdk's AddTool could panic on it.
		`plugin=badheader err="plugin \"badheader\": manifest: tools[1] (\"header\"): inputSchema: property \"a\": x-mcp-header needs \"type\" to be \"string\", \"integer\" or \"boolean\", not \"object\""`,
		`plugin=procgrant err="plugin \"procgrant\": directory grant /proc: /proc is under /proc: ` + rootfs.SpecialRule,
		`plugin=proclink err="plugin \"proclink\": directory grant ` + dirs.procLink + `: ` + dirs.procLink + ` resolves to /proc/`,
	} {
		// A plugin refused when it loads is named by the config line that declares it.
		re := regexp.QuoteMeta(want)
		if before, after, ok := strings.Cut(want, `err="plugin `); ok {
			re = regexp.QuoteMeta(before+`err="`) + `\S*\.toml:\d+: ` + regexp.QuoteMeta(`plugin `+after)
		}
		line := regexp.MustCompile(re)
		if !eventually(func() bool { return line.MatchString(stderr.String()) }) {
			t.Errorf("server log lacks %s:\n%s", line, stderr)
		}
	}

	huge := strings.Repeat("x", 2<<20)
	shapes := []shape{
		{name: "infinite loop", tool: "loop_spin", task: true, want: "failed: tool returned an error: plugin \"loop\" was stopped: it exceeded its time limit of 1s", bound: timeout},
		{name: "infinite loop cancelled", tool: "loop_spin", task: true, cancel: 100 * time.Millisecond, want: "cancelled", bound: 0},
		{name: "loop-free call tree", tool: "calltree_tree", task: true, want: "failed: tool returned an error: plugin \"calltree\" was stopped: it exceeded its time limit of 1s (its worker process was killed", bound: timeout},
		{name: "loop-free call tree cancelled", tool: "calltree_tree", task: true, cancel: 100 * time.Millisecond, want: "cancelled", bound: 0},
		{name: "loop-free call tree, sync", tool: "calltree_tree", want: "error: plugin \"calltree\" was stopped: it exceeded its time limit", bound: timeout},
		{name: "keeps running after its input request was cancelled", tool: "askspin_ask", task: true, ask: true, want: "cancelled", bound: 0},
		{name: "memory bomb", tool: "memhog_hog", args: map[string]int{"mib": 200}, want: "error: plugin \"memhog\" ran out of memory (limit 32 MiB)", bound: slowTimeout},
		{name: "stack overflow", tool: "stack_deep", want: "stack overflow", bound: slowTimeout},
		{name: "sleeper past its deadline", tool: "sleeper_nap", want: "error: plugin \"sleeper\" was stopped: it exceeded its time limit of 1s", bound: timeout},
		{name: "sleeper past its deadline, as a task", tool: "sleeper_nap", task: true, want: "failed: tool returned an error: plugin \"sleeper\" was stopped: it exceeded its time limit of 1s", bound: timeout},
		{name: "sleeper past its deadline, trusted (in process)", tool: "napper_nap", want: "error: plugin \"napper\" was stopped: it exceeded its time limit of 1s", bound: timeout},
		{name: "proc grant", tool: "procgrant_fs", args: map[string]string{"op": "read", "path": "/proc/self/environ"}, want: "rpc -32602", bound: timeout},
		{name: "proc grant through a link", tool: "proclink_fs", args: map[string]string{"op": "read", "path": "/self/environ"}, want: "rpc -32602", bound: timeout},
		{name: "proc without a grant", tool: "escape_fs", args: map[string]string{"op": "read", "path": "/proc/self/environ"}, want: "error: open /proc/self/environ", bound: timeout},
		{name: "output flood", tool: "flood_big", want: "output of 2 MiB exceeds the limit of 1 MiB", bound: timeout},
		{name: "host-call flood", tool: "hostflood_flood", want: "ok: -7", bound: slowTimeout},
		{name: "bad pointers to every host function", tool: "badptr_probe", want: "ok: -1 -1 -1 -3 0 -3 -2 -3 -1 -3 -8 -2 -1 ", bound: timeout},
		{name: "$ref bomb", tool: "refbomb_bomb", args: map[string]int{"x": 1}, want: `rpc -32602: unknown tool "refbomb_bomb"`, bound: 0},
		{name: "deep schema", tool: "deepschema_deep", want: `rpc -32602: unknown tool "deepschema_deep"`, bound: 0},
		{name: "x-mcp-header on an object", tool: "badheader_ok", want: `rpc -32602: unknown tool "badheader_ok"`, bound: 0},
		{name: "costly argument check", tool: "widecheck_check", args: map[string]any{"a": make([]int, 20000)}, want: "(MaxCheckWork)", bound: 0},
		{name: "argument check error is cut", tool: "widecheck_check", args: map[string]any{"a": make([]int, 100)}, want: "more bytes)", bound: 0},
		{name: "huge arguments", tool: "textkit_sha256", args: map[string]string{"text": huge}, want: "bytes exceeds the plugin's limit of 1048576", bound: timeout},
		{name: "symlink escape, read-only grant", tool: "escape_fs", args: map[string]string{"op": "read", "path": "/ro/link-out"}, want: "error: open /ro/link-out: Operation not permitted", bound: timeout},
		{name: "symlink escape through a directory link", tool: "escape_fs", args: map[string]string{"op": "read", "path": "/ro/dirlink-out/secret.txt"}, want: "Operation not permitted", bound: timeout},
		{name: "symlink escape, writable grant: write through a link", tool: "escape_fs", args: map[string]string{"op": "write", "path": "/rw/link-out", "data": "pwned"}, want: "Operation not permitted", bound: timeout},
		{name: "symlink escape, writable grant: create a link out", tool: "escape_fs", args: map[string]string{"op": "symlink", "path": "/rw/mine", "target": dirs.outside}, want: "Operation not permitted", bound: timeout},
	}
	var report []string
	for _, s := range shapes {
		t.Run(s.name, func(t *testing.T) {
			o := run(t, c, s)
			if !strings.Contains(o.text, s.want) {
				t.Errorf("%s: outcome %q, want it to contain %q", s.tool, o.text, s.want)
			}
			if strings.Contains(o.text, secret) || strings.Contains(o.text, envSecret) {
				t.Errorf("%s: the secret leaked: %q", s.tool, o.text)
			}
			if o.took > s.bound+generous {
				t.Errorf("%s: took %v, want it bounded by %v (+%v for a noisy machine)", s.tool, o.took, s.bound, generous)
			}
			if o.benign == 0 {
				t.Errorf("no benign task completed while %s ran", s.tool)
			}
			if o.getMax > generous {
				t.Errorf("tasks/get took up to %v while %s ran", o.getMax, s.tool)
			}
			report = append(report, fmt.Sprintf("%-55s stopped after %8.1f ms (limit %v); benign tasks %3d; tasks/get p99 %5.1f ms over %d",
				s.name, ms(o.took), s.bound, o.benign, ms(o.getP99), o.getSeen))
		})
	}
	// The server was started with fd 7 open; its workers must not hold it, nor any
	// descriptor but their channel, stderr, their grants and the Go runtime's own.
	t.Run("inherited descriptor", func(t *testing.T) {
		if fds := testenv.Descriptors(cmd.Process.Pid); fds[7] != dirs.inherited.Name() {
			t.Fatalf("server fd 7 = %q, want %s", fds[7], dirs.inherited.Name())
		}
		// The escape plugin's grants are held open; nothing else may be.
		held, workers := testenv.StrayDescriptors(cmd.Process.Pid, func(target string) bool { return target == dirs.ro || target == dirs.rw })
		if workers == 0 {
			t.Fatal("the server has no worker process")
		}
		for _, h := range held {
			t.Errorf("%s; want nothing the server inherited", h)
		}
		report = append(report, fmt.Sprintf("%-55s %d workers checked", "inherited descriptor", workers))
	})
	if b, err := os.ReadFile(filepath.Join(dirs.outside, "secret.txt")); err != nil || string(b) != secret {
		t.Errorf("the secret outside the grants changed: %q, %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(dirs.rw, "mine")); err == nil {
		t.Errorf("the guest created a symlink in its writable grant")
	}
	t.Log("time to stop each hostile shape, and the benign plugin meanwhile:\n" + strings.Join(report, "\n"))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }

// run drives one shape while a benign plugin's tasks run and are polled beside it.
func run(t *testing.T, c *mcptest.Client, s shape) outcome {
	ctx, stopBenign := context.WithCancel(context.Background())
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		benign  int
		getLats []time.Duration
	)
	wg.Go(func() {
		for ctx.Err() == nil {
			task := c.CreateTask("textkit_ping", map[string]any{}, map[string]any{}, nil)
			for ctx.Err() == nil {
				start := time.Now()
				raw, err := c.Call(context.Background(), "tasks/get", map[string]any{"taskId": task.TaskID})
				lat := time.Since(start)
				var got mcptest.Task
				if err != nil || json.Unmarshal(raw, &got) != nil {
					t.Errorf("benign tasks/get = %s, %v", raw, err)
					return
				}
				mu.Lock()
				getLats = append(getLats, lat)
				if got.Status == "completed" {
					benign++
				}
				mu.Unlock()
				if got.Status == "completed" {
					break
				}
				time.Sleep(2 * time.Millisecond)
			}
		}
	})
	text, took := attack(t, c, s)
	// Keep the benign load going until at least one task has completed.
	for deadline := time.Now().Add(generous); ; time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		n := benign
		mu.Unlock()
		if n > 0 || time.Now().After(deadline) {
			break
		}
	}
	stopBenign()
	wg.Wait()
	slices.Sort(getLats)
	o := outcome{text: text, took: took, benign: benign, getSeen: len(getLats)}
	if n := len(getLats); n > 0 {
		o.getP99 = getLats[(n-1)*99/100]
		o.getMax = getLats[n-1]
	}
	return o
}

// attack runs the shape and describes its outcome as "<status>: <message>" for a task,
// "ok: <text>" or "error: <text>" for a call, or "rpc <code>: <message>".
func attack(t *testing.T, c *mcptest.Client, s shape) (string, time.Duration) {
	args := s.args
	if args == nil {
		args = map[string]any{}
	}
	start := time.Now()
	if !s.task {
		raw, err := c.Call(context.Background(), "tools/call", map[string]any{"name": s.tool, "arguments": args})
		took := time.Since(start)
		var rerr *jsonrpc.Error
		if errors.As(err, &rerr) {
			return fmt.Sprintf("rpc %d: %s", rerr.Code, rerr.Message), took
		}
		if err != nil {
			t.Fatalf("tools/call(%s) = %v", s.tool, err)
		}
		var res struct {
			Content []struct{ Text string }
			IsError bool
		}
		if err := json.Unmarshal(raw, &res); err != nil || len(res.Content) == 0 {
			t.Fatalf("tools/call(%s) = %s, %v", s.tool, raw, err)
		}
		prefix := "ok: "
		if res.IsError {
			prefix = "error: "
		}
		return prefix + res.Content[0].Text, took
	}
	task := c.CreateTask(s.tool, args, map[string]any{}, nil)
	switch {
	case s.ask:
		c.WaitStatus(task.TaskID, "input_required")
		start = time.Now()
		c.MustCall("tasks/cancel", map[string]any{"taskId": task.TaskID}, nil)
	case s.cancel > 0:
		time.Sleep(s.cancel)
		start = time.Now()
		c.MustCall("tasks/cancel", map[string]any{"taskId": task.TaskID}, nil)
	}
	for {
		got := c.Get(task.TaskID)
		switch got.Status {
		case "completed", "failed", "cancelled":
			return got.Status + ": " + got.StatusMessage, time.Since(start)
		}
		if time.Since(start) > timeout+2*generous {
			return "still " + got.Status, time.Since(start)
		}
		time.Sleep(time.Millisecond)
	}
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// eventually polls cond for a few seconds.
func eventually(cond func() bool) bool {
	for deadline := time.Now().Add(generous); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// TestCheckRefusesPathologicalSchemas: `mcp-wasmhost check` fails for a plugin whose
// schema breaks a bound, naming the plugin, the tool and the bound, and for one whose
// x-mcp-header annotation is refused, and still lists the tools of the others.
func TestCheckRefusesPathologicalSchemas(t *testing.T) {
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "[server]\ncache_dir = %q\n\n", testenv.CacheDir())
	for _, p := range []string{"refbomb", "deepschema", "badheader", "plugins/textkit/textkit"} {
		path := testenv.Path("testdata/wasm/" + p + ".wasm")
		if strings.Contains(p, "/") {
			path = testenv.Path(p + ".wasm")
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&cfg, "[[plugins]]\nname = %q\npath = %q\nsha256 = %q\n\n", filepath.Base(p), path, digest(b))
	}
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binary, "--config", path, "check").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("check = %v, want a non-zero exit:\n%s", err, out)
	}
	for _, want := range []string{
		"3 plugin(s) refused",
		`plugin "refbomb": manifest: tools[1] ("bomb"): inputSchema: /$defs/d0: 4.4e+12 subschema evaluations can apply to one value, over the limit of 4096 (MaxAmplification)`,
		`plugin "deepschema": manifest: tools[1] ("deep"): inputSchema: JSON nests deeper than the limit of 128 levels (MaxSchemaDepth)`,
		// x-mcp-header on an object property, which go-sdk's AddTool would panic on.
		`plugin "badheader": manifest: tools[1] ("header"): inputSchema: property "a": x-mcp-header needs "type" to be "string", "integer" or "boolean", not "object"`,
		"textkit_sha256",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
}
