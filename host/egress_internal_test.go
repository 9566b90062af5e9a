package host

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/egress"
	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
)

// TestHTTPOnCancel: the request registered with "http_on_cancel" is made once, only
// when the run ended because its context was cancelled; registering again replaces
// it, null or {} clears it, and a refused one fails at registration.
func TestHTTPOnCancel(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path)
		mu.Unlock()
	}))
	defer srv.Close()
	net, err := egress.New("p", egress.Policy{Rules: []egress.Rule{{Origins: []string{srv.URL},
		AllowAddresses: []string{"127.0.0.1"}, Methods: []string{"GET", "DELETE"}}}},
		&egress.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	del := func(path string) string { return `{"method":"DELETE","url":"` + srv.URL + path + `"}` }

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, stop := context.WithTimeout(context.Background(), -time.Second)
	defer stop()
	mrtrPending := &mrtrRun{cancel: func() {}, pending: []pendingInput{{method: "elicit"}}}
	for _, tc := range []struct {
		name     string
		register []string // params, in order
		ctx      context.Context
		mrtr     *mrtrRun
		want     string // the request made, "" for none
	}{
		{"cancelled", []string{del("/a")}, cancelled, nil, "DELETE /a"},
		{"replaced", []string{del("/a"), del("/b")}, cancelled, nil, "DELETE /b"},
		{"cleared by null", []string{del("/a"), "null"}, cancelled, nil, ""},
		{"cleared by {}", []string{del("/a"), " { } "}, cancelled, nil, ""},
		{"ended normally", []string{del("/a")}, context.Background(), nil, ""},
		{"time limit", []string{del("/a")}, expired, nil, ""},
		{"stopped to ask for input", []string{del("/a")}, cancelled, mrtrPending, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			got = nil
			mu.Unlock()
			b := &bridge{plugin: &plugins.Plugin{Name: "p", Net: net}, label: "t", mrtr: tc.mrtr}
			for _, p := range tc.register {
				if reply, err := b.Request(context.Background(), "http_on_cancel", []byte(p)); err != nil || string(reply) != "{}" {
					t.Fatalf("http_on_cancel(%s) = %s, %v, want {}", p, reply, err)
				}
			}
			b.onCancelled(tc.ctx)
			b.onCancelled(tc.ctx) // at most once
			mu.Lock()
			defer mu.Unlock()
			want := []string{}
			if tc.want != "" {
				want = []string{tc.want}
			}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("requests made = %q, want %q", got, want)
			}
		})
	}

	t.Run("refused", func(t *testing.T) {
		b := &bridge{plugin: &plugins.Plugin{Name: "p", Net: net}, label: "t"}
		for _, p := range []string{"{", "}", "[]", `""`, `{"url":1}`} {
			if _, err := b.Request(context.Background(), "http_on_cancel", []byte(p)); err == nil {
				t.Errorf("http_on_cancel(%s) = nil, want an error", p)
			}
		}
		_, err := b.Request(context.Background(), "http_on_cancel", []byte(`{"method":"POST","url":"`+srv.URL+`"}`))
		if err == nil || !strings.Contains(err.Error(), "method POST is not allowed by") {
			t.Errorf("http_on_cancel(POST) = %v, want refused by the rule", err)
		}
		b = &bridge{plugin: &plugins.Plugin{Name: "p"}, label: "t"}
		if _, err := b.Request(context.Background(), "http_on_cancel", []byte(del("/a"))); err == nil || !strings.Contains(err.Error(), "has no network") {
			t.Errorf("http_on_cancel without a network = %v, want refused", err)
		}
	})
}
