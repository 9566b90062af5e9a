package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/host"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// fixture is a server over real plugins, served over Streamable HTTP.
type fixture struct {
	srv     *host.Server
	url     string
	catalog *plugins.Catalog
	docs    string
	notes   string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureWith(t, host.Options{})
}

// shared holds the plugins every fixture serves: loaded once per test binary, since
// plugins are safe for concurrent use and loading Go guests is the slow part.
var shared struct {
	once    sync.Once
	catalog *plugins.Catalog
	docs    string
	notes   string
	err     error
}

func sharedCatalog(t *testing.T) (*plugins.Catalog, string, string) {
	t.Helper()
	shared.once.Do(func() {
		ctx := context.Background()
		e, err := sandbox.NewEngine(ctx, sandbox.Options{CacheDir: testenv.CacheDir()})
		if err != nil {
			shared.err = err
			return
		}
		// Left open for the life of the test binary, like the plugins.
		if shared.docs, err = os.MkdirTemp("", "host-docs"); err == nil {
			shared.notes, err = os.MkdirTemp("", "host-notes")
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(shared.docs, "readme.txt"), []byte("granted text"), 0o644)
		}
		if err != nil {
			shared.err = err
			return
		}
		toolbox := testenv.Spec(t, "toolbox", "plugins/toolbox/toolbox.wasm")
		toolbox.Grants.Dirs = []sandbox.Dir{{Host: shared.docs, Guest: "/docs"}, {Host: shared.notes, Guest: "/notes", Writable: true}}
		spin := testenv.Spec(t, "spin", "testdata/wasm/loop.wasm")
		spin.Limits.Timeout = 300 * time.Millisecond
		memhog := testenv.Spec(t, "memhog", "testdata/wasm/memhog.wasm")
		memhog.Limits.MemoryMiB = 32
		// The conformance fixture, under its own tool names.
		taskfix := testenv.Spec(t, "taskfix", "conformance/taskfix/taskfix.wasm")
		taskfix.Unprefixed = true
		var loaded []*plugins.Plugin
		for _, s := range []plugins.Spec{
			testenv.Spec(t, "textkit", "plugins/textkit/textkit.wasm"), toolbox, spin, memhog,
			testenv.Spec(t, "flood", "testdata/wasm/flood.wasm"),
			testenv.Spec(t, "stateful", "testdata/wasm/stateful.wasm"),
			taskfix,
		} {
			p, err := plugins.Load(ctx, e, s)
			if err != nil {
				shared.err = err
				return
			}
			loaded = append(loaded, p)
		}
		shared.catalog, shared.err = plugins.NewCatalog(loaded)
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.catalog, shared.docs, shared.notes
}

// newFixtureWith serves the shared plugins with a new server (and task manager).
func newFixtureWith(t *testing.T, opts host.Options) *fixture {
	t.Helper()
	c, docs, notes := sharedCatalog(t)
	f := &fixture{catalog: c, docs: docs, notes: notes}
	srv, err := host.New(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	f.srv = srv
	hs := httptest.NewServer(srv.HTTPHandler())
	t.Cleanup(hs.Close)
	f.url = hs.URL + "/mcp"
	return f
}

// stream returns the client end of a new in-memory connection, served as stdio is.
func (f *fixture) stream(t *testing.T) mcp.Transport {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := f.srv.Connect(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	return ct
}

// httpTransport returns a Streamable HTTP client transport to the fixture.
func (f *fixture) httpTransport() mcp.Transport {
	return &mcp.StreamableClientTransport{Endpoint: f.url}
}

// connect connects a go-sdk client on the 2025-11-25 line (a session).
func (f *fixture) connect(t *testing.T, opts *mcp.ClientOptions) *mcp.ClientSession {
	return f.connectVersion(t, opts, "2025-11-25")
}

// connectVersion connects a go-sdk client asking for protocol version v; "2026-07-28"
// is the SDK's default (stateless, server/discover).
func (f *fixture) connectVersion(t *testing.T, opts *mcp.ClientOptions, v string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: f.url}, &mcp.ClientSessionOptions{ProtocolVersion: v})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%s) = %v", name, err)
	}
	return res
}

