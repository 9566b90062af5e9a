package oci

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/errcode"

	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/cache"
)

// Registry holds what config says about one registry host.
type Registry struct {
	Host      string // host[:port], as in a source
	Username  string // "" means the Docker config's credential, if any
	Password  string
	PlainHTTP bool // http:// instead of https:// (for a registry on loopback or a private network)
}

// Options configure a [Client]. The zero value reads no credentials and speaks HTTPS.
type Options struct {
	// DockerConfig is a Docker config.json to read credentials from (its auths and
	// credential helpers). "" or a file that does not exist means none.
	DockerConfig string
	// Registries override the Docker config for their hosts.
	Registries []Registry
	// Timeout bounds one HTTP request, headers to last byte. 0 means 2 minutes.
	Timeout time.Duration
}

// Client fetches from and pushes to registries.
type Client struct {
	auth  *auth.Client
	plain map[string]bool
}

// NewClient returns a client with opts.
func NewClient(opts Options) (*Client, error) {
	static := map[string]auth.Credential{}
	plain := map[string]bool{}
	for _, r := range opts.Registries {
		if r.Username != "" {
			static[r.Host] = auth.Credential{Username: r.Username, Password: r.Password}
		}
		plain[r.Host] = r.PlainHTTP
	}
	var store credentials.Store
	if opts.DockerConfig != "" {
		s, err := credentials.NewStore(opts.DockerConfig, credentials.StoreOptions{})
		if err != nil {
			return nil, fmt.Errorf("docker config %s: %w", opts.DockerConfig, err)
		}
		store = s
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	ac := &auth.Client{
		Client: &http.Client{Timeout: timeout},
		Cache:  auth.NewCache(),
		Credential: func(ctx context.Context, host string) (auth.Credential, error) {
			if c, ok := static[host]; ok {
				return c, nil
			}
			if store == nil {
				return auth.EmptyCredential, nil
			}
			return store.Get(ctx, credentials.ServerAddressFromHostname(host))
		},
	}
	ac.SetUserAgent("mcp-wasmhost")
	return &Client{auth: ac, plain: plain}, nil
}

func (c *Client) repository(ref Ref) (*remote.Repository, error) {
	repo, err := remote.NewRepository(ref.Registry + "/" + ref.Repository)
	if err != nil {
		return nil, err
	}
	repo.Client = c.auth
	repo.PlainHTTP = c.plain[ref.Registry]
	repo.MaxMetadataBytes = MaxManifestBytes
	repo.ReferrerListMaxPages = 8 // a registry cannot page a pull forever
	return repo, nil
}

// get fetches one manifest or blob by reference, reading at most max bytes of the body
// into the cache under want (or, for a tag, under the digest of the bytes received).
// It returns that digest and the registry's Content-Type.
func (c *Client) get(ctx context.Context, store *cache.Cache, ref Ref, kind, reference, want string, size, max int64) (string, string, error) {
	rr := registry.Reference{Registry: ref.Registry, Repository: ref.Repository, Reference: reference}
	ctx = auth.AppendRepositoryScope(ctx, rr, auth.ActionPull)
	scheme := "https"
	if c.plain[ref.Registry] {
		scheme = "http"
	}
	url := fmt.Sprintf("%s://%s/v2/%s/%s/%s", scheme, ref.Registry, ref.Repository, kind, reference)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", "", err
	}
	if kind == "manifests" {
		req.Header.Set("Accept", strings.Join([]string{MediaTypeOCIManifest, MediaTypeOCIIndex, MediaTypeDockerManifest, MediaTypeDockerList}, ", "))
	}
	resp, err := c.auth.Do(req)
	if err != nil {
		return "", "", classify(ref, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return "", "", fmt.Errorf("%s %s: %w", ref.Registry+"/"+ref.Repository, reference, ErrNotFound)
	default:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return "", "", fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(b)))
	}
	// Content-Length is not believed: the body is cut at the size the caller expects.
	limit := max
	if size >= 0 && size < limit {
		limit = size
	}
	if want == "" { // a tag: hash what arrives
		b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
		if err != nil {
			return "", "", classify(ref, err)
		}
		if int64(len(b)) > limit {
			return "", "", fmt.Errorf("%s %s: over %d bytes: %w", ref, kind, limit, ErrTooLarge)
		}
		d, err := store.Put(b)
		return d, resp.Header.Get("Content-Type"), err
	}
	body := &counting{r: resp.Body}
	err = store.Write(want, body, limit)
	switch {
	case errors.Is(err, cache.ErrTooLarge) && size >= 0 && size < max:
		return "", "", fmt.Errorf("%s %s %s: the registry sent more than the %d bytes the manifest names: %w", ref.Registry+"/"+ref.Repository, kind, want, size, ErrDigestMismatch)
	case err != nil:
		if body.err != nil {
			return "", "", classify(ref, body.err)
		}
		return "", "", fmt.Errorf("%s %s %s: %w", ref.Registry+"/"+ref.Repository, kind, want, err)
	}
	if size >= 0 && body.n != size {
		// Unreachable in practice (the digest matched), but a short read is a mismatch.
		return "", "", fmt.Errorf("%s %s %s: %d bytes, the manifest names %d: %w", ref.Registry+"/"+ref.Repository, kind, want, body.n, size, ErrDigestMismatch)
	}
	return want, resp.Header.Get("Content-Type"), nil
}

