package distrib_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/mcp-wasmhost/mcp-wasmhost/distrib"
	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/cache"
	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/oci"
	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/verify"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/sigtest"
)

// proxy sits in front of the real registry and changes what it answers.
type proxy struct {
	host   string
	mu     sync.Mutex
	change func(r *http.Request, body []byte) []byte // nil: pass through
	paths  []string                                  // every request's path, in order
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	p := &proxy{}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: target})
	rp.ModifyResponse = func(resp *http.Response) error {
		p.mu.Lock()
		change := p.change
		p.mu.Unlock()
		if change == nil || resp.Request.Method != http.MethodGet || resp.StatusCode != http.StatusOK {
			return nil
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		resp.Body.Close()
		body = change(resp.Request, body)
		if resp.Header.Get("Docker-Content-Digest") != "" { // a hostile registry is consistent
			resp.Header.Set("Docker-Content-Digest", cache.Digest(body))
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
		return nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.paths = append(p.paths, r.URL.Path)
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	p.host = ln.Addr().String()
	return p
}

func (p *proxy) set(f func(r *http.Request, body []byte) []byte) {
	p.mu.Lock()
	p.change = f
	p.mu.Unlock()
}

// requested is the paths of the requests the proxy received so far.
func (p *proxy) requested() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.paths)
}

// TestHostileRegistry: a registry that alters, pads or inflates what it sends is caught
// by the hashes and caps, with typed errors, and nothing it sent is cached under a
// digest it does not match.
func TestHostileRegistry(t *testing.T) {
	base := newEnv(t)
	px := startProxy(t, base.reg.Host)
	wasm := textkit(t)
	key := sigtest.NewKey(t)
	moduleDigest := cache.Digest(wasm)
	direct := base.ref(base.reg.Host, "hostile/plugin", "1")
	d := base.push(direct, wasm, oci.LayoutWasm)
	base.attach(direct, d, key.Sign(t, d.Digest.String()), false)
	policy := &verify.Policy{KeyPEM: key.PublicPEM}

	isModule := func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/blobs/"+moduleDigest) }
	isTag := func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/manifests/1") }
	tests := []struct {
		name   string
		change func(r *http.Request, body []byte) []byte
		want   error
	}{
		{"altered layer", func(r *http.Request, b []byte) []byte {
			if isModule(r) {
				b = bytes.Clone(b)
				b[len(b)/2] ^= 0xff
			}
			return b
		}, oci.ErrDigestMismatch},
		{"padded layer", func(r *http.Request, b []byte) []byte {
			if isModule(r) {
				b = append(bytes.Clone(b), make([]byte, 4096)...)
			}
			return b
		}, oci.ErrDigestMismatch},
		{"truncated layer", func(r *http.Request, b []byte) []byte {
			if isModule(r) {
				b = b[:len(b)-1]
			}
			return b
		}, oci.ErrDigestMismatch},
		{"manifest over 4 MiB", func(r *http.Request, b []byte) []byte {
			if isTag(r) {
				b = append(bytes.Clone(b[:len(b)-1]), []byte(`,"x":"`+strings.Repeat("a", oci.MaxManifestBytes)+`"}`)...)
			}
			return b
		}, oci.ErrTooLarge},
		{"manifest altered under its tag", func(r *http.Request, b []byte) []byte {
			// Same meaning, other bytes: its digest is computed from what arrived,
			// and no signature is attached to that digest.
			if isTag(r) {
				b = append(bytes.Clone(b), ' ')
			}
			return b
		}, verify.ErrUnsigned},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnvAt(t, base.reg, px.host)
			px.set(tt.change)
			defer px.set(nil)
			ref := e.ref(px.host, "hostile/plugin", "1")
			_, err := distrib.Pull(context.Background(), e.opts(), distrib.Source{Name: "h", Ref: ref, Policy: policy})
			if !errors.Is(err, tt.want) {
				t.Fatalf("Pull = %v, want %v", err, tt.want)
			}
			if e.store.Has(moduleDigest) {
				if _, err := e.store.Verify(moduleDigest); err != nil {
					t.Errorf("the cache holds a module under a digest it does not match: %v", err)
				}
			}
		})
	}
	// A referrer whose digest is a path is refused before anything is fetched with it:
	// the digest goes into a URL.
	t.Run("referrer digest is a path", func(t *testing.T) {
		e := newEnvAt(t, base.reg, px.host)
		fallback := "/manifests/sha256-" + d.Digest.Encoded() // oras's referrers tag
		px.set(func(r *http.Request, b []byte) []byte {
			if strings.HasSuffix(r.URL.Path, fallback) {
				b = bytes.ReplaceAll(b, []byte(`"digest":"sha256:`), []byte(`"digest":"sha256:../../`))
			}
			return b
		})
		defer px.set(nil)
		_, err := distrib.Pull(context.Background(), e.opts(), distrib.Source{Name: "h", Ref: e.ref(px.host, "hostile/plugin", "1"), Policy: policy})
		if err == nil || !strings.Contains(err.Error(), "referrer") || !strings.Contains(err.Error(), "sha256:../../") {
			t.Fatalf("Pull = %v, want the referrer's digest refused", err)
		}
		for _, p := range px.requested() {
			if strings.Contains(p, "..") {
				t.Errorf("requested %s", p)
			}
		}
	})

	// Through the same proxy, passing bytes unchanged, the pull succeeds.
	e := newEnvAt(t, base.reg, px.host)
	if _, err := distrib.Pull(context.Background(), e.opts(), distrib.Source{Name: "h", Ref: e.ref(px.host, "hostile/plugin", "1"), Policy: policy}); err != nil {
		t.Fatalf("Pull through an honest proxy: %v", err)
	}
}