func TestListAndCallBundledTools(t *testing.T) {
	f := newFixture(t)
	cs := f.connect(t, nil)
	if got := cs.InitializeResult().ProtocolVersion; got != "2025-11-25" {
		t.Errorf("negotiated protocol %q, want 2025-11-25", got)
	}
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(list.Tools), len(f.catalog.Tools()); got != want {
		t.Errorf("tools/list has %d tools, want %d", got, want)
	}
	for _, tool := range list.Tools {
		if len(tool.Name) > 64 {
			t.Errorf("tool name %q is longer than 64", tool.Name)
		}
	}
	tests := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"textkit_stats", map[string]any{"text": "one two\nthree"}, "2 lines, 3 words"},
		{"textkit_sha256", map[string]any{"text": ""}, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"textkit_base64_encode", map[string]any{"text": "héllo"}, "aMOpbGxv"},
		{"textkit_base64_decode", map[string]any{"data": "aMOpbGxv"}, "héllo"},
		{"textkit_ping", map[string]any{}, "pong"},
		{"toolbox_json_format", map[string]any{"json": `{"a":[1,2]}`, "indent": 0}, `{"a":[1,2]}`},
		{"toolbox_json_query", map[string]any{"json": `{"a":[1,{"b":"x"}]}`, "pointer": "/a/1/b"}, `"x"`},
		{"toolbox_slow_count", map[string]any{"to": 3, "delay_ms": 1}, `"counted":3`},
		{"toolbox_list_files", map[string]any{}, "readme.txt\t12 bytes"},
		{"toolbox_read_file", map[string]any{"path": "readme.txt"}, "granted text"},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			res := call(t, cs, tt.tool, tt.args)
			if res.IsError || !strings.Contains(text(t, res), tt.want) {
				t.Errorf("CallTool(%s) = %q (isError %v), want %q", tt.tool, text(t, res), res.IsError, tt.want)
			}
		})
	}
}

func TestToolErrorsAreResults(t *testing.T) {
	f := newFixture(t)
	cs := f.connect(t, nil)
	tests := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"textkit_base64_decode", map[string]any{"data": "!!"}, "Invalid base64"},
		{"toolbox_json_format", map[string]any{"json": "{\n  \"a\": tru\n}"}, "line 2, column"},
		{"toolbox_read_file", map[string]any{"path": "../etc/passwd"}, "stay inside"},
		{"spin_spin", nil, `plugin "spin" was stopped: it exceeded its time limit of 300ms`},
		{"memhog_hog", map[string]any{"mib": 64}, `plugin "memhog" ran out of memory (limit 32 MiB)`},
		{"flood_big", nil, "output of 2 MiB exceeds the limit of 1 MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			res := call(t, cs, tt.tool, tt.args)
			if !res.IsError || !strings.Contains(text(t, res), tt.want) {
				t.Errorf("CallTool(%s) = %q (isError %v), want an error containing %q", tt.tool, text(t, res), res.IsError, tt.want)
			}
		})
	}
	// The server still serves after every failure.
	if res := call(t, cs, "textkit_ping", nil); text(t, res) != "pong" {
		t.Errorf("ping after failures = %q", text(t, res))
	}
}

func TestInvalidArgumentsNeverReachTheGuest(t *testing.T) {
	f := newFixture(t)
	cs := f.connect(t, nil)
	tool, _ := f.catalog.Lookup("textkit_sha256")
	before := tool.Plugin.Module.Instances()
	tests := []struct {
		args any
		want string
	}{
		{map[string]any{}, "missing properties"},
		{map[string]any{"text": 7}, `want "string"`},
		{map[string]any{"text": "x", "extra": true}, "extra"},
	}
	for _, tt := range tests {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "textkit_sha256", Arguments: tt.args})
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpcErr.Message, tt.want) {
			t.Errorf("CallTool(sha256, %v) = %v, want -32602 containing %q", tt.args, err, tt.want)
		}
	}
	if after := tool.Plugin.Module.Instances(); after != before {
		t.Errorf("guest instances went from %d to %d: invalid arguments reached the guest", before, after)
	}
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "no_such_tool"})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("CallTool(unknown) = %v, want -32602", err)
	}
}

func TestServerKeepsServingDuringRunawayGuest(t *testing.T) {
	f := newFixture(t)
	cs := f.connect(t, nil)
	done := make(chan *mcp.CallToolResult)
	go func() {
		res, _ := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "spin_spin"})
		done <- res
	}()
	other := f.connect(t, nil)
	for i := range 20 {
		if res := call(t, other, "textkit_ping", nil); text(t, res) != "pong" {
			t.Fatalf("ping %d while a guest spins = %q", i, text(t, res))
		}
	}
	if res := <-done; res == nil || !res.IsError {
		t.Fatalf("spin = %v, want an isError result at its deadline", res)
	}
}

