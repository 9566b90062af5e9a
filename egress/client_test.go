package egress

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// names is a resolver the test controls.
type names map[string][]netip.Addr

func (n names) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := n[host]; ok {
		return a, nil
	}
	return nil, fmt.Errorf("no such host %s", host)
}

const secret = "s3cr3t-t0k3n-do-not-leak"

// seen records what a test server received.
type seen struct {
	mu   sync.Mutex
	auth []string
}

func (s *seen) add(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.auth = append(s.auth, r.Header.Get("Authorization")+"|"+r.Header.Get("X-Api-Key")+"|"+r.Header.Get("Cookie"))
}

func (s *seen) all() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.auth, ",")
}

func port(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	return srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
}

func params(t *testing.T, r Request) []byte {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDo(t *testing.T) {
	var other seen
	otherSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		other.add(r)
		fmt.Fprint(w, "other")
	}))
	defer otherSrv.Close()
	var main seen
	mainSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		main.add(r)
		switch r.URL.Path {
		case "/hello":
			w.Header().Set("X-Reply", "yes")
			body, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, "hello %s %s", r.Method, body)
		case "/big":
			w.Write(bytes.Repeat([]byte("x"), 2048))
		case "/slow":
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		case "/to-other":
			http.Redirect(w, r, "http://other.test:"+port(t, otherSrv)+"/landed", http.StatusFound)
		case "/to-private":
			http.Redirect(w, r, "http://10.0.0.5/", http.StatusFound)
		case "/to-metadata":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/to-hello":
			http.Redirect(w, r, "/hello", http.StatusSeeOther)
		default:
			http.NotFound(w, r)
		}
	}))
	defer mainSrv.Close()
	mp, op := port(t, mainSrv), port(t, otherSrv)
	loop := []string{"127.0.0.1/32"}
	res := names{
		"api.test":      {netip.MustParseAddr("127.0.0.1")},
		"other.test":    {netip.MustParseAddr("127.0.0.1")},
		"internal.test": {netip.MustParseAddr("10.0.0.5")},
		"mapped.test":   {netip.MustParseAddr("::ffff:169.254.169.254")},
	}
	var logBuf bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logBuf}, nil))
	c, err := New("jobs", Policy{
		Rules: []Rule{
			{Origins: []string{"http://api.test:" + mp}, AllowAddresses: loop,
				Headers: map[string]string{"Authorization": "Bearer " + secret}},
			{Origins: []string{"http://other.test:" + op}, AllowAddresses: loop},
			{Origins: []string{"http://internal.test:" + mp, "http://mapped.test:" + mp, "http://127.0.0.1:" + mp}},
			{Origins: []string{"http://10.0.0.5", "http://169.254.169.254"}},
			{Origins: []string{"http://*.wild.test:" + mp}, Methods: []string{"GET"}, PathPrefixes: []string{"/hello"}, AllowAddresses: loop},
		},
		Limits: Limits{MaxResponseBytes: 1024, Timeout: 300 * time.Millisecond, MaxPerCall: 3},
	}, &Options{Logger: logger, Resolver: names(mapsAdd(res, map[string][]netip.Addr{"a.wild.test": {netip.MustParseAddr("127.0.0.1")}}))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	api := "http://api.test:" + mp
	for _, tc := range []struct {
		name   string
		req    Request
		seq    int
		status int    // want a reply with this status
		body   string // and this body
		err    string // or an error holding this
	}{
		{name: "allowed", req: Request{Method: "POST", URL: api + "/hello", Body: base64.StdEncoding.EncodeToString([]byte("hi"))}, status: 200, body: "hello POST hi"},
		{name: "303 to GET", req: Request{Method: "POST", URL: api + "/to-hello", Body: "aGk="}, status: 200, body: "hello GET "},
		{name: "unlisted origin", req: Request{URL: "http://example.com/"}, err: "no [[plugins.net]] rule allows"},
		{name: "loopback not allowed", req: Request{URL: "http://127.0.0.1:" + mp + "/hello"}, err: "loopback address (127.0.0.0/8)"},
		{name: "private literal", req: Request{URL: "http://10.0.0.5/"}, err: "private address (10.0.0.0/8); allow it in [[plugins.net]]"},
		{name: "metadata literal", req: Request{URL: "http://169.254.169.254/"}, err: "cloud metadata"},
		{name: "name to private", req: Request{URL: "http://internal.test:" + mp + "/"}, err: "internal.test (10.0.0.5) refused: private address"},
		{name: "name to mapped metadata", req: Request{URL: "http://mapped.test:" + mp + "/"}, err: "mapped.test (169.254.169.254) refused: cloud metadata address (169.254.169.254/32)"},
		{name: "redirect to private", req: Request{URL: api + "/to-private"}, err: "redirect from http://api.test:" + mp + ": http://10.0.0.5 refused: private"},
		{name: "redirect to metadata", req: Request{URL: api + "/to-metadata"}, err: "cloud metadata"},
		{name: "redirect loop", req: Request{URL: api + "/loop"}, err: "more than 5 redirects"},
		{name: "response limit", req: Request{URL: api + "/big"}, err: "exceeds 1024 bytes"},
		{name: "slow server", req: Request{URL: api + "/slow"}, err: "no answer within the time limit"},
		{name: "injected header", req: Request{URL: api + "/hello", Headers: map[string]string{"authorization": "mine"}}, err: "header Authorization is set by the operator"},
		{name: "host header", req: Request{URL: api + "/hello", Headers: map[string]string{"Host": "x"}}, err: "may not set header Host"},
		{name: "per call", req: Request{URL: api + "/hello"}, seq: 4, err: "more than 3 requests"},
		{name: "numeric host", req: Request{URL: "http://2130706433:" + mp + "/"}, err: "non-canonical numeric"},
		{name: "wildcard", req: Request{URL: "http://a.wild.test:" + mp + "/hello"}, status: 200, body: "hello GET "},
		{name: "wildcard method", req: Request{Method: "POST", URL: "http://a.wild.test:" + mp + "/hello"}, err: "method POST is not allowed"},
		{name: "wildcard path", req: Request{URL: "http://a.wild.test:" + mp + "/big"}, err: "path is not under"},
		{name: "wildcard dot segment", req: Request{URL: "http://a.wild.test:" + mp + "/hello/../big"}, err: "path is not under"},
		{name: "wildcard bare suffix", req: Request{URL: "http://wild.test:" + mp + "/hello"}, err: "no [[plugins.net]] rule"},
		{name: "bad body", req: Request{URL: api + "/hello", Body: "%%"}, err: "not standard base64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seq := tc.seq
			if seq == 0 {
				seq = 1
			}
			out, err := c.Do(context.Background(), Call{Tool: "t", Seq: seq}, params(t, tc.req))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Do(%s) = %s, %v, want an error holding %q", tc.req.URL, out, err, tc.err)
				}
				if !strings.HasPrefix(err.Error(), "plugin jobs: ") {
					t.Errorf("error %q does not name the plugin", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Do(%s): %v", tc.req.URL, err)
			}
			var r Reply
			if err := json.Unmarshal(out, &r); err != nil {
				t.Fatal(err)
			}
			body, _ := base64.StdEncoding.DecodeString(r.Body)
			if r.Status != tc.status || string(body) != tc.body {
				t.Fatalf("Do(%s) = %d %q, want %d %q", tc.req.URL, r.Status, body, tc.status, tc.body)
			}
		})
	}

	t.Run("seen origins", func(t *testing.T) {
		for _, tc := range []struct {
			url  string
			want []string
		}{
			{api + "/to-other", []string{api, "http://other.test:" + op}},
			{api + "/to-private", []string{api, "http://10.0.0.5"}},
			{"http://example.com/x", []string{"http://example.com"}},
		} {
			var got []string
			c.Do(context.Background(), Call{Seq: 1, Seen: func(o string) { got = append(got, o) }}, params(t, Request{URL: tc.url}))
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("Do(%s) told Seen %q, want %q", tc.url, got, tc.want)
			}
		}
		got := 0
		c.Do(context.Background(), Call{Seq: 1, Seen: func(string) { got++ }}, []byte(`{"url":`))
		if got != 0 {
			t.Errorf("malformed params told Seen %d origins, want none", got)
		}
	})

	t.Run("cross-origin redirect drops credentials", func(t *testing.T) {
		before := len(other.all())
		out, err := c.Do(context.Background(), Call{Seq: 1}, params(t, Request{URL: api + "/to-other",
			Headers: map[string]string{"X-Api-Key": "guest-key", "Cookie": "c=1"}}))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), base64.StdEncoding.EncodeToString([]byte("other"))) {
			t.Fatalf("reply %s did not reach the other origin", out)
		}
		got := other.all()[before:]
		if strings.Contains(got, secret) || strings.Contains(got, "c=1") {
			t.Fatalf("the other origin got credentials: %q", got)
		}
		if !strings.Contains(main.all(), "Bearer "+secret) {
			t.Fatalf("the first origin did not get the injected header: %q", main.all())
		}
	})

	logMu.Lock()
	log := logBuf.String()
	logMu.Unlock()
	if strings.Contains(log, secret) {
		t.Errorf("the log holds the secret:\n%s", log)
	}
	for _, want := range []string{"msg=egress plugin=jobs tool=t method=POST origin=http://api.test:" + mp + " status=200 sent=2", "denied_by=address"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, "/hello") {
		t.Errorf("the audit line shows a path:\n%s", log)
	}
}

