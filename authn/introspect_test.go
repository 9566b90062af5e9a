package authn

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// introspectionAS is an RFC 7662 endpoint in the test: it authenticates the
// resource server (client "rs", secret "s3cret") and answers each token from its
// table, counting the requests per token.
type introspectionAS struct {
	srv *httptest.Server

	mu      sync.Mutex
	answers map[string]map[string]any
	asked   map[string]int
}

func newIntrospectionAS(t *testing.T) *introspectionAS {
	as := &introspectionAS{answers: map[string]map[string]any{}, asked: map[string]int{}}
	as.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		if r.Method != http.MethodPost || !ok || id != "rs" || secret != "s3cret" ||
			r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		tok := r.PostFormValue("token")
		as.mu.Lock()
		as.asked[tok]++
		answer, known := as.answers[tok]
		as.mu.Unlock()
		switch {
		case tok == "boom":
			http.Error(w, "down", http.StatusInternalServerError)
		case tok == "garbage":
			w.Write([]byte("<html>"))
		case !known:
			w.Write([]byte(`{"active":false}`))
		default:
			json.NewEncoder(w).Encode(answer)
		}
	}))
	t.Cleanup(as.srv.Close)
	return as
}

func (as *introspectionAS) times(tok string) int {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.asked[tok]
}