// TestLayouts pulls the same module published in each layout read, and through an index.
func TestLayouts(t *testing.T) {
	e := newEnv(t)
	wasm := textkit(t)
	ctx := context.Background()
	for _, layout := range []oci.Layout{oci.LayoutWasm, oci.LayoutHyperORAS, oci.LayoutDockerImage} {
		t.Run(string(layout), func(t *testing.T) {
			ref := e.ref(e.reg.Host, "layouts/"+string(layout), "1")
			e.push(ref, wasm, layout)
			entry, err := distrib.Pull(ctx, e.opts(), distrib.Source{Name: "l", Ref: ref})
			if err != nil {
				t.Fatal(err)
			}
			if entry.Module != cache.Digest(wasm) || entry.Layout != string(layout) {
				t.Errorf("entry = %+v, want module %s in layout %s", entry, cache.Digest(wasm), layout)
			}
			if _, err := distrib.Open(ctx, e.opts(), distrib.Source{Name: "l", Ref: ref}, &entry); err != nil {
				t.Errorf("Open: %v", err)
			}
		})
	}
	t.Run("index", func(t *testing.T) {
		ref := e.ref(e.reg.Host, "layouts/index", "1")
		img := e.push(ref.At(""), wasm, oci.LayoutDockerImage)
		other := e.push(ref.At(""), append(bytes.Clone(wasm), 0), oci.LayoutDockerImage)
		img.Platform = &ocispec.Platform{OS: "linux", Architecture: "amd64"}
		other.Platform = &ocispec.Platform{OS: "linux", Architecture: "arm64"}
		index := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{other, img}}
		index.SchemaVersion = 2
		idx, _ := json.Marshal(index)
		pushed, err := e.client.PushManifest(ctx, ref, ocispec.MediaTypeImageIndex, idx)
		if err != nil {
			t.Fatal(err)
		}
		entry, err := distrib.Pull(ctx, e.opts(), distrib.Source{Name: "i", Ref: ref})
		if err != nil {
			t.Fatal(err)
		}
		if entry.Digest != pushed.Digest.String() || entry.Manifest != img.Digest.String() || entry.Module != cache.Digest(wasm) {
			t.Errorf("entry = %+v, want the index pinned, the linux/amd64 image chosen", entry)
		}
	})
}

// TestUnknownMediaType: a manifest that is none of the layouts, or a layer of another
// type, is refused as such.
func TestUnknownMediaType(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	wasm := textkit(t)
	tests := []struct {
		name          string
		config, layer string
		artifactType  string
	}{
		{"helm chart", "application/vnd.cncf.helm.config.v1+json", "application/vnd.cncf.helm.chart.content.v1.tar+gzip", ""},
		{"wasm config, other layer", oci.MediaTypeWasmConfig, "application/octet-stream", ""},
		{"hyper-mcp artifact, other layer", ocispec.MediaTypeEmptyJSON, "application/x-zip", oci.ArtifactTypeHyperMCP},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := e.ref(e.reg.Host, "unknown/case"+strconv.Itoa(i), "1")
			layer, err := e.client.PushBlob(ctx, ref, tt.layer, wasm)
			if err != nil {
				t.Fatal(err)
			}
			config, err := e.client.PushBlob(ctx, ref, tt.config, []byte("{}"))
			if err != nil {
				t.Fatal(err)
			}
			m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: tt.artifactType, Config: config, Layers: []ocispec.Descriptor{layer}}
			m.SchemaVersion = 2
			body, _ := json.Marshal(m)
			if _, err := e.client.PushManifest(ctx, ref, m.MediaType, body); err != nil {
				t.Fatal(err)
			}
			_, err = distrib.Pull(ctx, e.opts(), distrib.Source{Name: "u", Ref: ref})
			if !errors.Is(err, oci.ErrUnknownMediaType) {
				t.Fatalf("Pull = %v, want ErrUnknownMediaType", err)
			}
		})
	}
	t.Run("not found", func(t *testing.T) {
		_, err := distrib.Pull(ctx, e.opts(), distrib.Source{Name: "n", Ref: e.ref(e.reg.Host, "unknown/none", "1")})
		if !errors.Is(err, oci.ErrNotFound) {
			t.Fatalf("Pull = %v, want ErrNotFound", err)
		}
	})
}
