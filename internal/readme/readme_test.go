package readme

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
)

// TestREADME follows README.md as a newcomer would, in a fresh clone of HEAD, offline,
// with a fresh HOME and GOBIN: every block marked <!-- readme-test --> runs in order as
// a bash script in the clone's root (so the install block puts mcp-wasmhost on the PATH
// of the later ones), then the tour's lines go to the installed binary over stdio and
// its answers are checked, down to the note the tour writes.
func TestREADME(t *testing.T) {
	if testing.Short() {
		t.Skip("clones the repository and builds plugins: not under -short")
	}
	doc, err := os.ReadFile(testenv.Path("README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := MarkedBlocks(string(doc), TestMarker)
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	tours, err := MarkedBlocks(string(doc), TourMarker)
	if err != nil || len(tours) != 1 {
		t.Fatalf("README.md: want one tour block, got %d (%v)", len(tours), err)
	}
	if len(blocks) < 3 {
		t.Fatalf("README.md has %d blocks marked %s, want install, Go plugin and C plugin", len(blocks), TestMarker)
	}

	tmp := t.TempDir()
	clone := filepath.Join(tmp, "mcp-wasmhost")
	if out, err := exec.Command("git", "clone", "-q", testenv.Root(), clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	if committed, err := os.ReadFile(filepath.Join(clone, "README.md")); err != nil || string(committed) != string(doc) {
		t.Fatalf("README.md differs from HEAD's (%v): commit it, the test follows the clone", err)
	}
	env := newcomerEnv(t, tmp)
	for _, b := range blocks {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", b.Text)
		cmd.Dir, cmd.Env = clone, env
		start := time.Now()
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("README.md:%d: %v after %s\n%s\noutput:\n%s", b.Line, err, time.Since(start).Round(time.Millisecond), b.Text, out)
		}
		t.Logf("README.md:%d: ok in %s", b.Line, time.Since(start).Round(time.Millisecond))
	}
	head, err := exec.Command("git", "-C", clone, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	version := exec.Command(filepath.Join(tmp, "bin", "mcp-wasmhost"), "--version")
	version.Env = env
	if out, err := version.Output(); err != nil || !strings.Contains(string(out), "revision  "+strings.TrimSpace(string(head))+" (") {
		t.Errorf("the installed --version = %q, %v; want the clone's revision %s", out, err, head)
	}
	runTour(t, clone, env, tours[0])
}

// newcomerEnv is the environment of someone who just cloned the repository: a HOME,
// GOBIN, state and caches of their own (so the compilation cache starts cold), GOBIN
// on PATH. The Go module and build caches are this machine's, and the module proxy
// is off: nothing is fetched.
func newcomerEnv(t *testing.T, tmp string) []string {
	goenv := func(k string) string {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", k, err)
		}
		return strings.TrimSpace(string(out))
	}
	home, bin := filepath.Join(tmp, "home"), filepath.Join(tmp, "bin")
	for _, d := range []string{home, bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	keep := map[string]bool{"TMPDIR": true, "LANG": true, "TERM": true}
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); keep[k] {
			env = append(env, kv)
		}
	}
	return append(env,
		"HOME="+home, "GOBIN="+bin, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"XDG_CACHE_HOME="+filepath.Join(home, ".cache"), "XDG_STATE_HOME="+filepath.Join(home, ".local", "state"),
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"GOMODCACHE="+goenv("GOMODCACHE"), "GOCACHE="+goenv("GOCACHE"), "GOPATH="+filepath.Join(home, "go"),
		"GOPROXY=off", "GOFLAGS=", "GOTOOLCHAIN=local", "GONOSUMDB=*", "GOSUMDB=off")
}

// runTour sends the tour's lines to the installed binary, as README says a reader
// would: TASK_ID becomes the taskId of the task the tour started, and the answer to
// the elicitation takes the id of the server's elicitation/create.
func runTour(t *testing.T, clone string, env []string, tour Block) {
	var bin string // where the install block put it (exec would search our PATH, not env's)
	for _, kv := range env {
		if p, ok := strings.CutPrefix(kv, "GOBIN="); ok {
			bin = filepath.Join(p, "mcp-wasmhost")
		}
	}
	cmd := exec.Command(bin)
	cmd.Dir, cmd.Env = clone, env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	messages := make(chan map[string]any, 64)
	go func() {
		defer close(messages)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = map[string]any{"unparsed": sc.Text()}
			}
			messages <- m
		}
	}()
	answers := map[string]map[string]any{} // by request id
	var elicitations []map[string]any
	deadline := time.After(2 * time.Minute)
	// await reads messages until have() holds.
	await := func(what string, have func() bool) {
		for !have() {
			select {
			case m, ok := <-messages:
				if !ok {
					t.Fatalf("the server closed stdout while the tour waited for %s; stderr:\n%s", what, stderr.String())
				}
				if u, ok := m["unparsed"]; ok {
					t.Fatalf("stdout line is not JSON: %q", u)
				}
				switch {
				case m["method"] == "elicitation/create":
					elicitations = append(elicitations, m)
				case m["id"] != nil && m["method"] == nil:
					answers[fmt.Sprint(m["id"])] = m
				}
			case <-deadline:
				t.Fatalf("the tour timed out waiting for %s; stderr:\n%s", what, stderr.String())
			}
		}
	}
	var sent []string // request ids
	for n, line := range strings.Split(strings.TrimSpace(tour.Text), "\n") {
		var msg map[string]any
		if err := json.Unmarshal([]byte(line), &msg); err != nil {
			t.Fatalf("README.md:%d: tour line %d is not JSON: %v", tour.Line+1+n, n+1, err)
		}
		if strings.Contains(line, "TASK_ID") {
			await("the task", func() bool { return taskID(answers) != "" })
			line = strings.ReplaceAll(line, "TASK_ID", taskID(answers))
		}
		if msg["method"] == nil { // an answer to the server's request
			await("an elicitation/create", func() bool { return len(elicitations) > 0 })
			id, _ := json.Marshal(elicitations[0]["id"])
			msg["id"] = json.RawMessage(id)
			b, _ := json.Marshal(msg)
			line = string(b)
		} else if id, ok := msg["id"]; ok {
			sent = append(sent, fmt.Sprint(id))
		}
		if _, err := fmt.Fprintln(stdin, line); err != nil {
			t.Fatal(err)
		}
	}
	await("every answer", func() bool {
		for _, id := range sent {
			if answers[id] == nil {
				return false
			}
		}
		return true
	})
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("mcp-wasmhost after the tour: %v\n%s", err, stderr.String())
	}

	digest := sha256.Sum256([]byte("hello"))
	for id, want := range map[string]string{
		"2": hex.EncodeToString(digest[:]),
		"4": `"counted":3`,
		"5": "Created note hello.txt (2 bytes).",
	} {
		if b, _ := json.Marshal(answers[id]); answers[id]["result"] == nil || !strings.Contains(string(b), want) {
			t.Errorf("tour answer %s = %s, want a result with %s", id, b, want)
		}
	}
	if len(elicitations) != 1 {
		t.Errorf("tour: %d elicitations, want 1 (write_note's)", len(elicitations))
	}
	note, err := os.ReadFile(filepath.Join(clone, "plugins/toolbox/notes/hello.txt"))
	if err != nil || string(note) != "hi" {
		t.Errorf("the tour's note = %q, %v; want \"hi\"", note, err)
	}
	for _, want := range []string{"msg=call tool=textkit_sha256 ", "outcome=ok"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}

