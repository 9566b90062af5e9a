package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrCorrupt is returned when a cached file does not match its digest (changed on disk).
var ErrCorrupt = errors.New("cached blob does not match its digest")

// ErrMissing is returned when the cache does not hold a blob.
var ErrMissing = errors.New("not in the cache")

// ErrTooLarge is returned when a blob is larger than the caller allows.
var ErrTooLarge = errors.New("blob too large")

// Cache is a directory of blobs named by sha256 digest. It is safe for concurrent use by
// several goroutines and processes: writes are atomic renames of complete files.
type Cache struct{ dir string }

// Open returns the cache in dir, creating it (mode 0700) if needed.
func Open(dir string) (*Cache, error) {
	if dir == "" {
		return nil, errors.New("cache: no directory")
	}
	if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o700); err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	return &Cache{dir: dir}, nil
}

// Dir is the cache's directory.
func (c *Cache) Dir() string { return c.dir }

// Hex returns the hex part of a "sha256:<64 hex>" digest, or an error for any other
// algorithm or form.
func Hex(digest string) (string, error) {
	h, ok := strings.CutPrefix(digest, "sha256:")
	if !ok || len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
		return "", fmt.Errorf("digest %q: want sha256:<64 lower-case hex>", digest)
	}
	return h, nil
}

// Digest returns the "sha256:<hex>" digest of b.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Path is where the blob with digest d lives (whether or not it is there yet).
func (c *Cache) Path(d string) (string, error) {
	h, err := Hex(d)
	if err != nil {
		return "", err
	}
	return filepath.Join(c.dir, "blobs", "sha256", h), nil
}

// Has reports whether the cache holds a file for d (its content is checked on read).
func (c *Cache) Has(d string) bool {
	p, err := c.Path(d)
	if err != nil {
		return false
	}
	_, err = os.Stat(p)
	return err == nil
}

// Read returns the blob d, hashed again, of at most max bytes.
func (c *Cache) Read(d string, max int64) ([]byte, error) {
	p, err := c.Path(d)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", d, ErrMissing)
	}
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("cache: read %s: %w", d, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("cached %s: over %d bytes: %w", d, max, ErrTooLarge)
	}
	if Digest(b) != d {
		return nil, fmt.Errorf("%s (%s): %w", d, p, ErrCorrupt)
	}
	return b, nil
}

// Verify hashes the file of blob d and returns its path if it matches.
func (c *Cache) Verify(d string) (string, error) {
	p, err := c.Path(d)
	if err != nil {
		return "", err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%s: %w", d, ErrMissing)
	}
	if err != nil {
		return "", fmt.Errorf("cache: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("cache: read %s: %w", d, err)
	}
	if "sha256:"+hex.EncodeToString(h.Sum(nil)) != d {
		return "", fmt.Errorf("%s (%s): %w", d, p, ErrCorrupt)
	}
	return p, nil
}

// Put stores b and returns its digest.
func (c *Cache) Put(b []byte) (string, error) {
	d := Digest(b)
	return d, c.Write(d, bytes.NewReader(b), int64(len(b)))
}

// Write stores the blob d read from r, at most max bytes. The bytes are hashed as they
// are written; a blob that does not match d is discarded and the error wraps
// [ErrMismatch].
func (c *Cache) Write(d string, r io.Reader, max int64) error {
	p, err := c.Path(d)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".part-*")
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename this removes nothing
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(r, max+1))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("cache: write %s: %w", d, err)
	}
	if n > max {
		return fmt.Errorf("%s: over %d bytes: %w", d, max, ErrTooLarge)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != d {
		return &MismatchError{Want: d, Got: got}
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	return nil
}

// ErrMismatch is what a [MismatchError] matches with errors.Is.
var ErrMismatch = errors.New("digest mismatch")

// MismatchError reports bytes whose digest is not the one expected.
type MismatchError struct{ Want, Got string }

func (e *MismatchError) Error() string {
	return fmt.Sprintf("digest mismatch: want %s, the bytes received hash to %s", e.Want, e.Got)
}

// Is makes errors.Is(err, ErrMismatch) true.
func (e *MismatchError) Is(target error) bool { return target == ErrMismatch }
