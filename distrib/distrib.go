package distrib

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/cache"
	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/lock"
	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/oci"
	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/verify"
)

// ErrNotLocked is returned by Open for a source the lockfile does not pin (or pins for
// another source): the operator must run pull.
var ErrNotLocked = errors.New("not in the lockfile: run mcp-wasmhost pull")

// Source is one plugin from a registry.
type Source struct {
	// Name is the plugin's name, the lockfile's key.
	Name string
	// Ref is where it comes from.
	Ref oci.Ref
	// Policy is its signature policy; nil means verify = "none", which is logged.
	Policy *verify.Policy
}

// Options are shared by Pull and Open.
type Options struct {
	// Cache holds every blob. Required.
	Cache *cache.Cache
	// Client reaches registries; Pull only (Open never uses the network).
	Client *oci.Client
	// Logger gets warnings (verify = "none", an unreachable registry). Nil means
	// slog.Default().
	Logger *slog.Logger
	// Now is the time written in the lockfile; nil means time.Now.
	Now func() time.Time
}

func (o Options) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.Default()
	}
	return o.Logger
}

// Pull resolves src, fetches what it names into the cache, verifies it and returns its
// lockfile entry.
func Pull(ctx context.Context, opts Options, src Source) (lock.Entry, error) {
	return pull(ctx, opts, src)
}

// PullOrKeep is Pull, except that when the registry cannot be reached and prev (the
// entry the lockfile holds, or nil) is for the same source, prev is checked from the
// cache with [Open] and kept, with a warning.
func PullOrKeep(ctx context.Context, opts Options, src Source, prev *lock.Entry) (lock.Entry, error) {
	e, err := pull(ctx, opts, src)
	if err != nil && errors.Is(err, oci.ErrUnreachable) && prev != nil && prev.Source == src.Ref.String() {
		if r, oerr := Open(ctx, opts, src, prev); oerr == nil {
			opts.logger().Warn("registry unreachable: keeping the locked digest, checked from the cache",
				"plugin", src.Name, "source", prev.Source, "digest", prev.Digest, "err", err)
			kept := *prev
			kept.Signer = r.Signer // who verified now, not what the file says
			return kept, nil
		}
	}
	return e, err
}

