package manifests

import (
	"encoding/json"
	"testing"
)

// FuzzDecode: an entry's bytes are untrusted; decoding never panics, and what it
// accepts names the key and module asked for and has a manifest within the limit.
func FuzzDecode(f *testing.F) {
	digest := testKey.digest(testHost)
	good, _ := json.Marshal(entry{Format: format, Key: digest, WasmSHA256: testKey.WasmSHA256,
		ManifestSHA256: "x", Manifest: []byte(testManifest)})
	for _, s := range []string{string(good), `{}`, `[]`, ``, `{"format":1}`, `{"manifest":"!!"}`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decode(b, digest, testKey.WasmSHA256)
		if err == nil && (len(m) == 0 || len(m) > MaxManifestBytes) {
			t.Fatalf("decode accepted a manifest of %d bytes", len(m))
		}
	})
}
