package hostile_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/mcptest"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
)

// netSecret is injected by the operator into requests to the api origin: no guest
// and no log may ever show it.
const netSecret = "ghp_egress-e2e-7d1f0c2a"

// netTimeout is the plugins' time limit per request.
const netTimeout = 2 * time.Second

// netServers are the origins the egress tests reach, all on 127.0.0.1.
type netServers struct {
	api, other, tls *httptest.Server
	ca              string

	mu        sync.Mutex
	otherSaw  []string // the Authorization and X-Secret headers the other origin got
	apiSaw    []string // the Authorization header the api origin got
	slowStart chan struct{}
	slowGone  chan time.Time // when a slow request's connection went away
	gone      chan string    // the Authorization header of each request to /gone
}

func newNetServers(t *testing.T) *netServers {
	s := &netServers{slowStart: make(chan struct{}, 32), slowGone: make(chan time.Time, 32), gone: make(chan string, 32)}
	s.other = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.otherSaw = append(s.otherSaw, r.Header.Get("Authorization")+"|"+r.Header.Get("Cookie"))
		s.mu.Unlock()
		fmt.Fprint(w, "other origin")
	}))
	t.Cleanup(s.other.Close)
	otherPort := s.other.URL[strings.LastIndexByte(s.other.URL, ':')+1:]
	s.api = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.apiSaw = append(s.apiSaw, r.Header.Get("Authorization"))
		s.mu.Unlock()
		switch r.URL.Path {
		case "/hello":
			body, _ := io.ReadAll(r.Body)
			w.Header().Set("X-Reply", "yes")
			fmt.Fprintf(w, "hello %s %s", r.Method, body)
		case "/big":
			w.Write([]byte(strings.Repeat("x", 4096)))
		case "/slow":
			s.slowStart <- struct{}{}
			select {
			case <-r.Context().Done():
				s.slowGone <- time.Now()
			case <-time.After(30 * time.Second):
			}
		case "/gone":
			s.gone <- r.Method + " " + r.Header.Get("Authorization")
		case "/to-other":
			http.Redirect(w, r, "http://localhost:"+otherPort+"/landed", http.StatusFound)
		case "/to-metadata":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.api.Close)
	s.tls = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "tls %s", r.Proto)
	}))
	s.tls.EnableHTTP2 = true
	s.tls.StartTLS()
	t.Cleanup(s.tls.Close)
	s.ca = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(s.ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.tls.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *netServers) port(srv *httptest.Server) string {
	return srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
}

// netServer starts the binary with the fetcher guest twice, in a worker ("net") and
// trusted in process ("netin"), and the C guest cfetch ("cnet"), all granted the
// test's origins.
func netServer(t *testing.T, s *netServers) (*mcptest.Client, *testenv.SyncBuffer) {
	t.Helper()
	wasm := testenv.Path("testdata/wasm/fetcher.wasm")
	b, err := os.ReadFile(wasm)
	if err != nil {
		t.Fatal(err)
	}
	grants := fmt.Sprintf(`[plugins.net_limits]
max_response_bytes = 1024
timeout = %q

[[plugins.net]]
origins = ["http://127.0.0.1:%s"]
allow_addresses = ["127.0.0.1/32"]
headers = { Authorization = "Bearer ${MCPWH_EGRESS_TOKEN}" }

[[plugins.net]]
origins = ["http://localhost:%s"]
allow_addresses = ["127.0.0.1/32", "::1/128"]

[[plugins.net]]
origins = ["http://localhost:%s", "http://169.254.169.254", "http://10.0.0.5"]

[[plugins.net]]
origins = ["https://127.0.0.1:%s"]
allow_addresses = ["127.0.0.1"]
ca_file = %q
`, netTimeout, s.port(s.api), s.port(s.other), s.port(s.api), s.port(s.tls), s.ca)
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "[server]\ncache_dir = %q\n\n[tasks]\nstore = \"memory\"\n\n", testenv.CacheDir())
	cwasm := testenv.Path("testdata/wasm/cfetch.wasm")
	cb, err := os.ReadFile(cwasm)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct{ name, wasm, sha, extra string }{
		{"net", wasm, digest(b), `timeout = "20s"`}, {"netin", wasm, digest(b), "timeout = \"20s\"\ntrusted = true"},
		{"cnet", cwasm, digest(cb), `timeout = "20s"`},
		// The call's own time limit is shorter than the request's.
		{"netshort", wasm, digest(b), `timeout = "1s"`},
	} {
		g := grants
		if p.name == "netshort" {
			g = strings.Replace(grants, fmt.Sprintf("timeout = %q", netTimeout), `timeout = "30s"`, 1)
		}
		fmt.Fprintf(&cfg, "[[plugins]]\nname = %q\npath = %q\nsha256 = %q\n%s\n%s\n", p.name, p.wasm, p.sha, p.extra, g)
	}
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "--config", path)
	cmd.Env = append(os.Environ(), "MCPWH_EGRESS_TOKEN="+netSecret)
	stderr := &testenv.SyncBuffer{}
	cmd.Stderr = stderr
	c := mcptest.Dial(t, &mcp.CommandTransport{Command: cmd}, func(*jsonrpc.Request) (any, error) {
		return nil, errors.New("no")
	})
	return c, stderr
}