func TestCancelStopsGuest(t *testing.T) {
	f := newFixture(t)
	cs := f.connect(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "toolbox_slow_count", Arguments: map[string]any{"to": 1000, "delay_ms": 1000}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("CallTool(cancelled) = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("cancel took %v", d)
	}
	if res := call(t, cs, "textkit_ping", nil); text(t, res) != "pong" {
		t.Errorf("ping after cancel = %q", text(t, res))
	}
}

func TestProgressAndLogs(t *testing.T) {
	f := newFixture(t)
	var mu sync.Mutex
	var progress []float64
	var logs []string
	cs := f.connect(t, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			progress = append(progress, r.Params.Progress)
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			mu.Lock()
			defer mu.Unlock()
			logs = append(logs, fmt.Sprint(r.Params.Data))
		},
	})
	if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	params := &mcp.CallToolParams{Name: "toolbox_slow_count", Arguments: map[string]any{"to": 5, "delay_ms": 1}}
	params.SetProgressToken("p1")
	if _, err := cs.CallTool(context.Background(), params); err != nil {
		t.Fatal(err)
	}
	call(t, cs, "toolbox_write_note", map[string]any{"name": "n.txt", "text": "hi"})
	// The client runs notification handlers on their own goroutines: one may still be
	// running when the call has returned.
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		done := len(progress) == 5 && len(logs) == 1
		mu.Unlock()
		if done || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []float64{1, 2, 3, 4, 5}; fmt.Sprint(progress) != fmt.Sprint(want) {
		t.Errorf("progress = %v, want %v", progress, want)
	}
	if len(logs) != 1 || !strings.Contains(logs[0], "wrote note n.txt") {
		t.Errorf("logs = %q, want the note's log line", logs)
	}
}

func TestElicitation(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name    string
		handler func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
		want    string
		written bool
	}{
		{"accept", func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if !strings.Contains(r.Params.Message, `Create note "a.txt" with 5 bytes?`) {
				return nil, fmt.Errorf("unexpected message %q", r.Params.Message)
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
		}, "Created note a.txt (5 bytes).", true},
		{"decline", func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}, `Not written: the user answered "decline".`, false},
		{"no capability", nil, "could not ask for confirmation, nothing written", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			os.Remove(filepath.Join(f.notes, "a.txt"))
			cs := f.connect(t, &mcp.ClientOptions{ElicitationHandler: tt.handler})
			res := call(t, cs, "toolbox_write_note", map[string]any{"name": "a.txt", "text": "hello"})
			if got := text(t, res); !strings.Contains(got, tt.want) {
				t.Errorf("write_note = %q, want %q", got, tt.want)
			}
			_, err := os.Stat(filepath.Join(f.notes, "a.txt"))
			if written := err == nil; written != tt.written {
				t.Errorf("note written = %v, want %v", written, tt.written)
			}
		})
	}
}

func TestConcurrentClientsShareNoState(t *testing.T) {
	f := newFixture(t)
	a, b := f.connect(t, nil), f.connect(t, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 20 {
		for _, cs := range []*mcp.ClientSession{a, b} {
			wg.Go(func() {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
					Name: "stateful_remember", Arguments: map[string]any{"value": fmt.Sprintf("secret-%d", i)}})
				if err != nil {
					errs <- err
					return
				}
				if got := res.Content[0].(*mcp.TextContent).Text; got != `calls=1 previous=""` {
					errs <- fmt.Errorf("remember = %q: state survived between calls", got)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestStructuredOutput(t *testing.T) {
	f := newFixture(t)
	cs := f.connect(t, nil)
	res := call(t, cs, "textkit_stats", map[string]any{"text": "a b"})
	b, _ := json.Marshal(res.StructuredContent)
	if string(b) != `{"bytes":3,"chars":3,"lines":1,"words":2}` {
		t.Errorf("structuredContent = %s", b)
	}
	list, _ := cs.ListTools(context.Background(), nil)
	for _, tool := range list.Tools {
		if tool.Name == "textkit_stats" && tool.OutputSchema == nil {
			t.Error("textkit_stats has no outputSchema in tools/list")
		}
	}
}

func TestSampling(t *testing.T) {
	f := newFixture(t)
	var got *mcp.CreateMessageParams
	cs := f.connect(t, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			got = r.Params
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &mcp.TextContent{Text: "A short summary."}}, nil
		},
	})
	res := call(t, cs, "toolbox_summarize", map[string]any{"text": "A long text about many things.", "max_words": 10})
	if res.IsError || text(t, res) != "A short summary." {
		t.Fatalf("summarize = %q (isError %v)", text(t, res), res.IsError)
	}
	if got == nil || got.MaxTokens != 40 || !strings.Contains(got.SystemPrompt, "at most 10 words") {
		t.Errorf("sampling request = %+v", got)
	}
	// A client without the sampling capability gets a clear tool error.
	plain := f.connect(t, nil)
	if res := call(t, plain, "toolbox_summarize", map[string]any{"text": "x"}); !res.IsError || !strings.Contains(text(t, res), "could not ask the client's model") {
		t.Errorf("summarize without sampling = %q", text(t, res))
	}
}
