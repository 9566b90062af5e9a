package oci

import (
	"fmt"
	"strings"

	"oras.land/oras-go/v2/registry"

	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/cache"
)

// Scheme starts every source.
const Scheme = "oci://"

// Ref is a parsed source: oci://REGISTRY/REPOSITORY:TAG or oci://REGISTRY/REPOSITORY@sha256:HEX
// (a tag and a digest together are refused: the digest would silently win).
type Ref struct {
	Registry   string // host[:port]
	Repository string
	Tag        string // "" when Digest is set
	Digest     string // "sha256:<hex>", "" when Tag is set
}

// ParseRef parses a source string.
func ParseRef(s string) (Ref, error) {
	rest, ok := strings.CutPrefix(s, Scheme)
	if !ok {
		return Ref{}, fmt.Errorf("source %q: want %sREGISTRY/REPOSITORY:TAG or @sha256:...", s, Scheme)
	}
	r, err := registry.ParseReference(rest)
	if err != nil {
		return Ref{}, fmt.Errorf("source %q: %w", s, err)
	}
	if r.Reference == "" {
		return Ref{}, fmt.Errorf("source %q: name a tag (:1.2.0) or a digest (@sha256:...)", s)
	}
	if name, _, found := strings.Cut(rest, "@"); found && strings.Contains(name[strings.LastIndex(name, "/")+1:], ":") {
		return Ref{}, fmt.Errorf("source %q: give a tag or a digest, not both", s)
	}
	ref := Ref{Registry: r.Registry, Repository: r.Repository}
	if err := r.ValidateReferenceAsDigest(); err == nil {
		if _, err := cache.Hex(r.Reference); err != nil {
			return Ref{}, fmt.Errorf("source %q: only sha256 digests are accepted: %w", s, err)
		}
		ref.Digest = r.Reference
	} else {
		ref.Tag = r.Reference
	}
	return ref, nil
}

// String is the source form of r.
func (r Ref) String() string {
	if r.Digest != "" {
		return Scheme + r.Registry + "/" + r.Repository + "@" + r.Digest
	}
	return Scheme + r.Registry + "/" + r.Repository + ":" + r.Tag
}

// Reference is the tag or the digest.
func (r Ref) Reference() string {
	if r.Digest != "" {
		return r.Digest
	}
	return r.Tag
}

// At returns r pinned to digest d.
func (r Ref) At(d string) Ref {
	r.Tag, r.Digest = "", d
	return r
}