type counting struct {
	r   io.Reader
	n   int64
	err error
}

func (c *counting) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err != nil && !errors.Is(err, io.EOF) {
		c.err = err
	}
	return n, err
}

// FetchManifest fetches the manifest ref names into store and returns its digest,
// computed from the bytes received (for a digest reference, they must match it).
func (c *Client) FetchManifest(ctx context.Context, store *cache.Cache, ref Ref) (string, *Manifest, error) {
	d, ctype, err := c.get(ctx, store, ref, "manifests", ref.Reference(), ref.Digest, -1, MaxManifestBytes)
	if err != nil {
		return "", nil, err
	}
	b, err := store.Read(d, MaxManifestBytes)
	if err != nil {
		return "", nil, err
	}
	ctype, _, _ = strings.Cut(ctype, ";")
	m, err := ParseManifest(b, strings.TrimSpace(ctype))
	if err != nil {
		return "", nil, fmt.Errorf("%s (%s): %w", ref, d, err)
	}
	return d, m, nil
}

// FetchBlob fetches the blob desc into store unless it is there already, at most max
// bytes.
func (c *Client) FetchBlob(ctx context.Context, store *cache.Cache, ref Ref, desc ocispec.Descriptor, max int64) error {
	if desc.Size > max {
		return fmt.Errorf("%s blob %s: %d bytes, over %d: %w", ref, desc.Digest, desc.Size, max, ErrTooLarge)
	}
	if _, err := store.Verify(desc.Digest.String()); err == nil {
		return nil
	}
	_, _, err := c.get(ctx, store, ref, "blobs", desc.Digest.String(), desc.Digest.String(), desc.Size, max)
	return err
}

// Bundles fetches into store the Sigstore bundles attached to the manifest subject:
// referrers of the bundle artifact type (through the referrers API, or its fallback
// tag), then the cosign tag sha256-<hex>.sig. It returns their digests, in that order.
// A registry that holds none returns no error and no digests.
func (c *Client) Bundles(ctx context.Context, store *cache.Cache, ref Ref, subject ocispec.Descriptor) ([]string, error) {
	repo, err := c.repository(ref)
	if err != nil {
		return nil, err
	}
	var manifests []string
	err = repo.Referrers(ctx, subject, "", func(referrers []ocispec.Descriptor) error {
		for _, d := range referrers {
			if !strings.HasPrefix(d.ArtifactType, "application/vnd.dev.sigstore.bundle") || len(manifests) == 16 {
				continue
			}
			// The digest goes into a URL: checked before it is fetched.
			if err := checkDescriptor("referrer", d, MaxManifestBytes); err != nil {
				return err
			}
			manifests = append(manifests, d.Digest.String())
		}
		return nil
	})
	if err != nil && !errors.Is(err, errdef.ErrNotFound) {
		return nil, fmt.Errorf("referrers of %s: %w", subject.Digest, classify(ref, err))
	}
	var bundles []string
	collect := func(r Ref) error {
		_, m, err := c.FetchManifest(ctx, store, r)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, l := range m.Layers {
			if !strings.HasPrefix(l.MediaType, "application/vnd.dev.sigstore.bundle") {
				continue // cosign's older simple-signing layers are not read
			}
			if err := c.FetchBlob(ctx, store, ref, l, MaxBundleBytes); err != nil {
				return err
			}
			bundles = append(bundles, l.Digest.String())
		}
		return nil
	}
	for _, d := range manifests {
		if err := collect(ref.At(d)); err != nil {
			return nil, fmt.Errorf("signature %s: %w", d, err)
		}
	}
	h, err := cache.Hex(subject.Digest.String())
	if err != nil {
		return nil, fmt.Errorf("signatures of %s: %w", ref, err)
	}
	sig := ref
	sig.Digest, sig.Tag = "", "sha256-"+h+".sig"
	if err := collect(sig); err != nil {
		return nil, fmt.Errorf("signature tag %s: %w", sig.Tag, err)
	}
	return bundles, nil
}

// classify wraps a transport failure as ErrUnreachable and a 404 as ErrNotFound.
func classify(ref Ref, err error) error {
	var op *net.OpError
	var dns *net.DNSError
	var resp *errcode.ErrorResponse
	switch {
	case errors.Is(err, errdef.ErrNotFound):
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	case errors.As(err, &resp) && resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	case errors.Is(err, auth.ErrBasicCredentialNotFound):
		return fmt.Errorf("%s asks for credentials and none are configured (docker login, or username and password_file in [[server.distribution.registries]]): %w", ref.Registry, err)
	case errors.As(err, &op), errors.As(err, &dns), errors.Is(err, context.DeadlineExceeded), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%s: %w: %w", ref.Registry, ErrUnreachable, err)
	}
	return err
}