func mapsAdd(a, b map[string][]netip.Addr) map[string][]netip.Addr {
	for k, v := range b {
		a[k] = v
	}
	return a
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.Proto)
	}))
	defer srv.Close()
	srv.EnableHTTP2 = true
	ca := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(ca, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	p := port(t, srv)
	res := names{"example.com": {netip.MustParseAddr("127.0.0.1")}}
	for _, tc := range []struct {
		name, ca, err string
	}{
		{"with the CA file", ca, ""},
		{"system roots", "", "certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New("web", Policy{Rules: []Rule{{Origins: []string{"https://example.com:" + p}, AllowAddresses: []string{"127.0.0.1"}, CAFile: tc.ca}}},
				&Options{Resolver: res, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			out, err := c.Do(context.Background(), Call{Seq: 1}, params(t, Request{URL: "https://example.com:" + p + "/"}))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Do = %s, %v, want an error holding %q", out, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(out), `"status":200`) {
				t.Fatalf("Do = %s", out)
			}
		})
	}
}

func TestNewRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule Rule
		err  string
	}{
		{"no origins", Rule{}, "no origins"},
		{"bad scheme", Rule{Origins: []string{"ftp://x.com"}}, "want http:// or https://"},
		{"bad port", Rule{Origins: []string{"http://x.com:http"}}, "bad port"},
		{"numeric host", Rule{Origins: []string{"http://0x7f.1"}}, "non-canonical"},
		{"bad method", Rule{Origins: []string{"http://x.com"}, Methods: []string{"get"}}, "upper-case"},
		{"bad prefix", Rule{Origins: []string{"http://x.com"}, PathPrefixes: []string{"api"}}, "does not start with /"},
		{"bad address", Rule{Origins: []string{"http://x.com"}, AllowAddresses: []string{"localhost"}}, "not an address"},
		{"host header", Rule{Origins: []string{"http://x.com"}, Headers: map[string]string{"Host": "y"}}, `header "Host" may not be injected`},
		{"newline", Rule{Origins: []string{"http://x.com"}, Headers: map[string]string{"X-Key": secret + "\n"}}, "line break"},
		{"ca file", Rule{Origins: []string{"http://x.com"}, CAFile: "/nonexistent/ca.pem"}, "ca_file"},
		{"secrets for any host", Rule{Origins: []string{"https://*"}, Headers: map[string]string{"Authorization": secret}}, "names every host: it may not carry injected headers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New("p", Policy{Rules: []Rule{tc.rule}}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), secret) {
				t.Fatalf("New = %v, want an error holding %q (and no secret)", err, tc.err)
			}
		})
	}
}

