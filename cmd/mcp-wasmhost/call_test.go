package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
)

// runCLI runs the real binary with args in dir (a temporary folder when ""), with
// stdin not a terminal, and returns its stdout, stderr and exit code.
func runCLI(t *testing.T, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	if dir == "" {
		dir = t.TempDir()
	}
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

var toolboxWasm = testenv.Path("plugins/toolbox/toolbox.wasm")

// TestCallScriptedAnswers: elicitation and sampling are answered from an answers
// file (JSON lines or an array), in order; an answer that runs out declines with a
// message; the guest's log line reaches stderr.
func TestCallScriptedAnswers(t *testing.T) {
	for _, tc := range []struct {
		name, answers string
		wantOut       string
		wantErr       []string
		written       bool
	}{
		{"accept, JSON lines", `{"action":"accept","content":{"confirm":true}}` + "\n", "Created note n.txt (5 bytes).",
			[]string{`elicitation "Create note \"n.txt\" with 5 bytes?": accept`, "[info] wrote note n.txt (5 bytes)"}, true},
		{"decline, JSON array", `[{"action":"decline"}]`, `Not written: the user answered "decline".`,
			[]string{`: decline (`}, false},
		{"no answer left", `[]`, `Not written: the user answered "decline".`,
			[]string{"elicitation declined: ", "has no answer left"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			notes := filepath.Join(dir, "notes")
			os.Mkdir(notes, 0o755)
			answers := writeFile(t, dir, "answers", tc.answers)
			out, stderr, code := runCLI(t, dir, "call", "--dir", "notes:/notes:rw", "--answers", answers,
				toolboxWasm, "write_note", `{"name":"n.txt","text":"hello"}`)
			if code != 0 || strings.TrimSpace(out) != tc.wantOut {
				t.Fatalf("call write_note = %q, exit %d; want %q, exit 0\nstderr:\n%s", out, code, tc.wantOut, stderr)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			b, err := os.ReadFile(filepath.Join(notes, "n.txt"))
			if written := err == nil; written != tc.written || (written && string(b) != "hello") {
				t.Errorf("note on disk = %q, %v; want written %v", b, err, tc.written)
			}
		})
	}

	t.Run("sampling", func(t *testing.T) {
		dir := t.TempDir()
		answers := writeFile(t, dir, "answers", `{"text":"A short summary.","model":"m1"}`)
		out, stderr, code := runCLI(t, dir, "call", "--answers", answers, toolboxWasm, "summarize", `{"text":"a long text to summarize"}`)
		if code != 0 || strings.TrimSpace(out) != "A short summary." {
			t.Fatalf("call summarize = %q, exit %d\nstderr:\n%s", out, code, stderr)
		}
	})
	t.Run("wrong kind of answer", func(t *testing.T) {
		dir := t.TempDir()
		answers := writeFile(t, dir, "answers", `{"action":"accept","content":{}}`)
		_, stderr, code := runCLI(t, dir, "call", "--answers", answers, toolboxWasm, "summarize", `{"text":"some text"}`)
		if code != 1 || !strings.Contains(stderr, "is an elicitation answer, but the plugin asked for sampling") {
			t.Fatalf("call summarize with an elicitation answer: exit %d\nstderr:\n%s", code, stderr)
		}
	})
	t.Run("no answers, no terminal", func(t *testing.T) {
		_, stderr, code := runCLI(t, "", "call", toolboxWasm, "summarize", `{"text":"some text"}`)
		if code != 1 || !strings.Contains(stderr, "sampling declined (no --answers file, and stdin is not a terminal)") {
			t.Fatalf("call summarize without answers: exit %d\nstderr:\n%s", code, stderr)
		}
	})
}

// TestCallLogsAndProgress: progress goes to stderr, and with --json every event and
// the result are JSON lines on stdout.
func TestCallLogsAndProgress(t *testing.T) {
	out, stderr, code := runCLI(t, "", "call", toolboxWasm, "slow_count", `{"to":2,"delay_ms":1}`)
	if code != 0 || !strings.Contains(out, `"counted":2`) || !strings.Contains(stderr, "progress 2/2 counted 2 of 2") {
		t.Fatalf("call slow_count: stdout %q, exit %d\nstderr:\n%s", out, code, stderr)
	}
	out, stderr, code = runCLI(t, "", "call", "--json", toolboxWasm, "slow_count", `{"to":2,"delay_ms":1}`)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], `{"progress":{`) || !strings.Contains(lines[2], `"type":"result"`) {
		t.Fatalf("call --json slow_count: exit %d, stdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
}

// TestCallFailures: a tool error, a protocol error and every kind of bad usage exit
// non-zero (1 for a failure, 2 for usage) with the reason on stderr.
func TestCallFailures(t *testing.T) {
	dir := t.TempDir()
	badAnswers := writeFile(t, dir, "bad.jsonl", `{"action":"maybe"}`)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"tool error", []string{toolboxWasm, "json_format", `{"json":"{nope"}`}, 1, "tool json_format failed: "},
		{"arguments against the schema", []string{toolboxWasm, "json_format", `{"json":1}`}, 1, `validating /properties/json: type: 1 has type "integer", want "string"`},
		{"task-required tool, bad arguments", []string{toolboxWasm, "timer", `{"seconds":"x"}`}, 1, `tools/call timer: calling "tools/call": invalid arguments for tool "timer"`},
		{"--task on a tool without tasks", []string{"--task", toolboxWasm, "json_format", `{"json":"1"}`}, 2, "tool json_format does not support tasks (taskSupport forbidden)"},
		{"--task with --resource", []string{"--task", "--resource", "x://y", toolboxWasm}, 2, "--task runs a tool"},
		{"unknown tool", []string{toolboxWasm, "no_such_tool"}, 1, `no_such_tool`},
		{"missing file", []string{filepath.Join(dir, "none.wasm"), "x"}, 1, "no such file or directory"},
		{"not a wasm module", []string{writeFile(t, dir, "junk.wasm", "junk"), "x"}, 1, "junk"},
		{"memory below the module's", []string{"--memory-mib", "1", toolboxWasm, "json_format", `{"json":"1"}`}, 1, "memory"},
		{"arguments not an object", []string{toolboxWasm, "json_format", `[1]`}, 2, "are not a JSON object"},
		{"no tool", []string{toolboxWasm}, 2, "want PLUGIN TOOL"},
		{"not a .wasm", []string{"config.toml", "x"}, 2, "want a .wasm file"},
		{"bad --dir", []string{"--dir", "nocolon", toolboxWasm, "list_files"}, 2, "want HOST:GUEST"},
		{"bad answers file", []string{"--answers", badAnswers, toolboxWasm, "list_files"}, 2, "bad.jsonl:1: want"},
		{"unknown flag", []string{"--nope", toolboxWasm, "list_files"}, 2, "flag provided but not defined"},
		{"grants with --config", []string{"--config", "x.toml", "--env", "A=b", "p", "t"}, 2, "grant nothing with --config"},
		{"bad env name", []string{"--env", "1A=b", toolboxWasm, "list_files"}, 1, "1A"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := runCLI(t, dir, append([]string{"call"}, tc.args...)...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Fatalf("call %q = exit %d, want %d; stderr lacks %q?\nstdout:\n%s\nstderr:\n%s", tc.args, code, tc.code, tc.want, out, stderr)
			}
		})
	}
}

