package host_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/host"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/mcptest"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// featureServer serves the conformance fixture (unprefixed, as conformance/config.toml
// does) and the echo guest, whose every answer is malformed.
type featureServer struct {
	srv *host.Server
	url string
}

var features struct {
	once    sync.Once
	catalog *plugins.Catalog
	err     error
}

func newFeatureServer(t *testing.T) *featureServer {
	t.Helper()
	return newFeatureServerWith(t, host.Options{ResumableStreams: true})
}

func newFeatureServerWith(t *testing.T, opts host.Options) *featureServer {
	t.Helper()
	features.once.Do(func() {
		ctx := context.Background()
		e, err := sandbox.NewEngine(ctx, sandbox.Options{CacheDir: testenv.CacheDir()})
		if err != nil {
			features.err = err
			return
		}
		fx := testenv.Spec(t, "fixture", "conformance/fixture/fixture.wasm")
		fx.Unprefixed = true
		var loaded []*plugins.Plugin
		for _, s := range []plugins.Spec{fx, testenv.Spec(t, "echo", "testdata/wasm/echo.wasm")} {
			p, err := plugins.Load(ctx, e, s)
			if err != nil {
				features.err = err
				return
			}
			loaded = append(loaded, p)
		}
		features.catalog, features.err = plugins.NewCatalog(loaded)
	})
	if features.err != nil {
		t.Fatal(features.err)
	}
	srv, err := host.New(features.catalog, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	hs := httptest.NewServer(srv.HTTPHandler())
	t.Cleanup(hs.Close)
	return &featureServer{srv: srv, url: hs.URL + "/mcp"}
}

func (f *featureServer) stream(t *testing.T) mcp.Transport {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := f.srv.Connect(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	return ct
}

// bothTransports runs test over an in-memory stream (served as stdio is) and over
// Streamable HTTP.
func bothTransports(t *testing.T, test func(t *testing.T, f *featureServer, dial func() *mcptest.Client)) {
	f := newFeatureServer(t)
	t.Run("stream", func(t *testing.T) {
		test(t, f, func() *mcptest.Client { return mcptest.Dial(t, f.stream(t), nil) })
	})
	t.Run("http", func(t *testing.T) {
		test(t, f, func() *mcptest.Client {
			return mcptest.Dial(t, &mcp.StreamableClientTransport{Endpoint: f.url}, nil)
		})
	})
}

func TestResourcesPromptsCompletions(t *testing.T) {
	bothTransports(t, func(t *testing.T, f *featureServer, dial func() *mcptest.Client) {
		c := dial()
		var init struct {
			Capabilities map[string]json.RawMessage `json:"capabilities"`
		}
		json.Unmarshal(c.Init, &init)
		for name, want := range map[string]string{"resources": `{"subscribe":true}`, "prompts": `{}`, "completions": `{}`, "logging": `{}`} {
			if got := string(init.Capabilities[name]); got != want {
				t.Errorf("capabilities.%s = %s, want %s", name, got, want)
			}
		}

		var list struct {
			Resources []struct{ URI, Name, MimeType string } `json:"resources"`
		}
		c.MustCall("resources/list", map[string]any{}, &list)
		var uris []string
		for _, r := range list.Resources {
			uris = append(uris, r.URI)
		}
		if got := strings.Join(uris, " "); got != "test://echo test://static-binary test://static-text test://watched-resource" {
			t.Errorf("resources/list = %s", got)
		}
		var tl struct {
			ResourceTemplates []struct{ URITemplate string } `json:"resourceTemplates"`
		}
		c.MustCall("resources/templates/list", map[string]any{}, &tl)
		if len(tl.ResourceTemplates) != 2 || tl.ResourceTemplates[1].URITemplate != "test://template/{id}/data" {
			t.Errorf("resources/templates/list = %+v", tl)
		}

		var read struct {
			Contents json.RawMessage `json:"contents"`
		}
		c.MustCall("resources/read", map[string]any{"uri": "test://template/42/data"}, &read)
		if want := `[{"uri":"test://template/42/data","mimeType":"application/json","text":"{\"data\":\"Data for ID: 42\",\"id\":\"42\",\"templateTest\":true}"}]`; string(read.Contents) != want {
			t.Errorf("resources/read(template) = %s, want %s", read, want)
		}
		if e := c.CallErr("resources/read", map[string]any{"uri": "test://nowhere"}); e.Code != jsonrpc.CodeInvalidParams || !strings.Contains(e.Message, "not found") {
			t.Errorf("resources/read(unknown) = %v, want -32602 not found", e)
		}

		var prompts struct {
			Prompts []struct {
				Name      string
				Arguments []struct {
					Name     string
					Required bool
				}
			} `json:"prompts"`
		}
		c.MustCall("prompts/list", map[string]any{}, &prompts)
		if len(prompts.Prompts) != 5 || prompts.Prompts[1].Name != "test_prompt_with_arguments" || len(prompts.Prompts[1].Arguments) != 2 || !prompts.Prompts[1].Arguments[0].Required {
			t.Errorf("prompts/list = %+v", prompts)
		}
		var got json.RawMessage
		c.MustCall("prompts/get", map[string]any{"name": "test_prompt_with_embedded_resource", "arguments": map[string]string{"resourceUri": "test://x"}}, &got)
		if want := `{"messages":[{"content":{"type":"resource","resource":{"uri":"test://x","mimeType":"text/plain","text":"Embedded resource content for testing."}},"role":"user"},{"content":{"type":"text","text":"Please process the embedded resource above."},"role":"user"}]}`; string(got) != want {
			t.Errorf("prompts/get = %s, want %s", got, want)
		}
		for _, args := range []map[string]string{{"arg1": "a"}, {"arg1": "a", "arg2": "b", "x": "c"}} {
			if e := c.CallErr("prompts/get", map[string]any{"name": "test_prompt_with_arguments", "arguments": args}); e.Code != jsonrpc.CodeInvalidParams {
				t.Errorf("prompts/get(%v) = %v, want -32602", args, e)
			}
		}
		if e := c.CallErr("prompts/get", map[string]any{"name": "nope"}); e == nil {
			t.Error("prompts/get(unknown) succeeded")
		}

		var comp struct {
			Completion struct {
				Values []string
				Total  int
			}
		}
		c.MustCall("completion/complete", map[string]any{"ref": map[string]string{"type": "ref/prompt", "name": "test_prompt_with_arguments"},
			"argument": map[string]string{"name": "arg1", "value": "par"}}, &comp)
		if strings.Join(comp.Completion.Values, ",") != "paris,park,party" || comp.Completion.Total != 3 {
			t.Errorf("completion/complete(arg1, par) = %+v", comp)
		}
		c.MustCall("completion/complete", map[string]any{"ref": map[string]string{"type": "ref/resource", "uri": "test://template/{id}/data"},
			"argument": map[string]string{"name": "id", "value": "1"}}, &comp)
		if strings.Join(comp.Completion.Values, ",") != "1,12,123" {
			t.Errorf("completion/complete(id, 1) = %+v", comp)
		}
		for _, p := range []map[string]any{
			{"ref": map[string]string{"type": "ref/prompt", "name": "nope"}, "argument": map[string]string{"name": "a", "value": ""}},
			{"ref": map[string]string{"type": "ref/prompt", "name": "test_simple_prompt"}, "argument": map[string]string{"name": "a", "value": ""}},
			{"ref": map[string]string{"type": "ref/resource", "uri": "test://static-text"}, "argument": map[string]string{"name": "a", "value": ""}},
		} {
			if e := c.CallErr("completion/complete", p); e.Code != jsonrpc.CodeInvalidParams {
				t.Errorf("completion/complete(%v) = %v, want -32602", p, e)
			}
		}
	})
}

// A plugin that answers with a malformed result fails that request with a message
// that names it; the server keeps serving.
func TestMalformedFeatureResultsOverMCP(t *testing.T) {
	bothTransports(t, func(t *testing.T, f *featureServer, dial func() *mcptest.Client) {
		c := dial()
		for method, params := range map[string]any{
			"resources/read":      map[string]any{"uri": "test://echo/1"},
			"prompts/get":         map[string]any{"name": "echo_echo", "arguments": map[string]string{"text": "x"}},
			"completion/complete": map[string]any{"ref": map[string]string{"type": "ref/prompt", "name": "echo_echo"}, "argument": map[string]string{"name": "text", "value": ""}},
		} {
			e := c.CallErr(method, params)
			if e.Code != jsonrpc.CodeInternalError || !strings.Contains(e.Message, `plugin "echo" answered `+method+` with a malformed result`) {
				t.Errorf("%s = %v, want -32603 naming the plugin", method, e)
			}
		}
		var res struct {
			IsError bool
			Content []struct{ Text string }
		}
		c.MustCall("tools/call", map[string]any{"name": "echo_echo", "arguments": map[string]any{}}, &res)
		if !res.IsError || !strings.Contains(res.Content[0].Text, "content is required") {
			t.Errorf("tools/call(echo_echo) = %+v, want isError saying content is required", res)
		}
		c.MustCall("resources/read", map[string]any{"uri": "test://static-text"}, nil)
	})
}

// waitNotes waits until c has seen at least n notifications of method.
func waitNotes(t *testing.T, c *mcptest.Client, method string, n int) []*jsonrpc.Request {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := c.NotificationsOf(method)
		if len(got) >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestResourceSubscriptions(t *testing.T) {
	f := newFeatureServer(t)
	sub := mcptest.Dial(t, f.stream(t), nil)
	other := mcptest.Dial(t, &mcp.StreamableClientTransport{Endpoint: f.url}, nil)
	sub.MustCall("resources/subscribe", map[string]any{"uri": "test://watched-resource"}, nil)
	sub.MustCall("resources/subscribe", map[string]any{"uri": "test://template/7/data"}, nil)
	if e := sub.CallErr("resources/subscribe", map[string]any{"uri": "test://nowhere"}); e.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("resources/subscribe(unknown) = %v, want -32602", e)
	}

	// The other client's tool call announces changes; only the subscriber hears.
	announce := func(uri string) string {
		var res struct {
			IsError bool
			Content []struct{ Text string }
		}
		other.MustCall("tools/call", map[string]any{"name": "test_resource_updated", "arguments": map[string]string{"uri": uri}}, &res)
		return res.Content[0].Text
	}
	announce("test://watched-resource")
	announce("test://template/7/data")
	got := waitNotes(t, sub, "notifications/resources/updated", 2)
	if len(got) != 2 || !strings.Contains(string(got[0].Params), "test://watched-resource") || !strings.Contains(string(got[1].Params), "test://template/7/data") {
		t.Fatalf("subscriber got %d updates, want 2 in order", len(got))
	}
	if n := len(other.NotificationsOf("notifications/resources/updated")); n != 0 {
		t.Errorf("a client that did not subscribe got %d updates", n)
	}
	// A plugin may announce only its own resources.
	if text := announce("test://echo"); !strings.Contains(text, `"test://echo" is not a resource of this plugin`) {
		t.Errorf("announcing another plugin's resource: %q", text)
	}

	sub.MustCall("resources/unsubscribe", map[string]any{"uri": "test://watched-resource"}, nil)
	announce("test://watched-resource")
	announce("test://template/7/data") // still subscribed: a marker that the earlier one was sent
	got = waitNotes(t, sub, "notifications/resources/updated", 3)
	if len(got) != 3 || !strings.Contains(string(got[2].Params), "test://template/7/data") {
		t.Errorf("after unsubscribe: %d updates, last %s; want 3, the last for the template", len(got), got[len(got)-1].Params)
	}
}

// Guest log lines reach the client at or above the level it set.
func TestGuestLoggingLevel(t *testing.T) {
	bothTransports(t, func(t *testing.T, f *featureServer, dial func() *mcptest.Client) {
		for _, tc := range []struct {
			level string
			want  int
		}{{"debug", 3}, {"info", 3}, {"warning", 0}} {
			c := dial()
			c.MustCall("logging/setLevel", map[string]any{"level": tc.level}, nil)
			c.MustCall("tools/call", map[string]any{"name": "test_tool_with_logging", "arguments": map[string]any{}}, nil)
			// The tool's own three lines come before its result on every transport.
			if got := c.NotificationsOf("notifications/message"); len(got) != tc.want {
				t.Errorf("level %s: %d log notifications, want %d", tc.level, len(got), tc.want)
			}
		}
	})
}

// sseEvent is one server-sent event.
type sseEvent struct {
	id, event, data, retry string
}

// readEvents reads SSE events until the stream ends.
func readEvents(r io.Reader) []sseEvent {
	var out []sseEvent
	var e sseEvent
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			out = append(out, e)
			e = sseEvent{}
			continue
		}
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimPrefix(v, " ")
		switch k {
		case "id":
			e.id = v
		case "event":
			e.event = v
		case "data":
			e.data += v
		case "retry":
			e.retry = v
		}
	}
	return out
}