func FuzzDecodeRequest(f *testing.F) {
	f.Add([]byte(`{"method":"GET","url":"https://example.com/","headers":{"A":"b"},"body":"aGk="}`))
	f.Add([]byte(`{"url":"http://[::1]/","body":""}`))
	f.Add([]byte(`{"url":"x","extra":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, body, err := DecodeRequest(b)
		if err != nil {
			return
		}
		if !validMethod(r.Method) || r.URL == "" {
			t.Fatalf("accepted %q", b)
		}
		for k, v := range r.Headers {
			if !validToken(k) || strings.ContainsAny(v, "\r\n\x00") {
				t.Fatalf("accepted header %q: %q", k, v)
			}
		}
		_ = body
		_, _ = parseTarget(r.URL)
	})
}

// TestLimits: the plugin's concurrent requests and the request body are bounded.
func TestLimits(t *testing.T) {
	var mu sync.Mutex
	inFlight, most := 0, 0
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		<-release
		mu.Lock()
		inFlight--
		mu.Unlock()
	}))
	defer srv.Close()
	c, err := New("p", Policy{Rules: []Rule{{Origins: []string{srv.URL}, AllowAddresses: []string{"127.0.0.1"}}},
		Limits: Limits{MaxConcurrent: 2, MaxRequestBytes: 4}}, &Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	_, err = c.Do(context.Background(), Call{Seq: 1}, params(t, Request{Method: "POST", URL: srv.URL, Body: base64.StdEncoding.EncodeToString([]byte("12345"))}))
	if err == nil || !strings.Contains(err.Error(), "the request body of 5 bytes exceeds 4") {
		t.Fatalf("Do(5-byte body) = %v, want refused over max_request_bytes", err)
	}

	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			if _, err := c.Do(context.Background(), Call{Seq: 1}, params(t, Request{URL: srv.URL})); err != nil {
				t.Error(err)
			}
		})
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		n := most
		mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
	}
	time.Sleep(50 * time.Millisecond) // a third request, were it let through, arrives now
	close(release)
	wg.Wait()
	if most != 2 {
		t.Fatalf("at most %d requests were in flight, want 2 (MaxConcurrent)", most)
	}
}

// TestAnyHost: an origin of "*" matches every name, and the address it resolves to is
// still checked: loopback and private stay refused unless allow_addresses lifts them.
func TestAnyHost(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer srv.Close()
	p := port(t, srv)
	res := names{"anything.test": {netip.MustParseAddr("127.0.0.1")}, "inside.test": {netip.MustParseAddr("10.1.2.3")}}
	for _, tc := range []struct {
		name  string
		allow []string
		url   string
		err   string // "" wants 200 "ok"
	}{
		{"any name, loopback refused", nil, "http://anything.test:" + p + "/", "loopback"},
		{"any name, private refused", nil, "http://inside.test:" + p + "/", "private address"},
		{"any name, loopback allowed", []string{"127.0.0.1/32"}, "http://anything.test:" + p + "/", ""},
		{"another scheme", []string{"127.0.0.1/32"}, "https://anything.test:" + p + "/", "no [[plugins.net]] rule"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New("web", Policy{Rules: []Rule{{Origins: []string{"http://*:" + p}, AllowAddresses: tc.allow}}}, &Options{Resolver: res})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			out, err := c.Do(context.Background(), Call{Tool: "fetch", Seq: 1}, params(t, Request{URL: tc.url}))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Do(%s) = %s, %v, want an error holding %q", tc.url, out, err, tc.err)
				}
				return
			}
			var r Reply
			if err != nil || json.Unmarshal(out, &r) != nil || r.Status != 200 {
				t.Fatalf("Do(%s) = %s, %v, want 200", tc.url, out, err)
			}
		})
	}
}

// TestCheck: Check ("http_on_cancel" at registration) refuses what Do would refuse,
// with the same error, and sends nothing; Do with Call.OnCancel marks its audit line.
func TestCheck(t *testing.T) {
	var mu sync.Mutex
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
	}))
	defer srv.Close()
	var log bytes.Buffer
	c, err := New("p", Policy{Rules: []Rule{{Origins: []string{srv.URL}, AllowAddresses: []string{"127.0.0.1"},
		Methods: []string{"GET", "DELETE"}, Headers: map[string]string{"X-Api-Key": secret}}},
		Limits: Limits{MaxRequestBytes: 4}}, &Options{Logger: slog.New(slog.NewTextHandler(lockedWriter{&sync.Mutex{}, &log}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range []struct {
		name   string
		params []byte
		want   string // "" means allowed
	}{
		{"allowed", params(t, Request{Method: "DELETE", URL: srv.URL + "/jobs/1"}), ""},
		{"method", params(t, Request{Method: "POST", URL: srv.URL}), "method POST is not allowed by"},
		{"origin", params(t, Request{Method: "DELETE", URL: "http://example.com/"}), "refused"},
		{"injected header", params(t, Request{Method: "DELETE", URL: srv.URL, Headers: map[string]string{"X-Api-Key": "mine"}}), "set by the operator"},
		{"forbidden header", params(t, Request{Method: "DELETE", URL: srv.URL, Headers: map[string]string{"Host": "x"}}), "may not set header Host"},
		{"body", params(t, Request{Method: "DELETE", URL: srv.URL, Body: base64.StdEncoding.EncodeToString([]byte("12345"))}), "exceeds 4"},
		{"params", []byte(`{"url": 1}`), "http params"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Check(tc.params)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Check(%s) = %v, want nil", tc.params, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "plugin p: ") {
				t.Fatalf("Check(%s) = %v, want an error with %q", tc.params, err, tc.want)
			}
			_, derr := c.Do(context.Background(), Call{Seq: 1}, tc.params)
			if derr == nil || derr.Error() != err.Error() {
				t.Errorf("Do(%s) = %v, want the error of Check %q", tc.params, derr, err)
			}
		})
	}
	mu.Lock()
	if hits != 0 {
		t.Errorf("the server got %d requests, want none from Check or a refused Do", hits)
	}
	mu.Unlock()
	if _, err := c.Do(context.Background(), Call{Tool: "t", Seq: 1, OnCancel: true}, params(t, Request{Method: "DELETE", URL: srv.URL})); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "on_cancel=true") || strings.Count(log.String(), "on_cancel") != 1 {
		t.Errorf("audit log = %q, want on_cancel=true on the OnCancel request only", log.String())
	}
}