// TestCallDirGrant: --dir grants read-only by default and read-write with :rw; the
// guest sees nothing else.
func TestCallDirGrant(t *testing.T) {
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs")
	os.Mkdir(docs, 0o755)
	writeFile(t, docs, "a.txt", "alpha")
	answers := writeFile(t, dir, "yes", `{"action":"accept","content":{"confirm":true}}`)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"read a granted file", []string{"--dir", "docs:/docs", toolboxWasm, "read_file", `{"path":"a.txt"}`}, 0, "alpha"},
		{"no grant", []string{toolboxWasm, "read_file", `{"path":"a.txt"}`}, 1, "failed"},
		{"read-only refuses a write", []string{"--answers", answers, "--dir", "docs:/notes:ro", toolboxWasm, "write_note", `{"name":"b.txt","text":"x"}`}, 1, "failed"},
		{"rw allows it", []string{"--answers", answers, "--dir", "docs:/notes:rw", toolboxWasm, "write_note", `{"name":"b.txt","text":"x"}`}, 0, "Created note b.txt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := runCLI(t, dir, append([]string{"call"}, tc.args...)...)
			if code != tc.code || !strings.Contains(out+stderr, tc.want) {
				t.Fatalf("call %q = exit %d, want %d and %q\nstdout:\n%s\nstderr:\n%s", tc.args, code, tc.code, tc.want, out, stderr)
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(docs, "b.txt")); err != nil || string(b) != "x" {
		t.Errorf("b.txt = %q, %v; want the note written through the :rw grant", b, err)
	}
}

