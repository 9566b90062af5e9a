package oci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"errors"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/errdef"
)

// PushBlob uploads b (unless the registry has it) and returns its descriptor.
func (c *Client) PushBlob(ctx context.Context, ref Ref, mediaType string, b []byte) (ocispec.Descriptor, error) {
	repo, err := c.repository(ref)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	desc := ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(b), Size: int64(len(b))}
	if err := repo.Blobs().Push(ctx, desc, bytes.NewReader(b)); err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
		return ocispec.Descriptor{}, fmt.Errorf("push blob to %s: %w", ref, classify(ref, err))
	}
	return desc, nil
}

// PushManifest uploads a manifest of mediaType and, when ref has a tag, points the tag at
// it. It returns the manifest's descriptor.
func (c *Client) PushManifest(ctx context.Context, ref Ref, mediaType string, body []byte) (ocispec.Descriptor, error) {
	repo, err := c.repository(ref)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	desc := ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(body), Size: int64(len(body))}
	if ref.Tag != "" {
		err = repo.Manifests().PushReference(ctx, desc, bytes.NewReader(body), ref.Tag)
	} else {
		err = repo.Manifests().Push(ctx, desc, bytes.NewReader(body))
	}
	if err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
		return ocispec.Descriptor{}, fmt.Errorf("push manifest to %s: %w", ref, classify(ref, err))
	}
	return desc, nil
}

// Push publishes wasm at ref in layout and returns the manifest's descriptor (its
// digest is what a signature signs). [LayoutWasm] is the standard; the other two are
// hyper-mcp's, written for tests and for registries shared with hyper-mcp.
func (c *Client) Push(ctx context.Context, ref Ref, wasm []byte, layout Layout) (ocispec.Descriptor, error) {
	if !bytes.HasPrefix(wasm, wasmMagic) {
		return ocispec.Descriptor{}, fmt.Errorf("not a WebAssembly module (no \\0asm header)")
	}
	if len(wasm) > MaxModuleBytes {
		return ocispec.Descriptor{}, fmt.Errorf("module of %d bytes: over %d: %w", len(wasm), MaxModuleBytes, ErrTooLarge)
	}
	var m ocispec.Manifest
	m.SchemaVersion = 2
	switch layout {
	case LayoutWasm:
		layer, err := c.PushBlob(ctx, ref, MediaTypeWasmLayer, wasm)
		if err != nil {
			return ocispec.Descriptor{}, err
		}
		// No creation time: the same module always gives the same digest.
		cfg, _ := json.Marshal(map[string]any{"architecture": "wasm", "os": "wasip1", "layerDigests": []string{layer.Digest.String()}})
		config, err := c.PushBlob(ctx, ref, MediaTypeWasmConfig, cfg)
		if err != nil {
			return ocispec.Descriptor{}, err
		}
		m.MediaType, m.ArtifactType, m.Config, m.Layers = MediaTypeOCIManifest, ArtifactTypeWasm, config, []ocispec.Descriptor{layer}
	case LayoutHyperORAS:
		layer, err := c.PushBlob(ctx, ref, MediaTypeWasmLayer, wasm)
		if err != nil {
			return ocispec.Descriptor{}, err
		}
		config, err := c.PushBlob(ctx, ref, ocispec.MediaTypeEmptyJSON, []byte("{}"))
		if err != nil {
			return ocispec.Descriptor{}, err
		}
		m.MediaType, m.ArtifactType, m.Config, m.Layers = MediaTypeOCIManifest, ArtifactTypeHyperMCP, config, []ocispec.Descriptor{layer}
	case LayoutDockerImage:
		tarball, gz, err := dockerLayer(wasm)
		if err != nil {
			return ocispec.Descriptor{}, err
		}
		layer, err := c.PushBlob(ctx, ref, mediaTypeDockerLayerGz, gz)
		if err != nil {
			return ocispec.Descriptor{}, err
		}
		cfg, _ := json.Marshal(map[string]any{"architecture": "amd64", "os": "linux",
			"config": map[string]any{"Entrypoint": []string{"/plugin.wasm"}},
			"rootfs": map[string]any{"type": "layers", "diff_ids": []string{digest.FromBytes(tarball).String()}}})
		config, err := c.PushBlob(ctx, ref, mediaTypeDockerConfig, cfg)
		if err != nil {
			return ocispec.Descriptor{}, err
		}
		m.MediaType, m.Config, m.Layers = MediaTypeDockerManifest, config, []ocispec.Descriptor{layer}
	default:
		return ocispec.Descriptor{}, fmt.Errorf("layout %q: want %s, %s or %s", layout, LayoutWasm, LayoutHyperORAS, LayoutDockerImage)
	}
	body, err := json.Marshal(m)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	return c.PushManifest(ctx, ref, m.MediaType, body)
}

// dockerLayer is what `COPY plugin.wasm /plugin.wasm` in a FROM scratch image makes: a
// tar holding plugin.wasm, and its gzip.
func dockerLayer(wasm []byte) (tarball, gz []byte, err error) {
	var t bytes.Buffer
	tw := tar.NewWriter(&t)
	if err := tw.WriteHeader(&tar.Header{Name: "plugin.wasm", Mode: 0o644, Size: int64(len(wasm)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)}); err != nil {
		return nil, nil, err
	}
	tw.Write(wasm)
	if err := tw.Close(); err != nil {
		return nil, nil, err
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(t.Bytes())
	if err := zw.Close(); err != nil {
		return nil, nil, err
	}
	return t.Bytes(), z.Bytes(), nil
}

// AttachBundle publishes a Sigstore bundle for the manifest subject: as a referrer
// (artifactType [MediaTypeBundle], found through the referrers API or its fallback
// tag), or, with cosignTag, as the manifest of the tag sha256-<hex>.sig. This is what
// `cosign sign --new-bundle-format` publishes; tests use it to sign.
func (c *Client) AttachBundle(ctx context.Context, ref Ref, subject ocispec.Descriptor, bundle []byte, cosignTag bool) (ocispec.Descriptor, error) {
	layer, err := c.PushBlob(ctx, ref, MediaTypeBundle, bundle)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	config, err := c.PushBlob(ctx, ref, ocispec.MediaTypeEmptyJSON, []byte("{}"))
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	m := ocispec.Manifest{MediaType: MediaTypeOCIManifest, ArtifactType: MediaTypeBundle, Config: config, Layers: []ocispec.Descriptor{layer}}
	m.SchemaVersion = 2
	target := ref.At("")
	if cosignTag {
		h := subject.Digest.Encoded()
		target.Tag = "sha256-" + h + ".sig"
	} else {
		s := subject
		s.Annotations, s.Platform, s.ArtifactType = nil, nil, ""
		m.Subject = &s
	}
	body, err := json.Marshal(m)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	return c.PushManifest(ctx, target, m.MediaType, body)
}
