package host_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/host"
	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts under testdata/wire")

// TestWireTranscripts replays the golden JSON-RPC transcripts of each Tasks wire
// (testdata/wire/<wire>/*.txtar) against a real server over real plugins and compares
// what the server sends, byte for byte after normalising what is random.
//
// A transcript's comment says what it shows; its "client" file is what the client
// sends, one JSON value after another. A JSON-RPC request is sent and its response
// awaited; one written {"send": request} is sent and not awaited (its answer waits on
// the client's, as a call that asks for input on a session does). A JSON-RPC response
// answers the server's request with that id once it has arrived; a notification is
// sent. {"wait":{"taskId":…,"status":…}} waits (off the wire) until the task has that
// status.
//
// The wires 2025 and ext2025 are served over stdio (a session), ext and none over the
// stateless Streamable HTTP handler (MCP 2026-07-28), one POST per request. The files
// written are "server" (the responses, in the order of the requests; on HTTP every
// message of each POST's response, with its HTTP status where it is not 200),
// "requests" (the server's requests, as they arrived) and "notifications" (sorted:
// they race the responses).
//
// Normalised: task IDs and request states become <task-N> and <state-N> in the order
// the responses show them (a client file uses the same names), and createdAt and
// lastUpdatedAt values become <time>. Run with -update to rewrite the files.
func TestWireTranscripts(t *testing.T) {
	for _, wire := range []string{"2025", "ext", "ext2025", "none"} {
		files, err := filepath.Glob(filepath.Join("testdata", "wire", wire, "*.txtar"))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			t.Fatalf("no transcripts for wire %s", wire)
		}
		for _, path := range files {
			name := wire + "/" + strings.TrimSuffix(filepath.Base(path), ".txtar")
			t.Run(name, func(t *testing.T) {
				runTranscript(t, wire, path, true)
			})
			// The stream wires answer hot tasks/* requests below the SDK
			// (hotpath.go); through the SDK alone they must read the same.
			if wire == "2025" || wire == "ext2025" {
				t.Run(name+"/sdk", func(t *testing.T) {
					runTranscript(t, wire, path, false)
				})
			}
		}
	}
}

// runTranscript runs the client file of the transcript at path and compares what the
// server sent with the rest of the file; hot false sends every request through the
// SDK.
func runTranscript(t *testing.T, wire, path string, hot bool) {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ar := parseTxtar(raw)
	client, ok := ar.file("client")
	if !ok {
		t.Fatalf("%s has no client file", path)
	}
	steps, err := decodeSteps(client)
	if err != nil {
		t.Fatalf("%s: client: %v", path, err)
	}
	f := wireFixture(t)
	f.srv.SetHotPath(hot)
	n := newNormaliser()
	var got map[string][]json.RawMessage
	switch wire {
	case "2025", "ext2025":
		got = runStdio(t, f, n, steps)
		if served := f.srv.HotServed(); hot != (served > 0) && strings.Contains(client, `"method":"tasks/get","params":{"taskId"`) {
			t.Errorf("the hot path answered %d requests (hot path on: %v)", served, hot)
		}
	default:
		got = runHTTP(t, f, n, steps)
	}
	out := txtar{comment: ar.comment, files: []txtarFile{{"client", client}}}
	for _, name := range []string{"server", "requests", "notifications"} {
		msgs := got[name]
		if len(msgs) == 0 {
			continue
		}
		for _, m := range msgs {
			n.learn(m)
		}
		shown := make([]string, len(msgs))
		for i, m := range msgs {
			shown[i] = n.apply(m)
		}
		if name == "notifications" {
			slices.Sort(shown)
		}
		out.files = append(out.files, txtarFile{name, strings.Join(shown, "")})
	}
	want := out.format()
	if *update && hot {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(raw, want) {
		t.Errorf("%s differs from what the server sent; rerun with -update and review the diff:\n%s", path, lineDiff(string(raw), string(want)))
	}
}

// wireFixture serves the conformance fixture's plugin (taskfix) alone, so that what
// the transcripts show (initialize, tools/list) moves with the wires, not with the
// other test plugins.
func wireFixture(t *testing.T) *fixture {
	t.Helper()
	shared, _, _ := sharedCatalog(t)
	var kept []*plugins.Plugin
	for _, p := range shared.Plugins() {
		if p.Name == "taskfix" {
			kept = append(kept, p)
		}
	}
	c, err := plugins.NewCatalog(kept)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := host.New(c, host.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	hs := httptest.NewServer(srv.HTTPHandler())
	t.Cleanup(hs.Close)
	return &fixture{srv: srv, url: hs.URL + "/mcp", catalog: c}
}

// step is one value of a client file.
type step struct {
	raw    json.RawMessage
	msg    rpcMessage
	noWait bool // a request sent with "send": not awaited (it waits on the client)
	wait   *waitStep
	kind   string // "request", "response", "notification", "wait"
	idText string // the JSON-RPC id as sent
}

type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

type waitStep struct {
	TaskID string `json:"taskId"`
	Status string `json:"status"`
}

func decodeSteps(data string) ([]step, error) {
	dec := json.NewDecoder(strings.NewReader(data))
	var steps []step
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err == io.EOF {
			return steps, nil
		} else if err != nil {
			return nil, err
		}
		s := step{raw: raw}
		var probe struct {
			Wait *waitStep       `json:"wait"`
			Send json.RawMessage `json:"send"`
		}
		if err := json.Unmarshal(raw, &probe); err != nil {
			return nil, err
		}
		if probe.Wait != nil {
			s.kind, s.wait = "wait", probe.Wait
			steps = append(steps, s)
			continue
		}
		if probe.Send != nil {
			s.raw, s.noWait = probe.Send, true
			raw = probe.Send
		}
		if err := json.Unmarshal(raw, &s.msg); err != nil {
			return nil, err
		}
		s.idText = string(s.msg.ID)
		switch {
		case s.msg.Method != "" && s.msg.ID != nil:
			s.kind = "request"
		case s.msg.Method != "":
			s.kind = "notification"
		default:
			s.kind = "response"
		}
		steps = append(steps, s)
	}
}

// compact is v on one line, as a client sends it.
func compact(raw []byte) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}

