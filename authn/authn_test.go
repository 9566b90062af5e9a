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
