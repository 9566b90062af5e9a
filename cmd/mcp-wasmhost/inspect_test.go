package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
)

// TestInspect: a Go and a C plugin are described in full (pin, imports, exports,
// memories, tables, ABI, tools with schemas, resources and prompts); a malformed
// module is reported with its problems and exit 1.
func TestInspect(t *testing.T) {
	for _, tc := range []struct {
		name, rel string
		code      int
		want      []string
	}{
		{"go", "plugins/toolbox/toolbox.wasm", 0, []string{
			"sha256     " + testenv.Spec(t, "toolbox", "plugins/toolbox/toolbox.wasm").SHA256,
			`pin        sha256 = "`,
			"mcpwh.request  func (i32, i32, i32, i32) -> i32",
			"wasi_snapshot_preview1.fd_write  func (i32, i32, i32, i32) -> i32",
			"mcpwh_call  func () -> i32", "memory  memory",
			"memories (1)\n  0: min 46 pages (2.9 MiB), no max", "tables (1)\n  0: funcref min",
			"abi        version 1", "tools (8)", "write_note  [task optional]",
			`input:  {"additionalProperties":false,"properties":{"name":`, "problems (0)"}},
		{"c", "plugins/textkit/textkit.wasm", 0, []string{
			"imports (7)", "mcpwh.log  func (i32, i32, i32) -> i32", "_initialize  func ()",
			"0: funcref min 10, max 10", "tools (5)", `output: {"additionalProperties":false`, "problems (0)"}},
		{"c with resources and prompts", "testdata/wasm/library.wasm", 0, []string{
			"resources (2)", "lib://readme  text/plain", "lib://books/{id}  (template)", "prompts (1)", "summarize(topic (required))"}},
		{"malformed", "testdata/wasm/truncated.wasm", 1, []string{
			"size       20 bytes", "problems (2)", "error: not a readable WebAssembly module: at byte 10: section 1 of 11 bytes runs past the end",
			"error: no plugin could be loaded: ", "not a valid WebAssembly module"}},
		{"undeclared import", "testdata/wasm/missing_import.wasm", 1, []string{"imports (", "problems (1)", "error: "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := runCLI(t, "", "inspect", testenv.Path(tc.rel))
			if code != tc.code {
				t.Errorf("inspect %s: exit %d, want %d\nstderr:\n%s", tc.rel, code, tc.code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("inspect %s output lacks %q:\n%s", tc.rel, w, out)
				}
			}
		})
	}
}

// TestInspectProblems: a memory minimum above --memory-mib names the memory_mib to
// set, and a module without tools gets the init() rule; usage and size limits hold.
func TestInspectProblems(t *testing.T) {
	out, _, code := runCLI(t, "", "inspect", "--memory-mib", "2", toolboxWasm)
	if want := "error: the module's memory starts at 46 pages (2.9 MiB), above memory_mib 2: raise memory_mib to at least 3"; code != 1 || !strings.Contains(out, want) {
		t.Errorf("inspect --memory-mib 2: exit %d, output lacks %q:\n%s", code, want, out)
	}

	dir := t.TempDir()
	wat := writeFile(t, dir, "none.wat", `(module
  (import "mcpwh" "output_write" (func $output_write (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\"tools\":[]}")
  (func (export "mcpwh_abi_version") (result i32) (i32.const 1))
  (func (export "mcpwh_describe") (result i32) (drop (call $output_write (i32.const 0) (i32.const 12))) (i32.const 0))
  (func (export "mcpwh_call") (result i32) (i32.const 1)))`)
	wasm := filepath.Join(dir, "none.wasm")
	if b, err := exec.Command("wat2wasm", wat, "-o", wasm).CombinedOutput(); err != nil {
		t.Fatalf("wat2wasm: %v\n%s", err, b)
	}
	out, stderr, code := runCLI(t, "", "inspect", wasm)
	if want := "warning: the plugin offers no tools: a Go plugin must call guest.Add in init(), not in main()"; code != 0 || !strings.Contains(out, want) {
		t.Errorf("inspect of a module without tools: exit %d, output lacks %q:\n%s\nstderr:\n%s", code, want, out, stderr)
	}

	big := filepath.Join(dir, "big.wasm")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(maxInspectBytes + 1) // sparse: takes no disk
	f.Close()
	if _, stderr, code := runCLI(t, "", "inspect", big); code != 1 || !strings.Contains(stderr, "over the 256 MiB inspect reads") {
		t.Errorf("inspect of a 256 MiB + 1 file: exit %d, stderr:\n%s", code, stderr)
	}
	if _, stderr, code := runCLI(t, "", "inspect"); code != 2 || !strings.Contains(stderr, "want one PLUGIN") {
		t.Errorf("inspect without a file: exit %d, stderr:\n%s", code, stderr)
	}
}
