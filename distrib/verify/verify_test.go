package verify_test

import (
	"bytes"
	"encoding/base64"
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

// TestKeylessTlog: a keyless signature needs its transparency log entry, whole: an
// entry removed, its inclusion proof or promise changed, its time moved, or another
// signature's entry put in its place is refused, never accepted.
func TestKeylessTlog(t *testing.T) {
	const identity, issuer = "dev@plugins.example", "https://issuer.example"
	vs := sigtest.NewSigstore(t)
	v, err := verify.New(verify.Policy{Identity: identity, Issuer: issuer, TrustedRootJSON: vs.TrustedRoot(t)})
	if err != nil {
		t.Fatal(err)
	}
	good := vs.Sign(t, identity, issuer, digest)
	if s, err := v.Verify(good, digest); err != nil || s.Kind != "keyless" {
		t.Fatalf("Verify of the bundle as signed = %+v, %v", s, err)
	}
	another := sigtest.Tlog(t, vs.Sign(t, identity, issuer, other))
	field := func(e map[string]any, path ...string) map[string]any {
		for _, p := range path {
			e = e[p].(map[string]any)
		}
		return e
	}
	tests := []struct {
		name string
		edit func(entries []map[string]any) []map[string]any
		want error
	}{
		{"no log entry", func([]map[string]any) []map[string]any { return nil }, verify.ErrUntrusted},
		{"inclusion proof root changed", func(es []map[string]any) []map[string]any {
			p := field(es[0], "inclusionProof")
			p["rootHash"] = sigtest.FlipBase64(t, p["rootHash"].(string))
			return es
		}, verify.ErrUntrusted},
		{"inclusion proof tree size changed", func(es []map[string]any) []map[string]any {
			field(es[0], "inclusionProof")["treeSize"] = "2"
			return es
		}, verify.ErrUntrusted},
		{"checkpoint changed", func(es []map[string]any) []map[string]any {
			c := field(es[0], "inclusionProof", "checkpoint")
			c["envelope"] = strings.Replace(c["envelope"].(string), "\n", "x\n", 1) // the signed note's origin line
			return es
		}, verify.ErrUntrusted},
		{"signed entry timestamp changed", func(es []map[string]any) []map[string]any {
			p := field(es[0], "inclusionPromise")
			p["signedEntryTimestamp"] = sigtest.FlipBase64(t, p["signedEntryTimestamp"].(string))
			return es
		}, verify.ErrUntrusted},
		{"integrated time moved", func(es []map[string]any) []map[string]any {
			es[0]["integratedTime"] = "1"
			return es
		}, verify.ErrUntrusted},
		{"entry body changed", func(es []map[string]any) []map[string]any {
			// Still a DSSE entry, naming another envelope hash.
			body, _ := base64.StdEncoding.DecodeString(es[0]["canonicalizedBody"].(string))
			i := bytes.Index(body, []byte(`"value":"`)) + len(`"value":"`)
			if body[i] == 'a' {
				body[i] = 'b'
			} else {
				body[i] = 'a'
			}
			es[0]["canonicalizedBody"] = base64.StdEncoding.EncodeToString(body)
			return es
		}, verify.ErrUntrusted},
		{"entry body not an entry", func(es []map[string]any) []map[string]any {
			es[0]["canonicalizedBody"] = sigtest.FlipBase64(t, es[0]["canonicalizedBody"].(string))
			return es
		}, verify.ErrTampered},
		{"another signature's entry", func([]map[string]any) []map[string]any { return another }, verify.ErrUntrusted},
		{"no inclusion proof", func(es []map[string]any) []map[string]any {
			delete(es[0], "inclusionProof") // a v0.3 bundle must carry one
			return es
		}, verify.ErrTampered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := sigtest.EditTlog(t, good, tt.edit)
			if _, err := v.Verify(b, digest); !errors.Is(err, tt.want) {
				t.Fatalf("Verify = %v, want %v", err, tt.want)
			}
		})
	}
}
