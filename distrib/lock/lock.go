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
	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/oci"
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
	var le *LineError
	if errors.As(err, &le) {
		le.Path = path
		return nil, fmt.Errorf("%w (correct the entry, or delete it and run mcp-wasmhost pull)", le)
	}
	if err != nil {
		return nil, fmt.Errorf("lockfile %s: %w", path, err)
	}
	return f, nil
}

// LineError is a lockfile error at a line: a JSON syntax or type error, or the entry
// (the line of its plugin name) that fails a check.
type LineError struct {
	Path string // the file, "" from Parse
	Line int    // from 1
	Err  error
}

func (e *LineError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("line %d: %v", e.Line, e.Err)
	}
	return fmt.Sprintf("lockfile %s:%d: %v", e.Path, e.Line, e.Err)
}
func (e *LineError) Unwrap() error { return e.Err }

// Parse decodes and checks a lockfile's bytes; unknown fields are errors.
func Parse(b []byte) (*File, error) {
	if len(b) > MaxBytes {
		return nil, fmt.Errorf("%d bytes, over %d", len(b), MaxBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			return nil, &LineError{Line: lineAt(b, syn.Offset), Err: err}
		case errors.As(err, &typ):
			return nil, &LineError{Line: lineAt(b, typ.Offset), Err: err}
		}
		return nil, err
	}
	if f.Version != Version {
		return nil, fmt.Errorf("version %d: this mcp-wasmhost reads version %d (run mcp-wasmhost pull)", f.Version, Version)
	}
	if f.Plugins == nil {
		f.Plugins = map[string]Entry{}
	}
	names := make([]string, 0, len(f.Plugins))
	for n := range f.Plugins {
		names = append(names, n)
	}
	sort.Strings(names) // the first bad entry by name, the same on every run
	for _, name := range names {
		if err := f.Plugins[name].check(); err != nil {
			err = fmt.Errorf("plugin %q: %w", name, err)
			if line := entryLine(b, name); line > 0 {
				return nil, &LineError{Line: line, Err: err}
			}
			return nil, err
		}
	}
	return &f, nil
}

// lineAt is the line (from 1) holding byte offset off of b.
func lineAt(b []byte, off int64) int {
	off = min(max(off, 0), int64(len(b)))
	return 1 + bytes.Count(b[:off], []byte("\n"))
}

// entryLine is the line of b where the key of plugin name's entry ends, or 0 when b
// cannot be walked to it. With the key repeated, it is the last one, the one
// encoding/json keeps.
func entryLine(b []byte, name string) int {
	dec := json.NewDecoder(bytes.NewReader(b))
	skip := func() bool { var v json.RawMessage; return dec.Decode(&v) == nil }
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return 0
	}
	line := 0
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return line
		}
		if k != "plugins" {
			if !skip() {
				return line
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('{') {
			return line
		}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return line
			}
			if k == name {
				line = lineAt(b, dec.InputOffset())
			}
			if !skip() {
				return line
			}
		}
		if _, err := dec.Token(); err != nil { // the plugins object's '}'
			return line
		}
	}
	return line
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
	switch oci.Layout(e.Layout) {
	case oci.LayoutWasm, oci.LayoutHyperORAS, oci.LayoutDockerImage:
	default:
		return fmt.Errorf("layout %q: want %q, %q or %q", e.Layout, oci.LayoutWasm, oci.LayoutHyperORAS, oci.LayoutDockerImage)
	}
	if (e.Bundle == "") != (e.Signer == nil) {
		return errors.New("bundle and signer go together")
	}
	if e.Signer != nil {
		return checkSigner(*e.Signer)
	}
	return nil
}

// checkSigner checks a signer's form: what verify writes for each kind, nothing else.
func checkSigner(s verify.Signer) error {
	switch s.Kind {
	case "key":
		if len(s.KeyID) != 64 || strings.Trim(s.KeyID, "0123456789abcdef") != "" {
			return fmt.Errorf("signer.key_id %q: want 64 lower-case hex digits (the sha256 of the public key)", s.KeyID)
		}
		if s.Identity != "" || s.Issuer != "" {
			return errors.New("signer: a key signer has no identity or issuer")
		}
	case "keyless":
		if s.Identity == "" || s.Issuer == "" {
			return errors.New("signer: a keyless signer needs identity and issuer")
		}
		if s.KeyID != "" {
			return errors.New("signer: a keyless signer has no key_id")
		}
	default:
		return fmt.Errorf("signer.kind %q: want \"key\" or \"keyless\"", s.Kind)
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