// TestCallResourceAndPrompt: --resource serves resources/read (a fixed resource and
// a template), --prompt serves prompts/get.
func TestCallResourceAndPrompt(t *testing.T) {
	lib := testenv.Path("testdata/wasm/library.wasm")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{lib, "--resource", "lib://readme"}, "Welcome to the library.\n"},
		{[]string{"--resource", "lib://books/7", lib}, "Book 7\n"},
		{[]string{lib, "--prompt", "summarize", `{"topic":"owls"}`}, "user: owls\n"},
	} {
		out, stderr, code := runCLI(t, "", append([]string{"call"}, tc.args...)...)
		if code != 0 || out != tc.want {
			t.Errorf("call %q = %q, exit %d; want %q\nstderr:\n%s", tc.args, out, code, tc.want, stderr)
		}
	}
	_, stderr, code := runCLI(t, "", "call", lib, "--resource", "lib://nothing")
	if code != 1 || !strings.Contains(stderr, "resources/read lib://nothing") {
		t.Errorf("call --resource lib://nothing: exit %d\nstderr:\n%s", code, stderr)
	}
}

// TestCallFromConfig: with --config, PLUGIN names a [[plugins]] table whose grants
// and prefix apply; the tool is found by its full or its guest name.
func TestCallFromConfig(t *testing.T) {
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs")
	os.Mkdir(docs, 0o755)
	writeFile(t, docs, "a.txt", "from config")
	cfg := writeConfig(t, serverTOML(t)+pluginTOML(t, "toolbox", "plugins/toolbox/toolbox.wasm", "")+
		fmt.Sprintf("prefix = \"kit\"\n[[plugins.dirs]]\nhost = %q\nguest = \"/docs\"\n", docs))
	for _, tool := range []string{"kit_read_file", "read_file"} {
		out, stderr, code := runCLI(t, dir, "call", "--config", cfg, "toolbox", tool, `{"path":"a.txt"}`)
		if code != 0 || out != "from config\n" {
			t.Errorf("call --config toolbox %s = %q, exit %d\nstderr:\n%s", tool, out, code, stderr)
		}
	}
	_, stderr, code := runCLI(t, dir, "call", "--config", cfg, "nope", "read_file")
	if code != 2 || !strings.Contains(stderr, `has no plugin named "nope" (it has: toolbox)`) {
		t.Errorf("call --config with an unknown plugin: exit %d\nstderr:\n%s", code, stderr)
	}
}

// TestPin: pin prints the line to paste, which the config then accepts.
func TestPin(t *testing.T) {
	want := fmt.Sprintf("sha256 = %q\n", testenv.Spec(t, "toolbox", "plugins/toolbox/toolbox.wasm").SHA256)
	out, stderr, code := runCLI(t, "", "pin", toolboxWasm)
	if code != 0 || out != want {
		t.Fatalf("pin = %q, exit %d; want %q\nstderr:\n%s", out, code, want, stderr)
	}
	if _, stderr, code := runCLI(t, "", "pin"); code != 2 || !strings.Contains(stderr, "usage: mcp-wasmhost pin") {
		t.Errorf("pin without a file: exit %d, stderr:\n%s", code, stderr)
	}
	if _, stderr, code := runCLI(t, "", "pin", "none.wasm"); code != 1 || !strings.Contains(stderr, "none.wasm") {
		t.Errorf("pin of a missing file: exit %d, stderr:\n%s", code, stderr)
	}
}

// TestCallNetGrant: --net lets the guest reach one origin (an IP-literal loopback
// origin included); without it the guest reaches nothing.
func TestCallNetGrant(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "pong")
	}))
	defer srv.Close()
	fetcher := testenv.Path("testdata/wasm/fetcher.wasm")
	args := fmt.Sprintf(`{"requests":[{"url":%q}]}`, srv.URL+"/ping")
	out, stderr, code := runCLI(t, "", "call", "--net", srv.URL, fetcher, "fetch", args)
	if code != 0 || !strings.Contains(out, `"status":200`) || !strings.Contains(out, `"body":"pong"`) {
		t.Errorf("call --net %s fetch = %q, exit %d\nstderr:\n%s", srv.URL, out, code, stderr)
	}
	out, stderr, code = runCLI(t, "", "call", fetcher, "fetch", args)
	if code != 0 || strings.Contains(out, "pong") || !strings.Contains(out, `"error":`) {
		t.Errorf("call fetch without --net = %q, exit %d; want the request refused\nstderr:\n%s", out, code, stderr)
	}
}

var longrunWasm = testenv.Path("plugins/longrun/longrun.wasm")