// TestIntrospection: an opaque token is checked at the issuer's RFC 7662 endpoint:
// active, for this resource, with a sub, and (if it says them) the issuer, exp and
// nbf; its identity is the same as a JWT's of the same sub. Answers are kept (an
// active one at most until its exp), a failure of the endpoint is not; a JWT the
// JWKS can check never goes to the endpoint.
func TestIntrospection(t *testing.T) {
	as := newIntrospectionAS(t)
	now := time.Now()
	exp := now.Add(time.Hour).Unix()
	ok := func(extra map[string]any) map[string]any {
		m := map[string]any{"active": true, "sub": "alice", "aud": "https://rs/mcp", "iss": "https://as", "scope": "mcp tools:x", "exp": exp}
		for k, v := range extra {
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		return m
	}
	as.answers = map[string]map[string]any{
		"good":       ok(nil),
		"aud list":   ok(map[string]any{"aud": []string{"https://other/mcp", "https://rs/mcp"}, "iss": nil, "exp": nil}),
		"wrong aud":  ok(map[string]any{"aud": "https://other/mcp"}),
		"no aud":     ok(map[string]any{"aud": nil}),
		"wrong iss":  ok(map[string]any{"iss": "https://evil"}),
		"no sub":     ok(map[string]any{"sub": nil}),
		"expired":    ok(map[string]any{"exp": now.Add(-time.Hour).Unix()}),
		"not yet":    ok(map[string]any{"nbf": now.Add(time.Hour).Unix()}),
		"short":      ok(map[string]any{"exp": now.Add(10 * time.Second).Unix()}),
		"not active": ok(map[string]any{"active": false}),
	}
	ec := newKey(t)
	data, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: ec.Public(), KeyID: "a", Algorithm: "ES256"}}})
	jwks := t.TempDir() + "/jwks.json"
	secret := t.TempDir() + "/secret"
	if err := writeFile(jwks, data); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(secret, []byte("s3cret\n")); err != nil {
		t.Fatal(err)
	}
	a, err := New(Options{Mode: ModeOAuth, Issuer: "https://as", Resource: "https://rs/mcp", JWKSFile: jwks,
		Algorithms: []string{"ES256"}, IntrospectionURL: as.srv.URL, IntrospectionClientID: "rs", IntrospectionSecretFile: secret})
	if err != nil {
		t.Fatal(err)
	}
	clock := now
	a.now = func() time.Time { return clock }
	ctx := context.Background()

	for _, tt := range []struct {
		token, refused string // refused: "" for accepted, else part of the error
	}{
		{"good", ""},
		{"aud list", ""},
		{"unknown", "not active"},
		{"not active", "not active"},
		{"wrong aud", "not for this resource"},
		{"no aud", "not for this resource"},
		{"wrong iss", `issued by "https://evil"`},
		{"no sub", "no sub"},
		{"expired", "expired"},
		{"not yet", "not valid yet"},
		{"boom", "introspection failed"},
		{"garbage", "introspection failed"},
	} {
		ti, err := a.Verify(ctx, tt.token)
		switch {
		case tt.refused == "" && (err != nil || ti.UserID != "oauth:https://as#alice" || !slices.Equal(ti.Scopes, []string{"mcp", "tools:x"})):
			t.Errorf("Verify(%q) = %+v, %v; want alice with scopes mcp tools:x", tt.token, ti, err)
		case tt.refused != "" && (err == nil || !strings.Contains(err.Error(), tt.refused)):
			t.Errorf("Verify(%q) = %+v, %v; want refused: %s", tt.token, ti, err, tt.refused)
		}
	}

	// Kept: asked once however often it comes, refusals too; a failure is asked again.
	for range 3 {
		a.Verify(ctx, "good")
		a.Verify(ctx, "unknown")
		a.Verify(ctx, "boom")
	}
	if g, u, b := as.times("good"), as.times("unknown"), as.times("boom"); g != 1 || u != 1 || b != 4 {
		t.Errorf("endpoint asked good %d, unknown %d, boom %d times; want 1, 1 (answers kept) and 4 (failures not)", g, u, b)
	}
	a.Verify(ctx, "short")
	clock = now.Add(10*time.Second + DefaultClockSkew + time.Second) // past short's exp and the skew, within the minute kept
	if _, err := a.Verify(ctx, "short"); err == nil || as.times("short") != 2 {
		t.Errorf("short after its exp: %v, asked %d times; want expired after asking again (kept at most until exp)", err, as.times("short"))
	}
	if _, err := a.Verify(ctx, "good"); err != nil || as.times("good") != 1 {
		t.Errorf("good within the minute: %v, asked %d times; want the kept answer", err, as.times("good"))
	}
	clock = now.Add(DefaultIntrospectionCache + time.Second)
	if _, err := a.Verify(ctx, "good"); err != nil || as.times("good") != 2 {
		t.Errorf("good after the minute: %v, asked %d times; want it asked again", err, as.times("good"))
	}

	// A JWT the JWKS can check is checked here, and a bad one is not sent either.
	jwt := sign(t, ec, "a", "https://as", clock)
	if ti, err := a.Verify(ctx, jwt); err != nil || ti.UserID != "oauth:https://as#alice" {
		t.Errorf("Verify(JWT) = %+v, %v; want alice, the same identity", ti, err)
	}
	if _, err := a.Verify(ctx, sign(t, newKey(t), "a", "https://as", clock)); err == nil {
		t.Error("Verify(JWT of another key) = nil error")
	}
	if n := as.times(jwt); n != 0 {
		t.Errorf("a JWT was sent to the endpoint %d times, want never", n)
	}

	// The endpoint refuses a wrong secret: every token is then refused.
	wrong := t.TempDir() + "/wrong"
	writeFile(wrong, []byte("nope"))
	b, err := New(Options{Mode: ModeOAuth, Issuer: "https://as", Resource: "https://rs/mcp",
		IntrospectionURL: as.srv.URL, IntrospectionClientID: "rs", IntrospectionSecretFile: wrong})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Verify(ctx, "good"); err == nil || !strings.Contains(err.Error(), "introspection failed") {
		t.Errorf("Verify with a wrong client secret = %v, want introspection failed", err)
	}
}

// FuzzParseIntrospection: any bytes from an introspection endpoint are read or
// refused, never a panic.
func FuzzParseIntrospection(f *testing.F) {
	f.Add([]byte(`{"active":true,"sub":"a","aud":["x"],"exp":1.5e9}`))
	f.Add([]byte(`{"active":"yes"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := parseIntrospection(data)
		if err != nil && r.Active {
			t.Errorf("parseIntrospection(%q) = active with error %v", data, err)
		}
	})
}
