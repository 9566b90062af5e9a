package authn

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
)

// TestOnRefuse: each refusal of Wrap is reported with its reason, status, client
// address and, once the token verified, the identity; a request let through is not.
func TestOnRefuse(t *testing.T) {
	sum := sha256.Sum256([]byte("good-key"))
	var mu sync.Mutex
	var heard []Refusal
	a, err := New(Options{Mode: ModeAPIKeys, RequiredScopes: []string{"mcp"}, RateLimit: 0.001, RateBurst: 1,
		Keys: []Key{
			{Name: "ok", SHA256: hex.EncodeToString(sum[:]), Scopes: []string{"mcp"}},
			{Name: "noscope", SHA256: hashOf("scopeless-key")},
		},
		OnRefuse: func(r Refusal) { mu.Lock(); heard = append(heard, r); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	h := a.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for _, tc := range []struct {
		token string
		code  int
	}{
		{"", 401},
		{"wrong-key", 401},
		{"scopeless-key", 403},
		{"good-key", 200},
		{"good-key", 429}, // burst 1 spent
	} {
		r := httptest.NewRequest("POST", "/mcp", nil)
		if tc.token != "" {
			r.Header.Set("Authorization", "Bearer "+tc.token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.code {
			t.Errorf("token %q: HTTP %d, want %d", tc.token, w.Code, tc.code)
		}
	}
	const addr = "192.0.2.1:1234" // httptest.NewRequest's
	want := []Refusal{
		{Reason: RefuseMissingToken, Status: 401, RemoteAddr: addr},
		{Reason: RefuseInvalidToken, Status: 401, RemoteAddr: addr},
		{Reason: RefuseScope, Status: 403, Identity: "key:noscope", RemoteAddr: addr},
		{Reason: RefuseRateLimit, Status: 429, Identity: "key:ok", RemoteAddr: addr},
	}
	if !slices.Equal(heard, want) {
		t.Errorf("OnRefuse heard %+v\nwant %+v", heard, want)
	}
}

func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