type fetched struct {
	Status  int                 `json:"status"`
	Headers map[string][]string `json:"headers"`
	Body    string              `json:"body"`
	Error   string              `json:"error"`
}

// fetch calls the plugin's fetch tool with one request and returns what the guest saw,
// and the raw text of the result.
func fetch(t *testing.T, c *mcptest.Client, plugin string, nethttp bool, req map[string]any) (fetched, string) {
	t.Helper()
	raw, err := c.Call(context.Background(), "tools/call", map[string]any{"name": plugin + "_fetch",
		"arguments": map[string]any{"requests": []any{req}, "nethttp": nethttp}})
	if err != nil {
		t.Fatalf("fetch %v: %v", req, err)
	}
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || len(res.Content) != 1 || res.IsError {
		t.Fatalf("fetch %v = %s, %v", req, raw, err)
	}
	var out []fetched
	if err := json.Unmarshal([]byte(res.Content[0].Text), &out); err != nil || len(out) != 1 {
		t.Fatalf("fetch %v: guest said %s", req, res.Content[0].Text)
	}
	return out[0], string(raw)
}

func TestEgress(t *testing.T) {
	s := newNetServers(t)
	c, stderr := netServer(t, s)
	api := "http://127.0.0.1:" + s.port(s.api)
	type tc struct {
		name   string
		req    map[string]any
		status int    // want this status
		body   string // and this body
		err    string // or an error holding this
	}
	cases := []tc{
		{name: "allowed", req: map[string]any{"method": "POST", "url": api + "/hello", "body": "hi"}, status: 200, body: "hello POST hi"},
		{name: "TLS with the CA file", req: map[string]any{"url": "https://127.0.0.1:" + s.port(s.tls) + "/"}, status: 200, body: "tls HTTP/2.0"},
		{name: "name resolving to loopback", req: map[string]any{"url": "http://localhost:" + s.port(s.api) + "/hello"}, err: "loopback address (127.0.0.0/8); allow it in [[plugins.net]]"},
		{name: "redirect to metadata", req: map[string]any{"url": api + "/to-metadata"}, err: "redirect from " + api + ": http://169.254.169.254 refused: cloud metadata address (169.254.169.254/32)"},
		{name: "response limit", req: map[string]any{"url": api + "/big"}, err: "the response body exceeds 1024 bytes"},
		{name: "slow server cut", req: map[string]any{"url": api + "/slow"}, err: "no answer within the time limit"},
		{name: "guest sets the injected header", req: map[string]any{"url": api + "/hello", "headers": map[string]string{"authorization": "Bearer mine"}}, err: "header Authorization is set by the operator"},
		{name: "unlisted origin", req: map[string]any{"url": "https://example.com/"}, err: "https://example.com refused: no [[plugins.net]] rule allows this origin"},
	}
	for _, u := range []string{"http://10.0.0.5/", "http://169.254.169.254/latest/meta-data/", "http://[::ffff:169.254.169.254]/",
		"http://[fd00:ec2::254]/", "http://[64:ff9b::a9fe:a9fe]/", "http://2130706433/", "http://0x7f.0.0.1/", "http://0177.0.0.1/", "http://127.1/"} {
		cases = append(cases, tc{name: "refused " + u, req: map[string]any{"url": u}, err: "refused: "})
	}
	var seen strings.Builder
	for _, plugin := range []string{"net", "netin"} {
		for _, nethttp := range []bool{false, true} {
			for _, tc := range cases {
				t.Run(fmt.Sprintf("%s/nethttp=%v/%s", plugin, nethttp, tc.name), func(t *testing.T) {
					got, raw := fetch(t, c, plugin, nethttp, tc.req)
					seen.WriteString(raw)
					if tc.err != "" {
						if got.Status != 0 || !strings.Contains(got.Error, tc.err) {
							t.Fatalf("fetch(%v) = %+v, want an error holding %q", tc.req["url"], got, tc.err)
						}
						return
					}
					if got.Status != tc.status || got.Body != tc.body || got.Error != "" {
						t.Fatalf("fetch(%v) = %+v, want %d %q", tc.req["url"], got, tc.status, tc.body)
					}
				})
			}
			t.Run(fmt.Sprintf("%s/nethttp=%v/cross-origin redirect drops credentials", plugin, nethttp), func(t *testing.T) {
				s.mu.Lock()
				before := len(s.otherSaw)
				s.mu.Unlock()
				got, raw := fetch(t, c, plugin, nethttp, map[string]any{"url": api + "/to-other", "headers": map[string]string{"Cookie": "session=1"}})
				seen.WriteString(raw)
				if got.Status != 200 || got.Body != "other origin" {
					t.Fatalf("fetch = %+v, want the other origin's answer", got)
				}
				s.mu.Lock()
				defer s.mu.Unlock()
				if saw := s.otherSaw[before:]; len(saw) != 1 || saw[0] != "|" {
					t.Fatalf("the other origin got credentials %q, want none", saw)
				}
			})
		}
	}
	// A request is made inside the call's time limit.
	t.Run("netshort/slow server cut at the call's deadline", func(t *testing.T) {
		start := time.Now()
		raw, err := c.Call(context.Background(), "tools/call", map[string]any{"name": "netshort_fetch",
			"arguments": map[string]any{"requests": []any{map[string]any{"url": api + "/slow"}}}})
		took := time.Since(start)
		if err != nil || !strings.Contains(string(raw), `plugin \"netshort\" was stopped: it exceeded its time limit of 1s`) {
			t.Fatalf("netshort_fetch(/slow) = %s, %v, want the call's time limit", raw, err)
		}
		if took > time.Second+generous {
			t.Errorf("the call took %v", took)
		}
	})

	// The C SDK's mcpwh_http.
	for _, tc := range []struct{ name, url, body, want string }{
		{"allowed", api + "/hello", "hi", "200 hello POST hi"},
		{"refused", "http://10.0.0.5/", "", "error: plugin cnet: http://10.0.0.5 refused: private address (10.0.0.0/8)"},
		{"redirect to metadata", api + "/to-metadata", "", "refused: cloud metadata address"},
	} {
		t.Run("cnet/"+tc.name, func(t *testing.T) {
			raw, err := c.Call(context.Background(), "tools/call", map[string]any{"name": "cnet_fetch",
				"arguments": map[string]any{"url": tc.url, "method": "POST", "body": tc.body}})
			seen.Write(raw)
			if err != nil || !strings.Contains(string(raw), tc.want) {
				t.Fatalf("cnet_fetch(%s) = %s, %v, want %q", tc.url, raw, err, tc.want)
			}
		})
	}

	s.mu.Lock()
	if !strings.Contains(strings.Join(s.apiSaw, ","), "Bearer "+netSecret) {
		t.Errorf("the api origin never got the injected header: %q", s.apiSaw)
	}
	s.mu.Unlock()
	// Everything a guest could read, and the server's log.
	if strings.Contains(seen.String(), netSecret) {
		t.Errorf("a guest saw the injected secret")
	}
	log := stderr.String()
	if strings.Contains(log, netSecret) {
		t.Errorf("the server log shows the injected secret")
	}
	for _, want := range []string{
		`msg=egress plugin=net tool=net_fetch method=POST origin=` + api + ` status=200 sent=2 received=13`,
		`msg=egress plugin=netin tool=netin_fetch method=GET origin=http://10.0.0.5 status=0 sent=0 received=0`,
		`denied_by=address err="plugin net: http://10.0.0.5 refused: private address (10.0.0.0/8); allow it in [[plugins.net]] allow_addresses"`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("server log lacks %q", want)
		}
	}
	if strings.Contains(log, "/hello") || strings.Contains(log, "/to-other") {
		t.Errorf("the audit line shows a path")
	}
}