// taskID returns the taskId of the tour's task, from the answer that created it.
func taskID(answers map[string]map[string]any) string {
	for _, a := range answers {
		if r, ok := a["result"].(map[string]any); ok {
			if task, ok := r["task"].(map[string]any); ok {
				if id, ok := task["taskId"].(string); ok {
					return id
				}
			}
		}
	}
	return ""
}

// maxSize is README.md's budget in bytes (issue #18: "about 12 KB"). Detail belongs in
// docs/, which README links to; README teaches the newcomer.
const maxSize = 12 << 10

// TestREADMESize keeps README.md within maxSize, so that it cannot grow back into a
// design document one section at a time.
func TestREADMESize(t *testing.T) {
	doc, err := os.ReadFile(testenv.Path("README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(doc) > maxSize {
		t.Errorf("README.md is %d bytes, over its budget of %d: move detail to docs/ and link to it", len(doc), maxSize)
	}
}

// TestREADMELinks checks that every relative link in README.md names a file of the
// repository and, with a #fragment, a heading of that file.
func TestREADMELinks(t *testing.T) {
	doc, err := os.ReadFile(testenv.Path("README.md"))
	if err != nil {
		t.Fatal(err)
	}
	links := regexp.MustCompile(`\]\(([^)\s]+)\)`).FindAllStringSubmatch(string(doc), -1)
	if len(links) == 0 {
		t.Fatal("README.md has no links")
	}
	for _, m := range links {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		file, fragment, _ := strings.Cut(target, "#")
		if file == "" {
			file = "README.md"
		}
		text, err := os.ReadFile(testenv.Path(file))
		if err != nil {
			if _, serr := os.Stat(testenv.Path(file)); serr == nil {
				continue // a folder
			}
			t.Errorf("README.md links to %s: %v", target, err)
			continue
		}
		if fragment != "" && !slices.Contains(anchors(string(text)), fragment) {
			t.Errorf("README.md links to %s: %s has no heading with that anchor", target, file)
		}
	}
}

// anchors returns the anchors GitHub gives the headings of a Markdown document:
// lower case, punctuation other than '-' and '_' dropped, spaces made '-'.
func anchors(doc string) []string {
	var out []string
	inFence := false
	for _, line := range strings.Split(doc, "\n") {
		if _, _, ok := openFence(line); ok {
			inFence = !inFence
		}
		title, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if inFence || !ok || !strings.HasPrefix(line, "#") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(title)) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		out = append(out, b.String())
	}
	return out
}