// rawHTTP returns a POST helper and a function that opens an initialized session of
// a protocol version, for tests that read the SSE events themselves.
func rawHTTP(t *testing.T, url string) (post func(session, version, body string) *http.Response, open func(version string) string) {
	post = func(session, version, body string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		if version != "" {
			req.Header.Set("Mcp-Protocol-Version", version)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	open = func(version string) string {
		resp := post("", "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		session := resp.Header.Get("Mcp-Session-Id")
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		post(session, version, `{"jsonrpc":"2.0","method":"notifications/initialized"}`).Body.Close()
		return session
	}
	return post, open
}

// By default streams are not resumable: no priming event, and a guest's
// close_stream is unavailable, so the result comes on the POST stream.
func TestStreamsNotResumableByDefault(t *testing.T) {
	f := newFeatureServerWith(t, host.Options{})
	post, open := rawHTTP(t, f.url)
	session := open("2025-11-25")
	resp := post(session, "2025-11-25", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_reconnection","arguments":{}}}`)
	events := readEvents(resp.Body)
	resp.Body.Close()
	for _, e := range events {
		if e.id != "" || e.retry != "" {
			t.Errorf("event %+v has an id or retry hint on a server without resumable streams", e)
		}
	}
	if len(events) == 0 || !strings.Contains(events[len(events)-1].data, "Reconnection test completed successfully") {
		t.Errorf("events %+v, want the result on the POST stream", events)
	}
}

// A tool that closes its stream (close_stream) still gets its result to the client:
// the first SSE event primes an id, the closing one carries a retry hint, and a GET
// with Last-Event-ID replays the result. An older MCP-Protocol-Version header on the
// session's request does not turn that off.
func TestCloseStreamAndResume(t *testing.T) {
	f := newFeatureServer(t)
	post, open := rawHTTP(t, f.url)
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_reconnection","arguments":{}}}`

	// Before 2025-11-25 a stream cannot be resumed, so it is never closed early.
	old := open("2025-06-18")
	resp := post(old, "2025-06-18", call)
	events := readEvents(resp.Body)
	resp.Body.Close()
	if len(events) == 0 || !strings.Contains(events[len(events)-1].data, "Reconnection test completed successfully") {
		t.Errorf("2025-06-18 session: events %+v, want the result on the POST stream", events)
	}

	session := open("2025-11-25")
	resp = post(session, "2025-03-26", call)
	events = readEvents(resp.Body)
	resp.Body.Close()
	if len(events) < 2 || events[0].id == "" || strings.TrimSpace(events[0].data) != "" {
		t.Fatalf("POST stream events = %+v, want a priming event (id, empty data) first", events)
	}
	last := events[len(events)-1]
	if last.retry != "500" {
		t.Errorf("last event = %+v, want retry 500 (the guest's close_stream)", last)
	}
	lastID := ""
	for _, e := range events {
		if strings.Contains(e.data, `"id":1`) {
			t.Fatalf("the result came on the closed stream: %+v", e)
		}
		if e.id != "" {
			lastID = e.id
		}
	}

	req, _ := http.NewRequest(http.MethodGet, f.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Last-Event-ID", lastID)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "data:") && strings.Contains(line, `"id":1`) {
			if !strings.Contains(line, "Reconnection test completed successfully") {
				t.Errorf("replayed result = %s", line)
			}
			return
		}
	}
	t.Fatalf("GET with Last-Event-ID %q ended without the tool's result: %v", lastID, sc.Err())
}

// Over a stream there is no HTTP response to close: close_stream is unavailable and
// the call completes as usual.
func TestCloseStreamUnavailableOnStdio(t *testing.T) {
	f := newFeatureServer(t)
	c := mcptest.Dial(t, f.stream(t), nil)
	c.MustCall("logging/setLevel", map[string]any{"level": "debug"}, nil)
	var res struct {
		Content []struct{ Text string }
	}
	c.MustCall("tools/call", map[string]any{"name": "test_reconnection", "arguments": map[string]any{}}, &res)
	if !strings.Contains(res.Content[0].Text, "completed successfully") {
		t.Errorf("result = %+v", res)
	}
	logs := c.NotificationsOf("notifications/message")
	if len(logs) != 1 || !strings.Contains(string(logs[0].Params), "stream not closed: the client cannot be asked") {
		t.Errorf("logs = %d, want the guest's note that close_stream was unavailable", len(logs))
	}
}