func pull(ctx context.Context, opts Options, src Source) (lock.Entry, error) {
	if opts.Client == nil || opts.Cache == nil {
		return lock.Entry{}, errors.New("distrib: Pull needs a client and a cache")
	}
	store, client, ref := opts.Cache, opts.Client, src.Ref
	pinned, m, err := client.FetchManifest(ctx, store, ref)
	if err != nil {
		return lock.Entry{}, fmt.Errorf("pull %s: %w", ref, err)
	}
	e := lock.Entry{Source: ref.String(), Digest: pinned}
	if m.IsIndex() {
		d, err := m.Platform()
		if err != nil {
			return lock.Entry{}, fmt.Errorf("pull %s (%s): %w", ref, pinned, err)
		}
		if e.Manifest, m, err = client.FetchManifest(ctx, store, ref.At(d.Digest.String())); err != nil {
			return lock.Entry{}, fmt.Errorf("pull %s: %w", ref, err)
		}
		if m.IsIndex() {
			return lock.Entry{}, fmt.Errorf("pull %s: index %s points at another index", ref, e.Manifest)
		}
	}
	layer, layout, err := m.Module()
	if err != nil {
		return lock.Entry{}, fmt.Errorf("pull %s (%s): %w", ref, pinned, err)
	}
	if err := client.FetchBlob(ctx, store, ref, layer, oci.MaxLayerBytes); err != nil {
		return lock.Entry{}, fmt.Errorf("pull %s: layer: %w", ref, err)
	}
	e.Layout = string(layout)
	if e.Module, err = module(store, layer); err != nil {
		return lock.Entry{}, fmt.Errorf("pull %s: %w", ref, err)
	}
	if src.Policy == nil {
		opts.logger().Warn("plugin signature not checked: verify = \"none\"", "plugin", src.Name, "source", e.Source, "digest", pinned)
	} else {
		size, err := sizeOf(store, pinned)
		if err != nil {
			return lock.Entry{}, err
		}
		subject := ocispec.Descriptor{MediaType: oci.MediaTypeOCIManifest, Digest: digest.Digest(pinned), Size: size}
		bundles, err := client.Bundles(ctx, store, ref, subject)
		if err != nil {
			return lock.Entry{}, fmt.Errorf("pull %s: %w", ref, err)
		}
		if e.Bundle, e.Signer, err = verifyAny(store, *src.Policy, bundles, pinned); err != nil {
			return lock.Entry{}, fmt.Errorf("plugin %q (%s, %s): %w", src.Name, ref, pinned, err)
		}
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	e.Pulled = now().UTC().Truncate(time.Second)
	return e, nil
}

// Resolved is a plugin ready to load: its module file in the cache and its pin.
type Resolved struct {
	Path   string // the module, in the cache
	SHA256 string // its hex digest, for plugins.Spec.SHA256
	Signer *verify.Signer
}

// Open checks the locked entry e of src from the cache alone: the manifest, the module
// and the bundle are hashed again, the module must be the one the manifest names, and
// the signature is verified again under the current policy. It never uses the network.
func Open(ctx context.Context, opts Options, src Source, e *lock.Entry) (Resolved, error) {
	if e == nil || e.Source != src.Ref.String() {
		return Resolved{}, fmt.Errorf("plugin %q: %s: %w", src.Name, src.Ref, ErrNotLocked)
	}
	if src.Ref.Digest != "" && src.Ref.Digest != e.Digest {
		return Resolved{}, fmt.Errorf("plugin %q: the lockfile pins %s, the source %s: %w", src.Name, e.Digest, src.Ref.Digest, ErrNotLocked)
	}
	store := opts.Cache
	fail := func(err error) (Resolved, error) {
		return Resolved{}, fmt.Errorf("plugin %q (%s, %s): %w (run mcp-wasmhost pull)", src.Name, e.Source, e.Digest, err)
	}
	b, err := store.Read(e.Digest, oci.MaxManifestBytes)
	if err != nil {
		return fail(err)
	}
	m, err := oci.ParseManifest(b, oci.MediaTypeOCIManifest)
	if err != nil {
		return fail(err)
	}
	if m.IsIndex() {
		d, err := m.Platform()
		if err != nil {
			return fail(err)
		}
		if d.Digest.String() != e.Manifest {
			return fail(fmt.Errorf("the index now selects %s, the lockfile %s", d.Digest, e.Manifest))
		}
		if b, err = store.Read(e.Manifest, oci.MaxManifestBytes); err != nil {
			return fail(err)
		}
		if m, err = oci.ParseManifest(b, oci.MediaTypeOCIManifest); err != nil {
			return fail(err)
		}
	}
	layer, layout, err := m.Module()
	if err != nil {
		return fail(err)
	}
	if string(layout) != e.Layout {
		return fail(fmt.Errorf("layout %s, the lockfile says %s", layout, e.Layout))
	}
	if layer.Digest.String() != e.Module {
		got, err := module(store, layer)
		if err != nil {
			return fail(err)
		}
		if got != e.Module {
			return fail(fmt.Errorf("the manifest's module is %s, the lockfile pins %s: %w", got, e.Module, oci.ErrDigestMismatch))
		}
	}
	path, err := store.Verify(e.Module)
	if err != nil {
		return fail(err)
	}
	sum, err := cache.Hex(e.Module)
	if err != nil {
		return fail(err)
	}
	r := Resolved{Path: path, SHA256: sum}
	if src.Policy == nil {
		opts.logger().Warn("plugin signature not checked: verify = \"none\"", "plugin", src.Name, "source", e.Source, "digest", e.Digest)
		return r, nil
	}
	if e.Bundle == "" {
		return fail(fmt.Errorf("%w: the lockfile holds no signature (pulled with verify = \"none\")", verify.ErrUnsigned))
	}
	_, signer, err := verifyAny(store, *src.Policy, []string{e.Bundle}, e.Digest)
	if err != nil {
		return Resolved{}, fmt.Errorf("plugin %q (%s, %s): %w", src.Name, e.Source, e.Digest, err)
	}
	r.Signer = signer
	return r, nil
}

// module returns the digest of the module a cached layer holds, storing the module when
// it is not the layer itself.
func module(store *cache.Cache, layer ocispec.Descriptor) (string, error) {
	b, err := store.Read(layer.Digest.String(), oci.MaxLayerBytes)
	if err != nil {
		return "", err
	}
	wasm, err := oci.Extract(b, layer.MediaType)
	if err != nil {
		return "", fmt.Errorf("layer %s: %w", layer.Digest, err)
	}
	return store.Put(wasm)
}

func sizeOf(store *cache.Cache, d string) (int64, error) {
	b, err := store.Read(d, oci.MaxManifestBytes)
	return int64(len(b)), err
}

// verifyAny accepts the first bundle that verifies; with none, the refusal is the first
// bundle's, or ErrUnsigned when there are none.
func verifyAny(store *cache.Cache, p verify.Policy, bundles []string, manifestDigest string) (string, *verify.Signer, error) {
	v, err := verify.New(p)
	if err != nil {
		return "", nil, err
	}
	if len(bundles) == 0 {
		return "", nil, fmt.Errorf("%w: no Sigstore bundle is attached to %s (referrers or cosign tag)", verify.ErrUnsigned, manifestDigest)
	}
	var first error
	for _, d := range bundles {
		b, err := store.Read(d, verify.MaxBundleBytes)
		if err == nil {
			var s verify.Signer
			if s, err = v.Verify(b, manifestDigest); err == nil {
				return d, &s, nil
			}
		}
		if first == nil {
			first = fmt.Errorf("bundle %s: %w", d, err)
		}
	}
	if len(bundles) > 1 {
		return "", nil, fmt.Errorf("none of %d bundles verifies; %w", len(bundles), first)
	}
	return "", nil, first
}
