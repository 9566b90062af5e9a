package config_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-wasmhost/mcp-wasmhost/config"
)

// TestEmptyPinShowsDigest: a plugin with sha256 = "" is refused with the file's
// digest and the exact line to paste; without a readable file the message says how
// to get one.
func TestEmptyPinShowsDigest(t *testing.T) {
	dir := t.TempDir()
	wasm := []byte("\x00asm\x01\x00\x00\x00")
	if err := os.WriteFile(filepath.Join(dir, "a.wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(wasm)
	digest := hex.EncodeToString(sum[:])
	for _, tc := range []struct {
		name, path string
		want       []string
	}{
		{"readable file", "a.wasm", []string{"sha256 is required", filepath.Join(dir, "a.wasm") + " has sha256 " + digest, `paste this line into its [[plugins]] table: sha256 = "` + digest + `"`}},
		{"missing file", "b.wasm", []string{"sha256 is required"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "[[plugins]]\nname = \"a\"\npath = \"" + tc.path + "\"\nsha256 = \"\"\n"
			_, err := config.Parse([]byte(doc), "config.toml", dir)
			if err == nil {
				t.Fatal("Parse accepted an empty sha256")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Parse error = %q, want it to contain %q", err, w)
				}
			}
		})
	}
	line, err := config.PinLine(filepath.Join(dir, "a.wasm"))
	if want := `sha256 = "` + digest + `"`; err != nil || line != want {
		t.Errorf("PinLine = %q, %v; want %q", line, err, want)
	}
	if _, err := config.PinLine(filepath.Join(dir, "none.wasm")); err == nil {
		t.Error("PinLine of a missing file succeeded")
	}
}
