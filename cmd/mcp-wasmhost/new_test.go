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

// TestNew: `new go` and `new c` write a plugin folder whose make builds the .wasm and
// prints a [[plugins]] table that the server loads as printed, and whose own test
// passes (Go: guest.TestHost; C: test.sh through call). A Go plugin's go.sum stays
// empty: the SDK has no dependencies.
func TestNew(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two plugins")
	}
	for _, tc := range []struct{ lang, name string }{{"go", "demo"}, {"c", "cdemo"}} {
		t.Run(tc.lang, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), tc.name)
			out, stderr, code := runCLI(t, testenv.Root(), "new", tc.lang, tc.name, dir)
			if code != 0 {
				t.Fatalf("new %s %s: exit %d\n%s%s", tc.lang, tc.name, code, out, stderr)
			}
			make := func(args ...string) string {
				t.Helper()
				cmd := exec.Command("make", args...)
				cmd.Dir = dir
				b, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, b)
				}
				return string(b)
			}
			built := make()
			entry := regexp.MustCompile(`(?s)\[\[plugins\]\]\nname = "` + tc.name + `"\npath = "[^"]+"\nsha256 = "[0-9a-f]{64}"\n`).FindString(built)
			if entry == "" {
				t.Fatalf("make printed no [[plugins]] table:\n%s", built)
			}
			cfg := writeConfig(t, serverTOML(t)+entry)
			got, stderr, code := runCLI(t, dir, "call", "--config", cfg, tc.name, "greet", `{"name":"Ada"}`)
			if code != 0 || got != "Hello, Ada!\n" {
				t.Errorf("call of the printed entry = %q, exit %d\nstderr:\n%s", got, code, stderr)
			}
			if tc.lang == "go" {
				make("test")
				if b, err := os.ReadFile(filepath.Join(dir, "go.sum")); err == nil && len(b) > 0 {
					t.Errorf("go.sum holds:\n%s", b)
				}
			} else if tested := make("test", "MCP_WASMHOST="+binary); !strings.Contains(tested, "PASS") {
				t.Errorf("make test:\n%s", tested)
			}
		})
	}
	t.Run("refusals", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "taken", "")
		for _, tc := range []struct {
			args []string
			code int
			want string
		}{
			{[]string{"rust", "x"}, 2, `language "rust": want go or c`},
			{[]string{"go", "Bad_Name"}, 2, `name "Bad_Name"`},
			{[]string{"go", "x", dir}, 1, "exists and is not empty"},
			{[]string{"--sdk", dir, "go", "x", filepath.Join(dir, "x")}, 2, "no go.mod of github.com/mcp-wasmhost/mcp-wasmhost/sdk-guest"},
		} {
			if _, stderr, code := runCLI(t, testenv.Root(), append([]string{"new"}, tc.args...)...); code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Errorf("new %q: exit %d, want %d and %q\nstderr:\n%s", tc.args, code, tc.code, tc.want, stderr)
			}
		}
		if _, stderr, code := runCLI(t, "/", "new", "go", "x", filepath.Join(dir, "y")); code != 2 || !strings.Contains(stderr, "pass --sdk") {
			t.Errorf("new outside a checkout: exit %d\nstderr:\n%s", code, stderr)
		}
	})
}