const stepTimeout = 30 * time.Second

// runStdio plays steps over stdio against f's server.
func runStdio(t *testing.T, f *fixture, n *normaliser, steps []step) map[string][]json.RawMessage {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- f.srv.ServeStdio(context.Background(), inR, outW)
		outW.Close()
	}()
	lines := make(chan []byte, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			lines <- bytes.Clone(sc.Bytes())
		}
	}()

	responses := map[string]json.RawMessage{}
	var requests, notes []json.RawMessage
	serverReqs := map[string]bool{} // id -> answered
	take := func(line []byte) {
		var m rpcMessage
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("server sent %q: %v", line, err)
		}
		switch {
		case m.Method != "" && m.ID != nil:
			requests = append(requests, line)
			serverReqs[string(m.ID)] = false
		case m.Method != "":
			notes = append(notes, line)
		default:
			n.learn(line)
			responses[string(m.ID)] = line
		}
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		timeout := time.After(stepTimeout)
		for !cond() {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("the server closed its output while waiting for %s", what)
				}
				take(line)
			case <-timeout:
				t.Fatalf("no %s after %v", what, stepTimeout)
			}
		}
	}
	send := func(raw []byte) {
		t.Helper()
		if _, err := inW.Write(append(compact(n.fill(raw)), '\n')); err != nil {
			t.Fatalf("write to the server: %v", err)
		}
	}
	var order []string // request ids, in the order sent
	for _, s := range steps {
		switch s.kind {
		case "request":
			send(s.raw)
			order = append(order, s.idText)
			if !s.noWait {
				waitFor("response to "+s.idText, func() bool { return responses[s.idText] != nil })
			}
		case "response":
			waitFor("server request "+s.idText, func() bool { _, ok := serverReqs[s.idText]; return ok })
			send(s.raw)
			serverReqs[s.idText] = true
		case "notification":
			send(s.raw)
		case "wait":
			wait(t, f, n, "local", s.wait)
		}
	}
	waitFor("every response", func() bool {
		for _, id := range order {
			if responses[id] == nil {
				return false
			}
		}
		return true
	})
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	if err := f.srv.Close(ctx); err != nil {
		t.Errorf("Close = %v", err)
	}
	inW.Close()
	for line := range lines {
		take(line)
	}
	if err := <-served; err != nil {
		t.Errorf("ServeStdio = %v", err)
	}
	out := map[string][]json.RawMessage{"requests": requests, "notifications": notes}
	for _, id := range order {
		out["server"] = append(out["server"], responses[id])
	}
	return out
}

func wait(t *testing.T, f *fixture, n *normaliser, owner string, w *waitStep) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	if err := f.srv.WaitTask(ctx, owner, string(n.fill([]byte(w.TaskID))), w.Status); err != nil {
		t.Fatalf("wait for %s to be %s: %v", w.TaskID, w.Status, err)
	}
}

