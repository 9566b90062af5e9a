package authn

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// issuer is a JWKS endpoint with keys made in the test, counting its fetches.
type issuer struct {
	srv     *httptest.Server
	jwks    atomic.Pointer[[]byte]
	fetches atomic.Int32
}

func newIssuer(t *testing.T) *issuer {
	is := &issuer{}
	is.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		is.fetches.Add(1)
		w.Write(*is.jwks.Load())
	}))
	t.Cleanup(is.srv.Close)
	return is
}

func (is *issuer) serve(keys ...*ecdsa.PrivateKey) {
	var set jose.JSONWebKeySet
	for i, k := range keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.Public(), KeyID: kid(i), Algorithm: "ES256", Use: "sig"})
	}
	b, _ := json.Marshal(set)
	is.jwks.Store(&b)
}

func kid(i int) string { return string(rune('a' + i)) }

func sign(t testing.TB, key *ecdsa.PrivateKey, id, iss string, now time.Time) string {
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithHeader("kid", id))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(sig).Claims(jwt.Claims{Issuer: iss, Subject: "alice", Audience: jwt.Audience{"https://rs/mcp"},
		Expiry: jwt.NewNumericDate(now.Add(time.Hour)), IssuedAt: jwt.NewNumericDate(now)}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestKeyRotation: a token signed by a key the issuer publishes later is accepted
// once the JWKS is refetched: at once on an unknown kid, but not more often than
// minRefetch; and the keys are refetched every refresh.
func TestKeyRotation(t *testing.T) {
	is := newIssuer(t)
	old, next := newKey(t), newKey(t)
	is.serve(old)
	a, err := New(Options{Mode: ModeOAuth, Issuer: "https://as", Resource: "https://rs/mcp", JWKSURL: is.srv.URL,
		JWKSRefresh: time.Hour, Algorithms: []string{"ES256"}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	a.now = func() time.Time { return now }
	ctx := context.Background()
	verify := func(tok string) error { _, err := a.Verify(ctx, tok); return err }

	if err := verify(sign(t, old, "a", "https://as", now)); err != nil {
		t.Fatalf("Verify(old key) = %v", err)
	}
	is.serve(old, next) // rotation: the issuer publishes a new key as "b"
	if err := verify(sign(t, next, "b", "https://as", now)); !errors.Is(err, auth.ErrInvalidToken) {
		t.Errorf("Verify(new key) within minRefetch = %v, want invalid (rate-limited)", err)
	}
	now = now.Add(minRefetch)
	if err := verify(sign(t, next, "b", "https://as", now)); err != nil {
		t.Errorf("Verify(new key) after minRefetch = %v, want nil", err)
	}
	fetches := is.fetches.Load()
	for range 5 {
		verify(sign(t, next, "z", "https://as", now)) // unknown kids do not hammer the issuer
	}
	if got := is.fetches.Load(); got != fetches {
		t.Errorf("fetches after 5 unknown kids = %d, want %d", got, fetches)
	}
	is.serve(next) // the old key retired: gone after the periodic refresh
	now = now.Add(time.Hour)
	if err := verify(sign(t, old, "a", "https://as", now)); !errors.Is(err, auth.ErrInvalidToken) {
		t.Errorf("Verify(retired key) after refresh = %v, want invalid", err)
	}
}

// TestJWKSFetchFailureKeepsKeys: a failed refetch keeps the keys fetched before.
func TestJWKSFetchFailureKeepsKeys(t *testing.T) {
	is := newIssuer(t)
	k := newKey(t)
	is.serve(k)
	a, err := New(Options{Mode: ModeOAuth, Issuer: "https://as", Resource: "https://rs/mcp", JWKSURL: is.srv.URL,
		JWKSRefresh: time.Minute, Algorithms: []string{"ES256"}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	a.now = func() time.Time { return now }
	if _, err := a.Verify(context.Background(), sign(t, k, "a", "https://as", now)); err != nil {
		t.Fatal(err)
	}
	bad := []byte("{not json")
	is.jwks.Store(&bad)
	now = now.Add(2 * time.Minute)
	if _, err := a.Verify(context.Background(), sign(t, k, "a", "https://as", now)); err != nil {
		t.Errorf("Verify after a failed refetch = %v, want nil (the old keys kept)", err)
	}
}

// FuzzVerify: no token, however malformed, panics the verifier or is accepted.
func FuzzVerify(f *testing.F) {
	k := newKey(f)
	now := time.Now()
	f.Add(sign(f, k, "a", "https://as", now))
	f.Add("eyJhbGciOiJub25lIn0.e30.")
	f.Add("a.b.c")
	var set jose.JSONWebKeySet
	set.Keys = append(set.Keys, jose.JSONWebKey{Key: newKey(f).Public(), KeyID: "a", Algorithm: "ES256"})
	b, _ := json.Marshal(set)
	file := f.TempDir() + "/jwks.json"
	if err := writeFile(file, b); err != nil {
		f.Fatal(err)
	}
	a, err := New(Options{Mode: ModeOAuth, Issuer: "https://as", Resource: "https://rs/mcp", JWKSFile: file})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		if ti, err := a.Verify(context.Background(), tok); err == nil {
			t.Errorf("Verify(%q) = %+v, want an error (no token is signed by the served key)", tok, ti)
		}
	})
}

// FuzzParseJWKS: any bytes from a JWKS endpoint are parsed or refused, never a
// panic, and never yield a symmetric key.
func FuzzParseJWKS(f *testing.F) {
	f.Add([]byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0","kid":"h"}]}`))
	f.Add([]byte(`{"keys":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		keys, err := parseJWKS(data)
		if err != nil {
			return
		}
		for id, k := range keys {
			if _, sym := k.Key.([]byte); sym {
				t.Errorf("parseJWKS kept symmetric key %q", id)
			}
		}
	})
}

func writeFile(name string, b []byte) error { return os.WriteFile(name, b, 0o600) }

// TestNotGranted: a call outside the grants is refused with a message naming the
// tool and what is missing; an OAuth token that a scope would grant it is asked for
// the required scopes and the narrowest grant's scope, with a challenge naming the
// RFC 9728 document; an API key and a tool no scope grants get no challenge.
func TestNotGranted(t *testing.T) {
	grants := []Grant{
		{Scope: "all", Tools: []string{"*"}},
		{Scope: "text", Tools: []string{"textkit_*"}},
		{Scope: "sha", Tools: []string{"textkit_sha256"}},
		{Key: "ci", Tools: []string{"jobs_run"}},
	}
	file := t.TempDir() + "/jwks.json"
	if err := writeFile(file, []byte(`{"keys":[]}`)); err != nil {
		t.Fatal(err)
	}
	oauth, err := New(Options{Mode: ModeOAuth, Issuer: "https://as", Resource: "https://rs/mcp", JWKSFile: file,
		RequiredScopes: []string{"mcp"}, Grants: grants[:3]})
	if err != nil {
		t.Fatal(err)
	}
	keyed, err := New(Options{Mode: ModeAPIKeys, Grants: grants})
	if err != nil {
		t.Fatal(err)
	}
	onlyKeys, err := New(Options{Mode: ModeOAuth, Issuer: "https://as", Resource: "https://rs/mcp", JWKSFile: file,
		Grants: grants[3:]})
	if err != nil {
		t.Fatal(err)
	}
	user := &auth.TokenInfo{UserID: "oauth:https://as#alice", Scopes: []string{"mcp"}}
	const meta = `resource_metadata="https://rs/.well-known/oauth-protected-resource/mcp"`
	tests := []struct {
		name      string
		a         *Authenticator
		ti        *auth.TokenInfo
		tool      string
		msg       string
		scopes    []string
		challenge string
	}{
		{"the tool's own grant", oauth, user, "textkit_sha256", `tool "textkit_sha256" needs scope "sha"`, []string{"mcp", "sha"},
			`Bearer error="insufficient_scope", scope="mcp sha", error_description="tool textkit_sha256 needs scope sha", ` + meta},
		{"the longer prefix", oauth, user, "textkit_upper", `tool "textkit_upper" needs scope "text"`, []string{"mcp", "text"},
			`Bearer error="insufficient_scope", scope="mcp text", error_description="tool textkit_upper needs scope text", ` + meta},
		{"only the wildcard", oauth, user, "jobs_run", `tool "jobs_run" needs scope "all"`, []string{"mcp", "all"},
			`Bearer error="insufficient_scope", scope="mcp all", error_description="tool jobs_run needs scope all", ` + meta},
		{"no scope grants it", onlyKeys, user, "textkit_upper", `tool "textkit_upper" is not granted to this caller, and no scope grants it`, nil, ""},
		{"an API key", keyed, &auth.TokenInfo{UserID: "key:bob"}, "jobs_run", `tool "jobs_run" is not granted to key "bob"`, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, scopes, challenge := tt.a.NotGranted(tt.ti, tt.tool)
			if !strings.HasPrefix(msg, tt.msg) || !slices.Equal(scopes, tt.scopes) || challenge != tt.challenge {
				t.Errorf("NotGranted(%s) = %q, %q, %q\nwant %q..., %q, %q", tt.tool, msg, scopes, challenge, tt.msg, tt.scopes, tt.challenge)
			}
		})
	}
}
