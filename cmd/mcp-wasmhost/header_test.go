package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
)

// TestHeaderBuildLine: the build command in sdk-guest/c/mcpwh.h, run verbatim from
// a checkout's root, builds the header's own minimal plugin, which then loads and
// answers through call.
func TestHeaderBuildLine(t *testing.T) {
	b, err := os.ReadFile(testenv.Path("sdk-guest/c/mcpwh.h"))
	if err != nil {
		t.Fatal(err)
	}
	header := string(b)
	m := regexp.MustCompile(`(?s)\n \*   (clang-14 .*?myplugin\.c)\n`).FindStringSubmatch(header)
	if m == nil {
		t.Fatal("mcpwh.h has no clang-14 build line ending in myplugin.c")
	}
	command := strings.ReplaceAll(m[1], "\\\n *        ", "")
	if !strings.Contains(command, "-Wl,-z,stack-size=32768") {
		t.Errorf("build line %q lacks the Makefile's stack size", command)
	}
	// The minimal plugin: the comment lines between "Minimal plugin:" and the
	// MCPWH_PLUGIN line, indented by " *   ".
	ex := regexp.MustCompile(`(?s)Minimal plugin:\n \*\n(.*?MCPWH_PLUGIN\(describe, call\))\n`).FindStringSubmatch(header)
	if ex == nil {
		t.Fatal("mcpwh.h has no minimal plugin")
	}
	var src strings.Builder
	for _, line := range strings.Split(ex[1], "\n") {
		src.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, " *   "), " *") + "\n")
	}
	dir := t.TempDir()
	writeFile(t, dir, "myplugin.c", src.String())
	if err := os.Symlink(testenv.Path("sdk-guest"), filepath.Join(dir, "sdk-guest")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", command)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", command, err, out)
	}
	out, stderr, code := runCLI(t, dir, "call", "myplugin.wasm", "hello")
	if code != 0 || out != "hello, world\n" {
		t.Errorf("call myplugin.wasm hello = %q, exit %d\nstderr:\n%s", out, code, stderr)
	}
}
