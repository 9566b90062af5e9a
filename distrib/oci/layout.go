package oci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/cache"
)

// Limits on what a registry may send.
const (
	MaxManifestBytes = 4 << 20   // one manifest or index
	MaxLayerBytes    = 256 << 20 // one layer blob
	MaxBundleBytes   = 1 << 20   // one signature bundle
	MaxUnpackedBytes = 512 << 20 // a gzip layer, unpacked
	MaxModuleBytes   = MaxLayerBytes
)

// Media types read and written.
const (
	MediaTypeOCIManifest    = ocispec.MediaTypeImageManifest
	MediaTypeOCIIndex       = ocispec.MediaTypeImageIndex
	MediaTypeDockerManifest = "application/vnd.docker.distribution.manifest.v2+json"
	MediaTypeDockerList     = "application/vnd.docker.distribution.manifest.list.v2+json"

	// The CNCF TAG Runtime Wasm artifact.
	MediaTypeWasmConfig   = "application/vnd.wasm.config.v0+json"
	MediaTypeWasmLayer    = "application/wasm"
	ArtifactTypeWasm      = "application/vnd.wasm.module.v1+wasm"
	mediaTypeWasmLayerOld = "application/vnd.wasm.content.layer.v1+wasm" // wasm-to-oci

	// hyper-mcp's ORAS artifact.
	ArtifactTypeHyperMCP = "application/vnd.hyper-mcp.plugin.v2"

	// Image configs and layers (hyper-mcp's Docker image layout).
	mediaTypeDockerConfig  = "application/vnd.docker.container.image.v1+json"
	mediaTypeDockerLayerGz = "application/vnd.docker.image.rootfs.diff.tar.gzip"
	mediaTypeDockerLayer   = "application/vnd.docker.image.rootfs.diff.tar"

	// Sigstore bundles as OCI referrers (cosign --new-bundle-format).
	MediaTypeBundle = "application/vnd.dev.sigstore.bundle.v0.3+json"
)

// Layout names how a module is packed in a manifest.
type Layout string

const (
	LayoutWasm        Layout = "wasm-artifact"    // CNCF: config application/vnd.wasm.config.v0+json, one application/wasm layer
	LayoutHyperORAS   Layout = "hyper-mcp-oras"   // artifactType application/vnd.hyper-mcp.plugin.v2, one layer: the module or a tar of it
	LayoutDockerImage Layout = "hyper-mcp-docker" // an image whose tar layers hold /plugin.wasm
)

// Errors a caller can test with errors.Is. Each is wrapped with what and where.
var (
	ErrDigestMismatch   = cache.ErrMismatch
	ErrUnknownMediaType = errors.New("unknown media type")
	ErrTooLarge         = cache.ErrTooLarge
	ErrNotFound         = errors.New("not found")
	ErrUnreachable      = errors.New("registry unreachable")
)

// Manifest is the part of an image manifest or index that is read. It is decoded from
// untrusted bytes by [ParseManifest].
type Manifest struct {
	MediaType    string               `json:"mediaType"`
	ArtifactType string               `json:"artifactType,omitempty"`
	Config       ocispec.Descriptor   `json:"config"`
	Layers       []ocispec.Descriptor `json:"layers"`
	Manifests    []ocispec.Descriptor `json:"manifests"`
	Subject      *ocispec.Descriptor  `json:"subject,omitempty"`
}

// IsIndex reports whether m is an index (a list of manifests per platform).
func (m *Manifest) IsIndex() bool {
	return m.MediaType == MediaTypeOCIIndex || m.MediaType == MediaTypeDockerList
}

