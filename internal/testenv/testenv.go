// Package testenv gives tests what they share: the repository root, one compilation
// cache for the whole test run (so that each Go guest compiles once, not once per
// package), and plugin specs for the .wasm files built from source in the repository.
package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// Root returns the repository root.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Path returns a path inside the repository.
func Path(rel string) string { return filepath.Join(Root(), rel) }

// CacheDir is a compilation cache shared by every test package of a run, and by later
// runs on the same machine. wazero keys its entries by its version and the module's
// hash, so a stale entry can never be used.
func CacheDir() string {
	return filepath.Join(os.TempDir(), "mcp-wasmhost-test-cache")
}

// Engine returns a sandbox engine on the shared cache, closed when t ends.
func Engine(t testing.TB) *sandbox.Engine {
	t.Helper()
	e, err := sandbox.NewEngine(context.Background(), sandbox.Options{CacheDir: CacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	return e
}

// Spec returns a plugin spec for a .wasm in the repository, pinned to its real digest.
func Spec(t testing.TB, name, rel string) plugins.Spec {
	t.Helper()
	path := Path(rel)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return plugins.Spec{Name: name, Path: path, SHA256: hex.EncodeToString(sum[:])}
}

// Load loads a plugin, closed when t ends.
func Load(t testing.TB, e *sandbox.Engine, s plugins.Spec) *plugins.Plugin {
	t.Helper()
	p, err := plugins.Load(context.Background(), e, s)
	if err != nil {
		t.Fatalf("Load(%s) = %v", s.Name, err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}
