package manifests

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// MaxManifestBytes is the largest manifest kept: the sandbox's own limit on a
// describe's output.
const MaxManifestBytes = 1 << 20

// MaxEntryBytes bounds an entry file: a manifest of MaxManifestBytes in base64 and the
// fields around it. A larger file is not read.
const MaxEntryBytes = MaxManifestBytes*4/3 + 4<<10

// format is the version of the entry layout; entries of another are ignored.
const format = 1

// Key is what decides the outcome of describing a module. Two loads with equal keys
// describe the same module in the same host under the same limits.
type Key struct {
	WasmSHA256 string            // the module's bytes, lowercase hex
	ABI        int               // the guest ABI version the host implements
	MemoryMiB  int               // the plugin's memory limit, defaults filled in
	Timeout    time.Duration     // the plugin's time limit, defaults filled in
	Env        map[string]string // the environment the guest sees
}

// digest is the key's identity under host: the sha256 of its canonical form. Only
// the digest is stored, never the environment (which may hold secrets).
func (k Key) digest(host string) string {
	names := make([]string, 0, len(k.Env))
	for n := range k.Env {
		names = append(names, n)
	}
	slices.Sort(names)
	env := make([][2]string, len(names))
	for i, n := range names {
		env[i] = [2]string{n, k.Env[n]}
	}
	b, _ := json.Marshal(struct {
		Format     int         `json:"format"`
		Host       string      `json:"host"`
		WasmSHA256 string      `json:"wasmSHA256"`
		ABI        int         `json:"abi"`
		MemoryMiB  int         `json:"memoryMiB"`
		Timeout    int64       `json:"timeoutNs"`
		Env        [][2]string `json:"env"`
	}{format, host, k.WasmSHA256, k.ABI, k.MemoryMiB, int64(k.Timeout), env})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// entry is the file's content.
type entry struct {
	Format         int    `json:"format"`
	Key            string `json:"key"`            // Key.digest, also the file's name
	WasmSHA256     string `json:"wasmSHA256"`     // the module it describes
	ManifestSHA256 string `json:"manifestSHA256"` // of Manifest
	Manifest       []byte `json:"manifest"`       // exactly as the guest wrote it (base64 in the file)
}

// Options configures a [Cache].
type Options struct {
	// Dir holds the entries; it is created (mode 0700) if missing. Required.
	Dir string
	// Host identifies the program that describes the modules: [HostID] of its
	// executable. Required: entries of another build are never used.
	Host string
	// Logger hears of entries ignored and not written; nil discards.
	Logger *slog.Logger
}

// Cache is a directory of describe results. It is safe for concurrent use, also by
// several processes on one directory.
type Cache struct {
	dir    string
	host   string
	logger *slog.Logger
}

// Open prepares the directory. It refuses one that others than its owner may write.
func Open(opts Options) (*Cache, error) {
	if opts.Dir == "" || opts.Host == "" {
		return nil, errors.New("manifest cache: a directory and a host ID are required")
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("manifest cache: %w", err)
	}
	info, err := os.Lstat(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("manifest cache: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("manifest cache %s: not a directory", opts.Dir)
	}
	if info.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("manifest cache %s: mode %v lets others write it; want 0700", opts.Dir, info.Mode().Perm())
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Cache{dir: opts.Dir, host: opts.Host, logger: logger}
	c.prune(time.Now())
	return c, nil
}

// MaxAge is how long an entry no start has used is kept: every build of the server
// and every new module writes new entries, and Open removes those unused this long.
const MaxAge = 30 * 24 * time.Hour

// prune removes entries (and temporary files left by a crash) last used before
// now-MaxAge. A hit marks its entry used (Get).
func (c *Cache) prune(now time.Time) {
	des, err := os.ReadDir(c.dir)
	if err != nil {
		c.logger.Warn("manifest cache not pruned", "dir", c.dir, "err", err)
		return
	}
	for _, de := range des {
		name := de.Name()
		if !de.Type().IsRegular() || !(strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".tmp-")) {
			continue
		}
		info, err := de.Info()
		if err != nil || now.Sub(info.ModTime()) < MaxAge {
			continue
		}
		if err := os.Remove(filepath.Join(c.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			c.logger.Warn("manifest cache entry not pruned", "file", name, "err", err)
		}
	}
}

func (c *Cache) path(digest string) string { return filepath.Join(c.dir, digest+".json") }

// Get returns the manifest cached under k. A missing entry is a miss; a damaged or
// mismatched one is logged and is a miss too.
func (c *Cache) Get(k Key) (manifest []byte, ok bool) {
	digest := k.digest(c.host)
	path := c.path(digest)
	b, err := readEntry(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	if err == nil {
		manifest, err = decode(b, digest, k.WasmSHA256)
	}
	if err != nil {
		c.logger.Warn("manifest cache entry ignored; describing the plugin again", "file", path, "err", err)
		return nil, false
	}
	now := time.Now()
	_ = os.Chtimes(path, now, now) // used: kept by prune; a read-only directory only loses that
	return manifest, true
}

// readEntry reads a regular file of at most MaxEntryBytes, following no symbolic link
// and never blocking on a FIFO.
func readEntry(path string) ([]byte, error) {
	info, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%v)", info.Mode().Type())
	}
	if info.Size() > MaxEntryBytes {
		return nil, fmt.Errorf("%d bytes, more than the %d an entry may have", info.Size(), MaxEntryBytes)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxEntryBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxEntryBytes {
		return nil, fmt.Errorf("more than the %d bytes an entry may have", MaxEntryBytes)
	}
	return b, nil
}

// decode checks an entry's bytes strictly against the key digest and module it must
// name, and returns its manifest.
func decode(b []byte, digest, wasmSHA256 string) ([]byte, error) {
	var e entry
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&e); err != nil {
		return nil, fmt.Errorf("malformed: %w", err)
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("malformed: data after the entry")
	}
	sum := sha256.Sum256(e.Manifest)
	switch {
	case e.Format != format:
		return nil, fmt.Errorf("format %d, want %d", e.Format, format)
	case e.Key != digest:
		return nil, fmt.Errorf("it is the entry of key %.16s…, not of this file's key %.16s…", e.Key, digest)
	case e.WasmSHA256 != wasmSHA256:
		return nil, fmt.Errorf("it describes module sha256 %.16s…, not %.16s…", e.WasmSHA256, wasmSHA256)
	case len(e.Manifest) == 0 || len(e.Manifest) > MaxManifestBytes:
		return nil, fmt.Errorf("manifest of %d bytes, want 1-%d", len(e.Manifest), MaxManifestBytes)
	case e.ManifestSHA256 != hex.EncodeToString(sum[:]):
		return nil, errors.New("the manifest does not match its sha256: the file is damaged")
	}
	return e.Manifest, nil
}

// Drop removes the entry under k, which the host refused for why (its manifest did not
// parse: a forged entry), and logs it.
func (c *Cache) Drop(k Key, why error) {
	path := c.path(k.digest(c.host))
	c.logger.Warn("manifest cache entry refused; describing the plugin again", "file", path, "err", why)
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		c.logger.Warn("manifest cache entry not removed", "file", path, "err", err)
	}
}

// Put stores manifest under k, replacing any entry there. A manifest that cannot be
// stored (too large, a full disk) is logged: the next start describes the plugin again.
func (c *Cache) Put(k Key, manifest []byte) {
	if len(manifest) == 0 || len(manifest) > MaxManifestBytes {
		return
	}
	digest := k.digest(c.host)
	sum := sha256.Sum256(manifest)
	b, err := json.Marshal(entry{Format: format, Key: digest, WasmSHA256: k.WasmSHA256,
		ManifestSHA256: hex.EncodeToString(sum[:]), Manifest: manifest})
	if err == nil {
		err = writeAtomic(c.dir, c.path(digest), b)
	}
	if err != nil {
		c.logger.Warn("manifest not cached", "dir", c.dir, "err", err)
	}
}

// writeAtomic writes b to a temporary file (mode 0600) in dir and renames it to path,
// so that a reader sees the old entry or the new one, never part of one.
func writeAtomic(dir, path string, b []byte) error {
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o600)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}
