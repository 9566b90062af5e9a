package authn

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// BenchmarkWrap: what a guarded request costs over an unguarded one (a handler that
// does nothing), per mode, with the JWKS cached.
func BenchmarkWrap(b *testing.B) {
	ec := newKey(b)
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: ec.Public(), KeyID: "a", Algorithm: "ES256"},
		{Key: rk.Public(), KeyID: "r", Algorithm: "RS256"}}}
	data, _ := json.Marshal(set)
	file := b.TempDir() + "/jwks.json"
	if err := writeFile(file, data); err != nil {
		b.Fatal(err)
	}
	oauth, err := New(Options{Mode: ModeOAuth, Issuer: "https://as", Resource: "https://rs/mcp", JWKSFile: file,
		Algorithms: []string{"ES256", "RS256"}})
	if err != nil {
		b.Fatal(err)
	}
	sum := sha256.Sum256([]byte("key"))
	keys, err := New(Options{Mode: ModeAPIKeys, Keys: []Key{{Name: "ci", SHA256: hex.EncodeToString(sum[:])}}})
	if err != nil {
		b.Fatal(err)
	}
	sig, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: rk}, (&jose.SignerOptions{}).WithHeader("kid", "r"))
	rsTok, _ := jwt.Signed(sig).Claims(jwt.Claims{Issuer: "https://as", Subject: "alice", Audience: jwt.Audience{"https://rs/mcp"},
		Expiry: jwt.NewNumericDate(time.Now().Add(time.Hour))}).Serialize()
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	cases := []struct {
		name  string
		h     http.Handler
		token string
	}{
		{"none", ok, ""},
		{"api_key", keys.Wrap(ok), "key"},
		{"jwt_ES256", oauth.Wrap(ok), sign(b, ec, "a", "https://as", time.Now())},
		{"jwt_RS256", oauth.Wrap(ok), rsTok},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
				if c.token != "" {
					r.Header.Set("Authorization", "Bearer "+c.token)
				}
				w := httptest.NewRecorder()
				c.h.ServeHTTP(w, r)
				if w.Code != 200 {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
		})
	}
}