// ParseManifest decodes a manifest or index. contentType is the registry's Content-Type,
// used only when the document names no mediaType. Descriptors must carry sha256 digests
// and sizes within the limits.
func ParseManifest(b []byte, contentType string) (*Manifest, error) {
	if len(b) > MaxManifestBytes {
		return nil, fmt.Errorf("manifest of %d bytes: over %d: %w", len(b), MaxManifestBytes, ErrTooLarge)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if m.MediaType == "" {
		m.MediaType = contentType
	}
	switch m.MediaType {
	case MediaTypeOCIManifest, MediaTypeDockerManifest:
		if len(m.Manifests) > 0 {
			return nil, fmt.Errorf("manifest %s lists manifests", m.MediaType)
		}
		if err := checkDescriptor("config", m.Config, MaxManifestBytes); err != nil {
			return nil, err
		}
		if len(m.Layers) == 0 || len(m.Layers) > 128 {
			return nil, fmt.Errorf("manifest has %d layers: want 1..128", len(m.Layers))
		}
		for i, l := range m.Layers {
			if err := checkDescriptor(fmt.Sprintf("layers[%d]", i), l, MaxLayerBytes); err != nil {
				return nil, err
			}
		}
	case MediaTypeOCIIndex, MediaTypeDockerList:
		if len(m.Layers) > 0 {
			return nil, fmt.Errorf("index %s lists layers", m.MediaType)
		}
		if len(m.Manifests) == 0 || len(m.Manifests) > 1024 {
			return nil, fmt.Errorf("index has %d manifests: want 1..1024", len(m.Manifests))
		}
		for i, d := range m.Manifests {
			if err := checkDescriptor(fmt.Sprintf("manifests[%d]", i), d, MaxManifestBytes); err != nil {
				return nil, err
			}
		}
	default:
		return nil, fmt.Errorf("manifest media type %q: %w", m.MediaType, ErrUnknownMediaType)
	}
	if m.Subject != nil {
		if err := checkDescriptor("subject", *m.Subject, MaxManifestBytes); err != nil {
			return nil, err
		}
	}
	return &m, nil
}

func checkDescriptor(where string, d ocispec.Descriptor, max int64) error {
	if _, err := cache.Hex(d.Digest.String()); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if d.Size < 0 {
		return fmt.Errorf("%s: size %d", where, d.Size)
	}
	if d.Size > max {
		return fmt.Errorf("%s: %d bytes, over %d: %w", where, d.Size, max, ErrTooLarge)
	}
	return nil
}

// Platform picks from an index the manifest for wasip1/wasm, else linux/amd64.
func (m *Manifest) Platform() (ocispec.Descriptor, error) {
	for _, want := range []ocispec.Platform{{OS: "wasip1", Architecture: "wasm"}, {OS: "linux", Architecture: "amd64"}} {
		for _, d := range m.Manifests {
			if d.Platform != nil && d.Platform.OS == want.OS && d.Platform.Architecture == want.Architecture {
				return d, nil
			}
		}
	}
	return ocispec.Descriptor{}, fmt.Errorf("index lists no wasip1/wasm or linux/amd64 manifest: %w", ErrNotFound)
}

// Module picks the layer that holds the module and says how it is packed.
func (m *Manifest) Module() (ocispec.Descriptor, Layout, error) {
	switch {
	case m.Config.MediaType == MediaTypeWasmConfig || m.ArtifactType == ArtifactTypeWasm:
		if len(m.Layers) != 1 || (m.Layers[0].MediaType != MediaTypeWasmLayer && m.Layers[0].MediaType != mediaTypeWasmLayerOld) {
			return ocispec.Descriptor{}, "", fmt.Errorf("wasm artifact: want one %s layer, have %s: %w", MediaTypeWasmLayer, layerTypes(m), ErrUnknownMediaType)
		}
		return m.Layers[0], LayoutWasm, nil
	case m.ArtifactType == ArtifactTypeHyperMCP || m.Config.MediaType == ArtifactTypeHyperMCP:
		if len(m.Layers) != 1 {
			return ocispec.Descriptor{}, "", fmt.Errorf("hyper-mcp artifact: want one layer, have %d", len(m.Layers))
		}
		if !isWasmType(m.Layers[0].MediaType) && !isTarType(m.Layers[0].MediaType) {
			return ocispec.Descriptor{}, "", fmt.Errorf("hyper-mcp artifact layer %q: %w", m.Layers[0].MediaType, ErrUnknownMediaType)
		}
		return m.Layers[0], LayoutHyperORAS, nil
	case m.Config.MediaType == mediaTypeDockerConfig || m.Config.MediaType == ocispec.MediaTypeImageConfig:
		// The top layer that is a tar; hyper-mcp's images are FROM scratch with one COPY.
		for i := len(m.Layers) - 1; i >= 0; i-- {
			if isTarType(m.Layers[i].MediaType) {
				return m.Layers[i], LayoutDockerImage, nil
			}
		}
		return ocispec.Descriptor{}, "", fmt.Errorf("image has no tar layer (layers %s): %w", layerTypes(m), ErrUnknownMediaType)
	}
	return ocispec.Descriptor{}, "", fmt.Errorf("config %q, artifactType %q, layers %s: not a Wasm artifact, hyper-mcp artifact or image: %w",
		m.Config.MediaType, m.ArtifactType, layerTypes(m), ErrUnknownMediaType)
}

func layerTypes(m *Manifest) string {
	var s []string
	for _, l := range m.Layers {
		s = append(s, fmt.Sprintf("%q", l.MediaType))
	}
	return "[" + strings.Join(s, ", ") + "]"
}

func isWasmType(t string) bool {
	return t == MediaTypeWasmLayer || t == mediaTypeWasmLayerOld || t == "application/vnd.module.wasm.content.layer.v1+wasm"
}

func isTarType(t string) bool {
	switch t {
	case ocispec.MediaTypeImageLayer, ocispec.MediaTypeImageLayerGzip, mediaTypeDockerLayer, mediaTypeDockerLayerGz:
		return true
	}
	return false
}

var wasmMagic = []byte{0, 'a', 's', 'm'}

// Extract returns the module held by a layer's bytes: the layer itself, or /plugin.wasm
// (else the only .wasm file) of a tar, gzip-compressed or not. A gzip layer is unpacked
// to at most MaxUnpackedBytes and the module is at most MaxModuleBytes.
func Extract(layer []byte, mediaType string) ([]byte, error) {
	if bytes.HasPrefix(layer, wasmMagic) {
		if isWasmType(mediaType) || isTarType(mediaType) {
			return layer, nil
		}
	}
	if isWasmType(mediaType) {
		return nil, errors.New("layer is not a WebAssembly module (no \\0asm header)")
	}
	if !isTarType(mediaType) {
		return nil, fmt.Errorf("layer %q: %w", mediaType, ErrUnknownMediaType)
	}
	var r io.Reader = bytes.NewReader(layer)
	if len(layer) >= 2 && layer[0] == 0x1f && layer[1] == 0x8b {
		gz, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("gzip layer: %w", err)
		}
		r = &limited{r: gz, left: MaxUnpackedBytes}
	}
	var found, only []byte
	wasmFiles := 0
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("tar layer: %w", err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		name := path.Clean("/" + h.Name)
		if !strings.HasSuffix(name, ".wasm") {
			continue
		}
		if h.Size > MaxModuleBytes {
			return nil, fmt.Errorf("tar entry %s: %d bytes: %w", name, h.Size, ErrTooLarge)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("tar entry %s: %w", name, err)
		}
		if !bytes.HasPrefix(b, wasmMagic) {
			continue
		}
		wasmFiles++
		only = b
		if name == "/plugin.wasm" {
			found = b // a later layer entry replaces an earlier one, as in a file system
		}
	}
	switch {
	case found != nil:
		return found, nil
	case wasmFiles == 1:
		return only, nil
	case wasmFiles == 0:
		return nil, errors.New("tar layer holds no /plugin.wasm")
	}
	return nil, fmt.Errorf("tar layer holds %d .wasm files and no /plugin.wasm", wasmFiles)
}

// limited fails, rather than stopping quietly, once more than left bytes are read.
type limited struct {
	r    io.Reader
	left int64
}

func (l *limited) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, fmt.Errorf("gzip layer unpacks to more than %d bytes: %w", MaxUnpackedBytes, ErrTooLarge)
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}