// TestEgressCancel: tasks/cancel ends a request in flight, in a worker and in process.
func TestEgressCancel(t *testing.T) {
	s := newNetServers(t)
	c, stderr := netServer(t, s)
	for _, plugin := range []string{"net", "netin"} {
		t.Run(plugin, func(t *testing.T) {
			task := c.CreateTask(plugin+"_fetch", map[string]any{"requests": []any{map[string]any{"url": "http://127.0.0.1:" + s.port(s.api) + "/slow"}}},
				map[string]any{}, nil)
			select {
			case <-s.slowStart:
			case <-time.After(generous):
				t.Fatal("the request never reached the server")
			}
			start := time.Now()
			c.MustCall("tasks/cancel", map[string]any{"taskId": task.TaskID}, nil)
			select {
			case gone := <-s.slowGone:
				took := gone.Sub(start)
				t.Logf("%s: the request's connection closed %.1f ms after tasks/cancel was sent", plugin, ms(took))
				if took >= netTimeout {
					t.Errorf("the request ended after %v, at its own time limit, not at the cancel", took)
				}
			case <-time.After(generous):
				t.Fatal("the request went on after the cancel")
			}
			if got := c.Get(task.TaskID); got.Status != "cancelled" {
				t.Errorf("task = %s, want cancelled", got)
			}
			// The audit line names the task.
			want := "msg=egress plugin=" + plugin + " tool=" + plugin + "_fetch method=GET origin=http://127.0.0.1:" + s.port(s.api)
			if !eventually(func() bool {
				for _, l := range strings.Split(stderr.String(), "\n") {
					if strings.Contains(l, want) && strings.Contains(l, "task="+task.TaskID) {
						return true
					}
				}
				return false
			}) {
				t.Errorf("no audit line %q with task=%s", want, task.TaskID)
			}
		})
	}
}

