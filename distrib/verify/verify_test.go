package verify_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/verify"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/sigtest"
)

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
const other = "sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

func TestPolicies(t *testing.T) {
	key := sigtest.NewKey(t)
	for _, p := range []verify.Policy{
		{},
		{KeyPEM: []byte("not pem")},
		{KeyPEM: key.PublicPEM, Identity: "a@b"},
		{Identity: "a@b", Issuer: "https://i"},
		{Identity: "a@b", Issuer: "https://i", TrustedRootJSON: []byte("{}")},
	} {
		if _, err := verify.New(p); err == nil {
			t.Errorf("New(%+v) accepted", p)
		}
	}
}

func TestKeyed(t *testing.T) {
	key := sigtest.NewKey(t)
	v, err := verify.New(verify.Policy{KeyPEM: key.PublicPEM})
	if err != nil {
		t.Fatal(err)
	}
	s, err := v.Verify(key.Sign(t, digest), digest)
	if err != nil || s.Kind != "key" || len(s.KeyID) != 64 {
		t.Fatalf("Verify = %+v, %v", s, err)
	}
	tests := []struct {
		name   string
		bundle []byte
		digest string
		want   error
	}{
		{"other digest", key.Sign(t, other), digest, verify.ErrTampered},
		{"other key", sigtest.NewKey(t).Sign(t, digest), digest, verify.ErrWrongKey},
		{"garbage", []byte(`{"mediaType":"x"}`), digest, verify.ErrTampered},
		{"too large", []byte(strings.Repeat(" ", verify.MaxBundleBytes+1)), digest, verify.ErrTampered},
	}
	for _, tt := range tests {
		if _, err := v.Verify(tt.bundle, tt.digest); !errors.Is(err, tt.want) {
			t.Errorf("%s: Verify = %v, want %v", tt.name, err, tt.want)
		}
	}
}

// FuzzVerify: no bundle bytes make verification panic or pass without the key.
func FuzzVerify(f *testing.F) {
	key := sigtest.NewKey(f)
	good := key.Sign(f, digest)
	f.Add(good)
	f.Add([]byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"}`))
	v, err := verify.New(verify.Policy{KeyPEM: sigtest.NewKey(f).PublicPEM}) // not the signer
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := v.Verify(b, digest); err == nil {
			t.Fatalf("a bundle verified under a key that signed nothing: %s", b)
		}
	})
}

// TestSignerString: any Signer prints, also one read from a hand-edited lockfile.
func TestSignerString(t *testing.T) {
	tests := []struct {
		s    verify.Signer
		want string
	}{
		{verify.Signer{Kind: "key", KeyID: strings.Repeat("ab", 32)}, "key sha256:abababababababab"},
		{verify.Signer{Kind: "key", KeyID: "ab"}, "key sha256:ab"},
		{verify.Signer{Kind: "key"}, "key sha256:"},
		{verify.Signer{Kind: "keyless", Identity: "a@b.example", Issuer: "https://i.example"}, "a@b.example (https://i.example)"},
	}
	for _, tt := range tests {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.s, got, tt.want)
		}
	}
}
