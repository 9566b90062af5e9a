package lock_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/lock"
	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/verify"
)

const d1 = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
const d2 = "sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

// TestRoundTrip: what Write writes, Read reads back equal, and writing it again gives
// the same bytes.
func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), lock.FileName)
	f := &lock.File{Plugins: map[string]lock.Entry{
		"keyed": {Source: "oci://r.example/a:1", Digest: d1, Layout: "wasm-artifact", Module: d2, Bundle: d2,
			Signer: &verify.Signer{Kind: "key", KeyID: strings.Repeat("ab", 32)}, Pulled: time.Date(2026, 12, 2, 3, 4, 5, 0, time.UTC)},
		"keyless": {Source: "oci://r.example/b@" + d1, Digest: d1, Manifest: d2, Layout: "hyper-mcp-docker", Module: d2, Bundle: d1,
			Signer: &verify.Signer{Kind: "keyless", Identity: "a@b.example", Issuer: "https://i.example", Time: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
			Pulled: time.Date(2026, 12, 2, 3, 4, 5, 0, time.UTC)},
		"none": {Source: "oci://r.example/c:2", Digest: d2, Layout: "hyper-mcp-oras", Module: d1, Pulled: time.Date(2026, 12, 2, 3, 4, 5, 0, time.UTC)},
	}}
	if err := f.Write(path); err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(path)
	got, err := lock.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, f) {
		t.Errorf("Read = %+v, want %+v", got, f)
	}
	if err := got.Write(path); err != nil {
		t.Fatal(err)
	}
	if second, _ := os.ReadFile(path); string(second) != string(first) {
		t.Errorf("rewritten lockfile differs:\n%s\n%s", first, second)
	}
	if empty, err := lock.Read(filepath.Join(t.TempDir(), "missing.lock")); err != nil || len(empty.Plugins) != 0 {
		t.Errorf("Read of a missing file = %+v, %v; want an empty file", empty, err)
	}
}

func TestParseErrors(t *testing.T) {
	entry := `{"source":"oci://r.example/a:1","digest":"` + d1 + `","layout":"wasm-artifact","module":"` + d2 + `","pulled":"2026-12-02T00:00:00Z"}`
	tests := []struct{ name, body, err string }{
		{"version", `{"version":2,"plugins":{}}`, "version 2"},
		{"unknown field", `{"version":1,"plugins":{},"extra":1}`, "unknown field"},
		{"bad digest", `{"version":1,"plugins":{"a":` + strings.Replace(entry, d1, "sha256:xyz", 1) + `}}`, "digest"},
		{"not oci", `{"version":1,"plugins":{"a":` + strings.Replace(entry, "oci://", "https://", 1) + `}}`, "not oci://"},
		{"bundle without signer", `{"version":1,"plugins":{"a":` + strings.Replace(entry, `"layout"`, `"bundle":"`+d1+`","layout"`, 1) + `}}`, "go together"},
	}
	for _, tt := range tests {
		if _, err := lock.Parse([]byte(tt.body)); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: Parse = %v, want an error with %q", tt.name, err, tt.err)
		}
	}
	if _, err := lock.Parse([]byte(`{"version":1,"plugins":{"a":` + entry + `}}`)); err != nil {
		t.Errorf("Parse of a valid entry: %v", err)
	}
}