// runHTTP plays steps against f's stateless Streamable HTTP handler, one POST per
// request, with the headers MCP 2026-07-28 requires, taken from the request.
func runHTTP(t *testing.T, f *fixture, n *normaliser, steps []step) map[string][]json.RawMessage {
	var server []json.RawMessage
	for _, s := range steps {
		switch s.kind {
		case "wait":
			wait(t, f, n, "anonymous", s.wait)
			continue
		case "response":
			t.Fatalf("a stateless client answers no server requests: %s", s.raw)
		}
		body := compact(n.fill(s.raw))
		var m struct {
			Method string `json:"method"`
			Params struct {
				Name   string         `json:"name"`
				TaskID string         `json:"taskId"`
				Meta   map[string]any `json:"_meta"`
			} `json:"params"`
		}
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequest(http.MethodPost, f.url, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		version, _ := m.Params.Meta["io.modelcontextprotocol/protocolVersion"].(string)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", version)
		req.Header.Set("Mcp-Method", m.Method)
		switch {
		case m.Method == "tools/call":
			req.Header.Set("Mcp-Name", m.Params.Name)
		case strings.HasPrefix(m.Method, "tasks/") && m.Params.TaskID != "":
			req.Header.Set("Mcp-Name", m.Params.TaskID)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			server = append(server, json.RawMessage(fmt.Sprintf("# HTTP %d\n", resp.StatusCode)))
		}
		var msgs [][]byte
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			for line := range strings.SplitSeq(string(got), "\n") {
				if data, ok := strings.CutPrefix(line, "data:"); ok {
					msgs = append(msgs, []byte(strings.TrimSpace(data)))
				}
			}
		} else if len(bytes.TrimSpace(got)) > 0 {
			msgs = append(msgs, bytes.TrimSpace(got))
		}
		for _, msg := range msgs {
			if !json.Valid(msg) {
				server = append(server, json.RawMessage(fmt.Sprintf("# body %q\n", msg)))
				continue
			}
			n.learn(msg)
			server = append(server, msg)
		}
	}
	return map[string][]json.RawMessage{"server": server}
}

// normaliser names the random values a server sends (task IDs, request states) and
// blanks its timestamps, so that a transcript compares byte for byte.
type normaliser struct {
	names map[string]string // real value -> placeholder
	reals map[string]string // placeholder -> real value
	times map[string]bool
	count map[string]int
}

func newNormaliser() *normaliser {
	return &normaliser{names: map[string]string{}, reals: map[string]string{}, times: map[string]bool{}, count: map[string]int{}}
}

// learn names the random values in msg not named yet.
func (n *normaliser) learn(msg []byte) {
	if len(msg) > 0 && msg[0] == '#' {
		return
	}
	var v any
	if json.Unmarshal(msg, &v) != nil {
		return
	}
	n.walk(v)
}

func (n *normaliser) walk(v any) {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			s, isString := v[k].(string)
			switch {
			case isString && k == "taskId":
				n.name("task", s)
			case isString && k == "requestState":
				n.name("state", s)
			case isString && (k == "createdAt" || k == "lastUpdatedAt"):
				n.times[s] = true
			default:
				n.walk(v[k])
			}
		}
	case []any:
		for _, e := range v {
			n.walk(e)
		}
	}
}

func (n *normaliser) name(kind, real string) {
	if _, ok := n.names[real]; ok || real == "" || strings.HasPrefix(real, "<") {
		return
	}
	n.count[kind]++
	p := fmt.Sprintf("<%s-%d>", kind, n.count[kind])
	n.names[real], n.reals[p] = p, real
}

// apply is msg as a transcript shows it: named, blanked and indented.
func (n *normaliser) apply(msg []byte) string {
	if len(msg) > 0 && msg[0] == '#' {
		return string(msg)
	}
	s := string(msg)
	for real, p := range n.names {
		s = strings.ReplaceAll(s, real, p)
	}
	for ts := range n.times {
		s = strings.ReplaceAll(s, ts, "<time>")
	}
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(s), "", "\t"); err != nil {
		return s + "\n"
	}
	b.WriteByte('\n')
	return b.String()
}

// fill puts the real values back into what a client sends.
func (n *normaliser) fill(raw []byte) []byte {
	s := string(raw)
	for p, real := range n.reals {
		s = strings.ReplaceAll(s, p, real)
	}
	return []byte(s)
}

// txtar is a txtar archive (golang.org/x/tools/txtar's format, which this module
// does not otherwise need): a comment, then files, each after a "-- name --" line.
type txtar struct {
	comment string
	files   []txtarFile
}

type txtarFile struct {
	name, data string
}

func (a txtar) file(name string) (string, bool) {
	for _, f := range a.files {
		if f.name == name {
			return f.data, true
		}
	}
	return "", false
}

func parseTxtar(b []byte) txtar {
	var a txtar
	cur := &a.comment
	for line := range strings.SplitAfterSeq(string(b), "\n") {
		trimmed := strings.TrimRight(line, "\n")
		if strings.HasPrefix(trimmed, "-- ") && strings.HasSuffix(trimmed, " --") && len(trimmed) >= 6 {
			a.files = append(a.files, txtarFile{name: strings.TrimSpace(trimmed[3 : len(trimmed)-3])})
			cur = &a.files[len(a.files)-1].data
			continue
		}
		*cur += line
	}
	return a
}

func (a txtar) format() []byte {
	var b strings.Builder
	b.WriteString(a.comment)
	for _, f := range a.files {
		fmt.Fprintf(&b, "-- %s --\n", f.name)
		b.WriteString(f.data)
		if f.data != "" && !strings.HasSuffix(f.data, "\n") {
			b.WriteByte('\n')
		}
	}
	return []byte(b.String())
}

// lineDiff shows the lines of got and want that differ, with line numbers.
func lineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(g), len(w)) && shown < 40; i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			fmt.Fprintf(&b, "line %d:\n  file:   %s\n  server: %s\n", i+1, gl, wl)
			shown++
		}
	}
	return b.String()
}
