package egress

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
)

// TestObserveAndPropagate: Observe hears each request with the configured origin
// (never the URL) and its decision; Propagate's headers reach the upstream.
func TestObserveAndPropagate(t *testing.T) {
	var got sync.Map
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.URL.Path, r.Header.Get("Traceparent"))
	}))
	defer srv.Close()
	p := port(t, srv)
	var mu sync.Mutex
	var heard []string
	c, err := New("web", Policy{Rules: []Rule{{Origins: []string{"http://api.test:" + p}, AllowAddresses: []string{"127.0.0.1"},
		PathPrefixes: []string{"/ok"}}}}, &Options{
		Resolver: names{"api.test": {netip.MustParseAddr("127.0.0.1")}},
		Observe: func(plugin, origin, decision string) {
			mu.Lock()
			heard = append(heard, plugin+" "+origin+" "+decision)
			mu.Unlock()
		},
		Propagate: func(_ context.Context, h http.Header) {
			h.Set("Traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{
		"http://api.test:" + p + "/ok/secret-path?token=1", // allowed
		"http://api.test:" + p + "/no",                     // refused by the path prefix
		"http://else.test:" + p + "/ok",                    // no rule
	} {
		_, _ = c.Do(context.Background(), Call{Tool: "t", Seq: 1}, params(t, Request{Method: "GET", URL: u}))
	}
	want := []string{
		"web http://api.test:" + p + " allowed",
		"web http://api.test:" + p + " refused",
		"web  refused",
	}
	if strings.Join(heard, "|") != strings.Join(want, "|") {
		t.Errorf("Observe heard %q, want %q", heard, want)
	}
	if tp, _ := got.Load("/ok/secret-path"); tp != "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" {
		t.Errorf("upstream got traceparent %q", tp)
	}
}
