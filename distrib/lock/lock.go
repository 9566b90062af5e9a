package lock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/cache"
	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/verify"
)

// FileName is the lockfile's name, in the config file's directory.
const FileName = "mcp-wasmhost.lock"

// Version is the format written; other versions are refused.
const Version = 1

// MaxBytes caps the file read.
const MaxBytes = 4 << 20

// File is the whole lockfile.
type File struct {
	Version int `json:"version"`
	// Plugins by plugin name.
	Plugins map[string]Entry `json:"plugins"`
}

// Entry pins one plugin.
type Entry struct {
	// Source is the config's source when pulled; a different source needs a new pull.
	Source string `json:"source"`
	// Digest is the manifest digest the source resolved to: the pin.
	Digest string `json:"digest"`
	// Manifest is the platform manifest chosen when Digest is an index, else "".
	Manifest string `json:"manifest,omitempty"`
	// Layout is how the module was packed (oci.Layout).
	Layout string `json:"layout"`
	// Module is the sha256 digest of the module itself.
	Module string `json:"module"`
	// Bundle is the digest of the signature bundle that verified, "" for verify = "none".
	Bundle string `json:"bundle,omitempty"`
	// Signer is who signed, per that bundle; nil for verify = "none".
	Signer *verify.Signer `json:"signer,omitempty"`
	// Pulled is when pull wrote the entry.
	Pulled time.Time `json:"pulled"`
}

// Path is the lockfile beside configPath.
func Path(configPath string) string {
	return filepath.Join(filepath.Dir(configPath), FileName)
}

// Read reads the lockfile at path. A file that does not exist reads as an empty File.
func Read(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &File{Version: Version, Plugins: map[string]Entry{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lockfile: %w", err)
	}
	f, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("lockfile %s: %w", path, err)
	}
	return f, nil
}

// Parse decodes and checks a lockfile's bytes; unknown fields are errors.
func Parse(b []byte) (*File, error) {
	if len(b) > MaxBytes {
		return nil, fmt.Errorf("%d bytes, over %d", len(b), MaxBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, err
	}
	if f.Version != Version {
		return nil, fmt.Errorf("version %d: this mcp-wasmhost reads version %d (run mcp-wasmhost pull)", f.Version, Version)
	}
	if f.Plugins == nil {
		f.Plugins = map[string]Entry{}
	}
	for name, e := range f.Plugins {
		if err := e.check(); err != nil {
			return nil, fmt.Errorf("plugin %q: %w", name, err)
		}
	}
	return &f, nil
}

func (e Entry) check() error {
	if !strings.HasPrefix(e.Source, "oci://") {
		return fmt.Errorf("source %q is not oci://", e.Source)
	}
	for _, d := range []struct{ key, v string }{{"digest", e.Digest}, {"module", e.Module}} {
		if _, err := cache.Hex(d.v); err != nil {
			return fmt.Errorf("%s: %w", d.key, err)
		}
	}
	for _, d := range []struct{ key, v string }{{"manifest", e.Manifest}, {"bundle", e.Bundle}} {
		if d.v == "" {
			continue
		}
		if _, err := cache.Hex(d.v); err != nil {
			return fmt.Errorf("%s: %w", d.key, err)
		}
	}
	if (e.Bundle == "") != (e.Signer == nil) {
		return errors.New("bundle and signer go together")
	}
	return nil
}

// Marshal is the file's bytes: indented JSON, plugins sorted by name, a final newline.
func (f *File) Marshal() ([]byte, error) {
	f.Version = Version
	names := make([]string, 0, len(f.Plugins))
	for n := range f.Plugins {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := f.Plugins[n].check(); err != nil {
			return nil, fmt.Errorf("lockfile: plugin %q: %w", n, err)
		}
	}
	b, err := json.MarshalIndent(f, "", "  ") // encoding/json sorts map keys
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Write writes f to path atomically (a temporary file renamed over it).
func (f *File) Write(path string) error {
	b, err := f.Marshal()
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".lock-*")
	if err != nil {
		return fmt.Errorf("lockfile: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("lockfile: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("lockfile: %w", err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("lockfile: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("lockfile: %w", err)
	}
	return nil
}