// TestEgressOnCancelSync: a synchronous call cancelled by its client
// (notifications/cancelled) makes the request its guest registered with
// "http_on_cancel", with the operator's header injected, in a worker and in process;
// a registration the policy refuses fails the call with the rule's message.
func TestEgressOnCancelSync(t *testing.T) {
	s := newNetServers(t)
	c, stderr := netServer(t, s)
	api := "http://127.0.0.1:" + s.port(s.api)
	for i, plugin := range []string{"net", "netin"} {
		t.Run(plugin, func(t *testing.T) {
			id := 1000 + i
			jid, _ := jsonrpc.MakeID(float64(id))
			params, _ := json.Marshal(map[string]any{"name": plugin + "_fetch", "arguments": map[string]any{
				"requests":  []any{map[string]any{"url": api + "/slow"}},
				"on_cancel": map[string]any{"method": "DELETE", "url": api + "/gone"}}})
			if err := c.Conn.Write(context.Background(), &jsonrpc.Request{ID: jid, Method: "tools/call", Params: params}); err != nil {
				t.Fatal(err)
			}
			select {
			case <-s.slowStart:
			case <-time.After(generous):
				t.Fatal("the guest's slow request never arrived")
			}
			select {
			case got := <-s.gone:
				t.Fatalf("%s arrived before the call was cancelled", got)
			default:
			}
			start := time.Now()
			cancelled, _ := json.Marshal(map[string]any{"requestId": id})
			if err := c.Conn.Write(context.Background(), &jsonrpc.Request{Method: "notifications/cancelled", Params: cancelled}); err != nil {
				t.Fatal(err)
			}
			select {
			case got := <-s.gone:
				if got != "DELETE Bearer "+netSecret {
					t.Errorf("on-cancel request = %q, want DELETE with the operator's Authorization", got)
				}
				t.Logf("%s: DELETE /gone arrived %v after notifications/cancelled", plugin, time.Since(start).Round(time.Millisecond))
			case <-time.After(generous):
				t.Fatalf("no on-cancel request within %v of notifications/cancelled", generous)
			}
			if !eventually(func() bool { return strings.Contains(stderr.String(), "on_cancel=true") }) {
				t.Errorf("no audit line with on_cancel=true in the log")
			}
		})
	}

	t.Run("refused", func(t *testing.T) {
		text, isError := toolText(t, c, "net_fetch", map[string]any{"requests": []any{},
			"on_cancel": map[string]any{"method": "DELETE", "url": "http://10.0.0.5/jobs/1"}})
		if !isError || !strings.Contains(text, "on_cancel: plugin net: http://10.0.0.5 refused: private address (10.0.0.0/8)") {
			t.Errorf("fetch with a refused on_cancel = %q (isError %v), want the rule's message", text, isError)
		}
	})
}
