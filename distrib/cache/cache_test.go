package cache_test

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/cache"
)

func TestCache(t *testing.T) {
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Put([]byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := c.Read(d, 100); err != nil || string(b) != "hello" {
		t.Fatalf("Read = %q, %v", b, err)
	}
	if _, err := c.Read(d, 4); !errors.Is(err, cache.ErrTooLarge) {
		t.Errorf("Read over max = %v, want ErrTooLarge", err)
	}
	// Bytes that do not match the digest are not stored.
	other := cache.Digest([]byte("other"))
	if err := c.Write(other, bytes.NewReader([]byte("not other")), 100); !errors.Is(err, cache.ErrMismatch) {
		t.Errorf("Write of wrong bytes = %v, want ErrMismatch", err)
	}
	if c.Has(other) {
		t.Error("a mismatching blob was kept")
	}
	if err := c.Write(other, bytes.NewReader([]byte("other plus")), 5); !errors.Is(err, cache.ErrTooLarge) {
		t.Errorf("Write over max = %v, want ErrTooLarge", err)
	}
	// A file changed on disk is refused on read.
	p, _ := c.Path(d)
	os.WriteFile(p, []byte("jello"), 0o600)
	if _, err := c.Read(d, 100); !errors.Is(err, cache.ErrCorrupt) {
		t.Errorf("Read of a changed file = %v, want ErrCorrupt", err)
	}
	if _, err := c.Verify(d); !errors.Is(err, cache.ErrCorrupt) {
		t.Errorf("Verify of a changed file = %v, want ErrCorrupt", err)
	}
	if _, err := c.Read(cache.Digest([]byte("absent")), 100); !errors.Is(err, cache.ErrMissing) {
		t.Errorf("Read of an absent blob = %v, want ErrMissing", err)
	}
	for _, bad := range []string{"sha512:00", "sha256:ABC", "md5:x", "sha256:../../etc/passwd"} {
		if _, err := c.Path(bad); err == nil {
			t.Errorf("Path(%q) accepted", bad)
		}
	}
}
