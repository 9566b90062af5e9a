package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
)

// TestVersionFlag: --version and version print the same four facts; a binary built
// in a clone of HEAD names HEAD's revision, and +modified once a file changed.
func TestVersionFlag(t *testing.T) {
	flagOut, err1 := exec.Command(binary, "--version").Output()
	cmdOut, err2 := exec.Command(binary, "version").Output()
	if err1 != nil || err2 != nil || string(flagOut) != string(cmdOut) {
		t.Fatalf("--version = %q, %v; version = %q, %v; want the same", flagOut, err1, cmdOut, err2)
	}
	lines := strings.Split(strings.TrimSpace(string(flagOut)), "\n")
	wantPrefixes := []string{"mcp-wasmhost ", "revision  ", "go        " + runtime.Version(), "guest ABI 1"}
	if len(lines) != len(wantPrefixes) {
		t.Fatalf("--version = %q, want %d lines", flagOut, len(wantPrefixes))
	}
	for i, p := range wantPrefixes {
		if !strings.HasPrefix(lines[i], p) {
			t.Errorf("--version line %d = %q, want it to start %q", i+1, lines[i], p)
		}
	}
	if testing.Short() {
		t.Skip("builds a clone: not under -short")
	}
	clone := t.TempDir()
	if out, err := exec.Command("git", "clone", "-q", testenv.Root(), clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	head, err := exec.Command("git", "-C", clone, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	build := func() string {
		bin := filepath.Join(t.TempDir(), "mcp-wasmhost")
		cmd := exec.Command("go", "build", "-buildvcs=true", "-o", bin, "./cmd/mcp-wasmhost")
		cmd.Dir = clone
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build in a clone: %v\n%s", err, out)
		}
		out, err := exec.Command(bin, "--version").Output()
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	rev := strings.TrimSpace(string(head))
	if out := build(); !strings.Contains(out, "revision  "+rev+" (") {
		t.Errorf("--version of a clean clone = %q, want revision %s", out, rev)
	}
	if err := os.WriteFile(filepath.Join(clone, "cmd/mcp-wasmhost/zz_test_change.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := build(); !strings.Contains(out, "revision  "+rev+"+modified") {
		t.Errorf("--version of a changed clone = %q, want revision %s+modified", out, rev)
	}
}

// TestCheckTable: check prints a table per plugin with where it is declared, its
// path, pin, mode, limits and grants (env by name only), and what it offers; a plugin
// with no tools gets the init() warning, which fails only --strict.
func TestCheckTable(t *testing.T) {
	docs, notes := t.TempDir(), t.TempDir()
	textkit := testenv.Spec(t, "textkit", "plugins/textkit/textkit.wasm")
	notools := testenv.Spec(t, "notools", "testdata/wasm/notools.wasm")
	body := serverTOML(t) +
		pluginTOML(t, "textkit", "plugins/textkit/textkit.wasm", "") +
		fmt.Sprintf(`[[plugins]]
name = "kit"
path = %q
sha256 = %q
trusted = true
memory_mib = 16
timeout = "5s"
env = { GREETING = "a secret value", A = "b" }
inherit_env = ["TZ"]

[[plugins.dirs]]
host = %q
guest = "/docs"

[[plugins.dirs]]
host = %q
guest = "/notes"
writable = true

[[plugins.net]]
origins = ["https://example.com"]
methods = ["GET"]

`, textkit.Path, textkit.SHA256, docs, notes) +
		pluginTOML(t, "notools", "testdata/wasm/notools.wasm", "")
	cfg := writeConfig(t, body)
	out, err := exec.Command(binary, "--config", cfg, "check").Output()
	if err != nil {
		t.Fatalf("check = %v\n%s", err, out)
	}
	for _, want := range []string{
		"plugin textkit  " + cfg + ":9\n",
		"  path     " + textkit.Path + "\n",
		"  sha256   " + textkit.SHA256 + "\n",
		"  mode     worker (2 processes)\n",
		"  memory   64 MiB\n",
		"  timeout  30s\n",
		"  offers   5 tools, 0 resources, 0 templates, 0 prompts\n",
		"plugin kit  " + cfg + ":14\n",
		"  mode     trusted (in the server process)\n",
		"  memory   16 MiB\n",
		"  timeout  5s\n",
		"  dirs     /docs <- " + docs + " (ro), /notes <- " + notes + " (rw)\n",
		"  env      A, GREETING, TZ (from the server)\n",
		"  net      https://example.com (GET)\n",
		"plugin notools  " + cfg + ":37\n",
		"  sha256   " + notools.SHA256 + "\n",
		"  offers   0 tools, 0 resources, 0 templates, 0 prompts\n",
		"  warning  no tools: a Go plugin registers its tools in init(), not main()",
		"\nkit_sha256 ",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("check lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "a secret value") {
		t.Errorf("check shows an env value:\n%s", out)
	}
	if n := strings.Count(string(out), "  warning  "); n != 1 {
		t.Errorf("check has %d warnings, want 1 (notools):\n%s", n, out)
	}
	out, err = exec.Command(binary, "--config", cfg, "check", "--strict").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "check --strict: 1 warning(s)") {
		t.Errorf("check --strict = %v, want a failure naming the warning:\n%s", err, out)
	}
}

// TestLoadErrorLine: a plugin refused when it loads (a wrong pin, a missing file) is
// named with the file and line that declare it, in check's table and in the log.
func TestLoadErrorLine(t *testing.T) {
	wrong := strings.Repeat("ab", 32)
	body := serverTOML(t) + pluginTOML(t, "textkit", "plugins/textkit/textkit.wasm", "") +
		pluginTOML(t, "tampered", "plugins/textkit/textkit.wasm", wrong) +
		fmt.Sprintf("[[plugins]]\nname = \"gone\"\nsha256 = %q\npath = %q\n", wrong, filepath.Join(t.TempDir(), "gone.wasm"))
	cfg := writeConfig(t, body)
	out, err := exec.Command(binary, "--config", cfg, "check").CombinedOutput()
	if err == nil {
		t.Fatalf("check = nil, want the refusals:\n%s", out)
	}
	for _, want := range []string{
		cfg + `:14: plugin "tampered": `, // its path key
		cfg + `:20: `,                    // gone's path, after its sha256
		"gone.wasm",
		"  refused  " + cfg + ":14: ",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("check lacks %q:\n%s", want, out)
		}
	}
}

// TestMemoryBelowModuleMinimum: a memory_mib below the module's initial memory is
// refused at the line of memory_mib, naming the memory_mib that holds it, in a worker
// and in process; that value
// loads, and one less does not. (A Go guest also grows its memory as it starts, so it
// needs more than the floor named: toolbox's floor is 3 MiB.)
func TestMemoryBelowModuleMinimum(t *testing.T) {
	for _, tc := range []struct {
		rel     string
		trusted bool
		need    int
		loads   bool // at need
	}{
		{"testdata/wasm/notools.wasm", false, 3, true},
		{"testdata/wasm/notools.wasm", true, 3, true},
		{"plugins/toolbox/toolbox.wasm", false, 3, false},
	} {
		t.Run(fmt.Sprintf("%s trusted=%v", filepath.Base(tc.rel), tc.trusted), func(t *testing.T) {
			spec := testenv.Spec(t, "p", tc.rel)
			check := func(mib int) (string, error) {
				body := serverTOML(t) + fmt.Sprintf("[[plugins]]\nname = \"p\"\npath = %q\nsha256 = %q\nmemory_mib = %d\ntrusted = %v\n",
					spec.Path, spec.SHA256, mib, tc.trusted)
				out, err := exec.Command(binary, "--config", writeConfig(t, body), "check").CombinedOutput()
				return string(out), err
			}
			want := fmt.Sprintf("config.toml:11: plugin \"p\" starts with %%d pages (%%d KiB) of linear memory, over its memory limit of %d MiB: raise memory_mib to at least %d", tc.need-1, tc.need)
			out, err := check(tc.need - 1)
			var pages, kib int
			if err == nil || !strings.Contains(out, "  refused  ") {
				t.Fatalf("check(memory_mib = %d) = %v, want refused:\n%s", tc.need-1, err, out)
			}
			i := strings.Index(out, "config.toml:11: plugin \"p\" starts with")
			if i < 0 {
				t.Fatalf("check(memory_mib = %d) lacks %q:\n%s", tc.need-1, want, out)
			}
			if _, err := fmt.Sscanf(out[i:], want, &pages, &kib); err != nil || kib != 64*pages || (pages+15)/16 != tc.need {
				t.Errorf("check(memory_mib = %d) = %q, want %q (%v)", tc.need-1, firstLine(out[i:]), want, err)
			}
			out, err = check(tc.need)
			if loads := err == nil; loads != tc.loads {
				t.Errorf("check(memory_mib = %d) = %v, want it to load: %v:\n%s", tc.need, err, tc.loads, out)
			}
			if strings.Contains(out, "raise memory_mib") {
				t.Errorf("check(memory_mib = %d) still asks to raise memory_mib:\n%s", tc.need, out)
			}
		})
	}
}

// TestCallLogLines: every call logs one info line with the tool, its duration and
// its outcome, and at debug a line with the argument and result sizes.
func TestCallLogLines(t *testing.T) {
	cfg := writeConfig(t, serverTOML(t)+pluginTOML(t, "textkit", "plugins/textkit/textkit.wasm", ""))
	cs, stderr := connectStdio(t, "--config", cfg, "--log-level", "debug")
	ctx := context.Background()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "textkit_sha256", Arguments: map[string]any{"text": "abc"}}); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "textkit_base64_decode", Arguments: map[string]any{"data": "!!"}})
	if err != nil || !res.IsError {
		t.Fatalf("base64_decode(!!) = %+v, %v; want a tool error", res, err)
	}
	cs.Close()
	wants := []*regexp.Regexp{
		regexp.MustCompile(`level=INFO msg=call tool=textkit_sha256 took=[0-9.]+[µm]?s outcome=ok\n`),
		regexp.MustCompile(`level=DEBUG msg="call sizes" tool=textkit_sha256 argument_bytes=14 result_bytes=\d+\n`),
		regexp.MustCompile(`level=INFO msg=call tool=textkit_base64_decode took=[0-9.]+[µm]?s outcome=tool_error\n`),
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, re := range wants {
		for !re.MatchString(stderr.String()) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if !re.MatchString(stderr.String()) {
			t.Errorf("stderr lacks %s:\n%s", re, stderr)
		}
	}
	if n := strings.Count(stderr.String(), "msg=call "); n != 2 {
		t.Errorf("%d call lines, want 2 (one per call):\n%s", n, stderr)
	}
}
