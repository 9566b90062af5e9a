package authn

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// TestWrapHidesToken: the handler behind Wrap gets the verified identity and never
// the token: not in Authorization (which reads "Bearer verified"), not in any other
// header, the URL or the body, for a JWT and for an API key.
func TestWrapHidesToken(t *testing.T) {
	ec := newKey(t)
	data, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: ec.Public(), KeyID: "a", Algorithm: "ES256"}}})
	file := t.TempDir() + "/jwks.json"
	if err := writeFile(file, data); err != nil {
		t.Fatal(err)
	}
	oauth, err := New(Options{Mode: ModeOAuth, Issuer: "https://as", Resource: "https://rs/mcp", JWKSFile: file,
		Algorithms: []string{"ES256"}})
	if err != nil {
		t.Fatal(err)
	}
	const key = "the-api-key-0b5e"
	keys, err := New(Options{Mode: ModeAPIKeys, Keys: []Key{{Name: "ci", SHA256: hashOf(key)}}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, token, identity string
		a                     *Authenticator
	}{
		{"jwt", sign(t, ec, "a", "https://as", time.Now()), "oauth:https://as#alice", oauth},
		{"api_key", key, "key:ci", keys},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen *http.Request
			var body []byte
			h := tt.a.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				seen = r
				body, _ = io.ReadAll(r.Body)
			}))
			r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
			r.Header.Set("Authorization", "Bearer "+tt.token)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusOK || seen == nil {
				t.Fatalf("HTTP %d (%s), handler reached: %t; want 200", w.Code, w.Body, seen != nil)
			}
			if got := seen.Header.Values("Authorization"); len(got) != 1 || got[0] != "Bearer verified" {
				t.Errorf("the handler's Authorization = %q, want [Bearer verified]", got)
			}
			for name, values := range seen.Header {
				for _, v := range values {
					if strings.Contains(v, tt.token) {
						t.Errorf("the handler's %s header holds the token", name)
					}
				}
			}
			if strings.Contains(seen.URL.String(), tt.token) || bytes.Contains(body, []byte(tt.token)) {
				t.Errorf("the handler's URL or body holds the token")
			}
			if ti := auth.TokenInfoFromContext(seen.Context()); ti == nil || ti.UserID != tt.identity {
				t.Errorf("the handler's TokenInfo = %+v, want identity %s", ti, tt.identity)
			} else if b, _ := json.Marshal(ti); bytes.Contains(b, []byte(tt.token)) {
				t.Errorf("the handler's TokenInfo holds the token: %s", b)
			}
			if got := r.Header.Get("Authorization"); got != "Bearer "+tt.token {
				t.Errorf("the caller's request was changed: Authorization %q", got)
			}
		})
	}
}