// TestCallTask: a tool whose taskSupport is required runs as a task, through the
// server's own Tasks: its status changes, progress and live log are printed, its
// elicitation is answered from the answers file, and its outcome is the result (exit
// 0) or the tool's error (exit 1); --task runs an optional tool as one.
func TestCallTask(t *testing.T) {
	const args = `{"cases":3,"fail_every":3,"confirm_at":2}`
	t.Run("accepted", func(t *testing.T) {
		dir := t.TempDir()
		answers := writeFile(t, dir, "answers", `{"action":"accept","content":{"go_on":true}}`)
		out, stderr, code := runCLI(t, dir, "call", "--answers", answers, longrunWasm, "testrun", args)
		if code != 0 || !strings.Contains(out, `"passed":2`) || !strings.Contains(out, `"failures":[3]`) {
			t.Fatalf("call testrun = %q, exit %d; want its result, exit 0\nstderr:\n%s", out, code, stderr)
		}
		for _, w := range []string{
			": working\n", ": input_required: ", ": completed\n", // status changes
			`elicitation "The test run reached case 2 of 3 (0 failed so far). Go on?": accept (`,
			"progress 3/3 3 of 3 cases run",
			"task log: case 1: PASS\n", "task log: the user agreed to go on at case 2\n", "task log: case 3: FAIL (case 3 is a multiple of 3)\n",
		} {
			if !strings.Contains(stderr, w) {
				t.Errorf("stderr lacks %q:\n%s", w, stderr)
			}
		}
		if n := strings.Count(stderr, ": completed\n"); n != 1 {
			t.Errorf("stderr shows the task completed %d times, want once:\n%s", n, stderr)
		}
	})
	t.Run("declined", func(t *testing.T) {
		dir := t.TempDir()
		answers := writeFile(t, dir, "answers", `{"action":"decline"}`)
		out, stderr, code := runCLI(t, dir, "call", "--answers", answers, longrunWasm, "testrun", args)
		if code != 1 || !strings.Contains(stderr, "tool testrun failed: stopped by the user before case 2") || !strings.Contains(stderr, ": failed: ") {
			t.Fatalf("call testrun, declined = %q, exit %d; want the tool's error, exit 1\nstderr:\n%s", out, code, stderr)
		}
	})
	t.Run("json", func(t *testing.T) {
		dir := t.TempDir()
		answers := writeFile(t, dir, "answers", `{"action":"accept","content":{"go_on":true}}`)
		out, stderr, code := runCLI(t, dir, "call", "--json", "--answers", answers, longrunWasm, "testrun", args)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		types := map[string]int{}
		for _, l := range lines {
			var m struct{ Type string }
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("stdout line %q: %v", l, err)
			}
			types[m.Type]++
		}
		if code != 0 || types["status"] < 3 || types["tasklog"] != 4 || types["progress"] != 3 || types["note"] != 1 ||
			!strings.Contains(lines[len(lines)-1], `"type":"result"`) || !strings.Contains(lines[len(lines)-1], `"passed":2`) {
			t.Fatalf("call --json testrun: exit %d, %v, stdout:\n%s\nstderr:\n%s", code, types, out, stderr)
		}
	})
	t.Run("--task on an optional tool", func(t *testing.T) {
		out, stderr, code := runCLI(t, "", "call", "--task", toolboxWasm, "slow_count", `{"to":2,"delay_ms":1}`)
		if code != 0 || !strings.Contains(out, `"counted":2`) || !strings.Contains(stderr, ": working\n") || !strings.Contains(stderr, ": completed\n") {
			t.Fatalf("call --task slow_count = %q, exit %d\nstderr:\n%s", out, code, stderr)
		}
	})
}

// TestCallAsksOnATerminal: on a terminal (script(1) gives call one) elicitation is
// asked field by field and the typed answers reach the tool.
func TestCallAsksOnATerminal(t *testing.T) {
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("needs script(1) for a terminal")
	}
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "notes"), 0o755)
	cmdline := fmt.Sprintf("%s call --dir notes:/notes:rw %s write_note '{\"name\":\"t.txt\",\"text\":\"typed\"}'", binary, toolboxWasm)
	cmd := exec.Command("script", "-qec", cmdline, "/dev/null")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader("a\nyes\n") // accept, then confirm = yes
	b, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(b), "The plugin asks: Create note") || !strings.Contains(string(b), "confirm (boolean, Write the note, default true): ") {
		t.Fatalf("call on a terminal: %v\n%s", err, b)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "notes", "t.txt")); err != nil || string(got) != "typed" {
		t.Errorf("note = %q, %v; want it written after the typed answers\n%s", got, err, b)
	}

	// A task's elicitation is asked on the terminal too.
	cmdline = fmt.Sprintf("%s call %s testrun '{\"cases\":2,\"confirm_at\":2}'", binary, longrunWasm)
	cmd = exec.Command("script", "-qec", cmdline, "/dev/null")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader("a\nyes\n") // accept, then go_on = yes
	b, err = cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(b), "The plugin asks: The test run reached case 2 of 2") || !strings.Contains(string(b), "go_on (boolean): ") ||
		!strings.Contains(string(b), `"passed":2`) {
		t.Fatalf("call testrun on a terminal: %v\n%s", err, b)
	}
}
