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

// TestOnRefuse: each refusal of Wrap is reported with its reason; a request let
// through is not.
func TestOnRefuse(t *testing.T) {
	sum := sha256.Sum256([]byte("good-key"))
	var mu sync.Mutex
	var reasons []string
	a, err := New(Options{Mode: ModeAPIKeys, RequiredScopes: []string{"mcp"}, RateLimit: 0.001, RateBurst: 1,
		Keys: []Key{
			{Name: "ok", SHA256: hex.EncodeToString(sum[:]), Scopes: []string{"mcp"}},
			{Name: "noscope", SHA256: hashOf("scopeless-key")},
		},
		OnRefuse: func(r string) { mu.Lock(); reasons = append(reasons, r); mu.Unlock() }})
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
	want := []string{RefuseMissingToken, RefuseInvalidToken, RefuseScope, RefuseRateLimit}
	if !slices.Equal(reasons, want) {
		t.Errorf("OnRefuse heard %q, want %q", reasons, want)
	}
}

func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
