package distrib_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/mcp-wasmhost/mcp-wasmhost/distrib"
	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/cache"
	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/lock"
	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/oci"
	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/verify"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/registrytest"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/sigtest"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
)

const (
	identity = "dev@plugins.example"
	issuer   = "https://issuer.example"
)

// env is a real registry, a client that speaks plain HTTP to it and an empty cache.
type env struct {
	t      *testing.T
	reg    *registrytest.Registry
	client *oci.Client
	store  *cache.Cache
	logs   *testenv.SyncBuffer
}

func newEnv(t *testing.T) *env {
	t.Helper()
	reg := registrytest.Start(t, registrytest.Options{})
	return newEnvAt(t, reg, reg.Host)
}

// newEnvAt talks to host (the registry, or a proxy in front of it).
func newEnvAt(t *testing.T, reg *registrytest.Registry, host string) *env {
	t.Helper()
	client, err := oci.NewClient(oci.Options{Registries: []oci.Registry{{Host: host, PlainHTTP: true}}, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	store, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, reg: reg, client: client, store: store, logs: &testenv.SyncBuffer{}}
}

func (e *env) opts() distrib.Options {
	return distrib.Options{Cache: e.store, Client: e.client, Logger: slog.New(slog.NewTextHandler(e.logs, nil))}
}

func (e *env) ref(host, repo, tag string) oci.Ref {
	return oci.Ref{Registry: host, Repository: repo, Tag: tag}
}

func (e *env) push(ref oci.Ref, wasm []byte, layout oci.Layout) ocispec.Descriptor {
	e.t.Helper()
	d, err := e.client.Push(context.Background(), ref, wasm, layout)
	if err != nil {
		e.t.Fatalf("push %s: %v", ref, err)
	}
	return d
}

func (e *env) attach(ref oci.Ref, subject ocispec.Descriptor, bundle []byte, cosignTag bool) {
	e.t.Helper()
	if _, err := e.client.AttachBundle(context.Background(), ref, subject, bundle, cosignTag); err != nil {
		e.t.Fatalf("attach: %v", err)
	}
}

// attachSimpleSigning tags a cosign legacy signature of subject: the layout cosign 2
// writes without --new-bundle-format; its signature is a placeholder, since nothing reads it.
func (e *env) attachSimpleSigning(ref oci.Ref, subject ocispec.Descriptor) {
	e.t.Helper()
	ctx := context.Background()
	payload, _ := json.Marshal(map[string]any{"critical": map[string]any{
		"identity": map[string]string{"docker-reference": ref.Registry + "/" + ref.Repository},
		"image":    map[string]string{"docker-manifest-digest": subject.Digest.String()},
		"type":     "cosign container image signature"}})
	layer, err := e.client.PushBlob(ctx, ref, "application/vnd.dev.cosign.simplesigning.v1+json", payload)
	if err != nil {
		e.t.Fatal(err)
	}
	layer.Annotations = map[string]string{"dev.cosignproject.cosign/signature": "MEUCIQ=="}
	config, err := e.client.PushBlob(ctx, ref, ocispec.MediaTypeImageConfig, []byte(`{"architecture":"","os":"","rootfs":{"type":"layers","diff_ids":[]}}`))
	if err != nil {
		e.t.Fatal(err)
	}
	m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, Config: config, Layers: []ocispec.Descriptor{layer}}
	m.SchemaVersion = 2
	body, _ := json.Marshal(m)
	sig := ref.At("")
	sig.Tag = "sha256-" + subject.Digest.Encoded() + ".sig"
	if _, err := e.client.PushManifest(ctx, sig, m.MediaType, body); err != nil {
		e.t.Fatal(err)
	}
}

func textkit(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(testenv.Path("plugins/textkit/textkit.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPullVerifyOpen pulls a keyed-signed plugin (bundle as a referrer), then opens it
// from the cache: the module is the one pushed and the signer is the key.
func TestPullVerifyOpen(t *testing.T) {
	e := newEnv(t)
	wasm := textkit(t)
	key := sigtest.NewKey(t)
	ref := e.ref(e.reg.Host, "plugins/textkit", "1.0.0")
	desc := e.push(ref, wasm, oci.LayoutWasm)
	e.attach(ref, desc, key.Sign(t, desc.Digest.String()), false)

	src := distrib.Source{Name: "textkit", Ref: ref, Policy: &verify.Policy{KeyPEM: key.PublicPEM}}
	entry, err := distrib.Pull(context.Background(), e.opts(), src)
	if err != nil {
		t.Fatalf("Pull: %v", err)
	}
	if entry.Digest != desc.Digest.String() || entry.Module != cache.Digest(wasm) || entry.Layout != string(oci.LayoutWasm) {
		t.Errorf("entry = %+v, want digest %s, module %s", entry, desc.Digest, cache.Digest(wasm))
	}
	if entry.Signer == nil || entry.Signer.Kind != "key" || entry.Bundle == "" {
		t.Errorf("signer = %+v, bundle %q; want a key signer", entry.Signer, entry.Bundle)
	}
	r, err := distrib.Open(context.Background(), distrib.Options{Cache: e.store}, src, &entry)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	got, _ := os.ReadFile(r.Path)
	if !bytes.Equal(got, wasm) || "sha256:"+r.SHA256 != cache.Digest(wasm) {
		t.Errorf("Open gave %s (%d bytes), want the module pushed", r.Path, len(got))
	}
}

// TestKeyless verifies a keyless bundle from a virtual Sigstore, found through the cosign
// tag sha256-<hex>.sig, with the identity and issuer pinned.
func TestKeyless(t *testing.T) {
	e := newEnv(t)
	vs := sigtest.NewSigstore(t)
	ref := e.ref(e.reg.Host, "plugins/keyless", "v1")
	desc := e.push(ref, textkit(t), oci.LayoutWasm)
	e.attach(ref, desc, vs.Sign(t, identity, issuer, desc.Digest.String()), true)
	src := distrib.Source{Name: "kl", Ref: ref, Policy: &verify.Policy{Identity: identity, Issuer: issuer, TrustedRootJSON: vs.TrustedRoot(t)}}
	entry, err := distrib.Pull(context.Background(), e.opts(), src)
	if err != nil {
		t.Fatalf("Pull: %v", err)
	}
	if s := entry.Signer; s == nil || s.Kind != "keyless" || s.Identity != identity || s.Issuer != issuer || s.Time.IsZero() {
		t.Fatalf("signer = %+v, want keyless %s from %s with a log time", s, identity, issuer)
	}
	if _, err := distrib.Open(context.Background(), distrib.Options{Cache: e.store}, src, &entry); err != nil {
		t.Fatalf("Open: %v", err)
	}
}

// TestRefusals: each way a signature can be wrong is refused with its reason.
func TestRefusals(t *testing.T) {
	e := newEnv(t)
	wasm := textkit(t)
	other := append(bytes.Clone(wasm), 0) // a valid module header with different bytes
	key, wrongKey := sigtest.NewKey(t), sigtest.NewKey(t)
	vs, otherVS := sigtest.NewSigstore(t), sigtest.NewSigstore(t)
	keyed := &verify.Policy{KeyPEM: key.PublicPEM}
	keyless := &verify.Policy{Identity: identity, Issuer: issuer, TrustedRootJSON: vs.TrustedRoot(t)}
	ctx := context.Background()
	tests := []struct {
		name   string
		policy *verify.Policy
		setup  func(ref oci.Ref)
		want   error
	}{
		{"unsigned", keyed, func(ref oci.Ref) { e.push(ref, wasm, oci.LayoutWasm) }, verify.ErrUnsigned},
		{"wrong key", keyed, func(ref oci.Ref) {
			d := e.push(ref, wasm, oci.LayoutWasm)
			e.attach(ref, d, wrongKey.Sign(t, d.Digest.String()), false)
		}, verify.ErrWrongKey},
		{"keyless bundle under a key policy", keyed, func(ref oci.Ref) {
			d := e.push(ref, wasm, oci.LayoutWasm)
			e.attach(ref, d, vs.Sign(t, identity, issuer, d.Digest.String()), false)
		}, verify.ErrWrongKey},
		{"wrong identity", keyless, func(ref oci.Ref) {
			d := e.push(ref, wasm, oci.LayoutWasm)
			e.attach(ref, d, vs.Sign(t, "mallory@evil.example", issuer, d.Digest.String()), false)
		}, verify.ErrWrongIdentity},
		{"wrong issuer", keyless, func(ref oci.Ref) {
			d := e.push(ref, wasm, oci.LayoutWasm)
			e.attach(ref, d, vs.Sign(t, identity, "https://evil.example", d.Digest.String()), false)
		}, verify.ErrWrongIdentity},
		{"keyless without its log entry", keyless, func(ref oci.Ref) {
			d := e.push(ref, wasm, oci.LayoutWasm)
			b := vs.Sign(t, identity, issuer, d.Digest.String())
			e.attach(ref, d, sigtest.EditTlog(t, b, func([]map[string]any) []map[string]any { return nil }), false)
		}, verify.ErrUntrusted},
		{"keyless with another signature's log entry", keyless, func(ref oci.Ref) {
			d := e.push(ref, wasm, oci.LayoutWasm)
			b := vs.Sign(t, identity, issuer, d.Digest.String())
			theirs := sigtest.Tlog(t, vs.Sign(t, identity, issuer, cache.Digest([]byte("another image"))))
			e.attach(ref, d, sigtest.EditTlog(t, b, func([]map[string]any) []map[string]any { return theirs }), true)
		}, verify.ErrUntrusted},
		{"cosign legacy simple signing", keyless, func(ref oci.Ref) {
			// What cosign 2 writes by default: the sha256-<hex>.sig tag, its layers a
			// simple-signing payload with the signature in annotations. Not read.
			d := e.push(ref, wasm, oci.LayoutWasm)
			e.attachSimpleSigning(ref, d)
		}, verify.ErrUnsigned},
		{"untrusted root", keyless, func(ref oci.Ref) {
			d := e.push(ref, wasm, oci.LayoutWasm)
			e.attach(ref, d, otherVS.Sign(t, identity, issuer, d.Digest.String()), false)
		}, verify.ErrUntrusted},
		{"tampered layer", keyed, func(ref oci.Ref) {
			// The layer is changed and a new manifest tagged; the signature of the
			// original is attached to it.
			d := e.push(ref, wasm, oci.LayoutWasm)
			sig := key.Sign(t, d.Digest.String())
			d2 := e.push(ref, other, oci.LayoutWasm)
			e.attach(ref, d2, sig, false)
		}, verify.ErrTampered},
		{"replaced tag", keyless, func(ref oci.Ref) {
			// Another image under the tag, the original's signature copied to its cosign tag.
			d := e.push(ref, wasm, oci.LayoutHyperORAS)
			sig := vs.Sign(t, identity, issuer, d.Digest.String())
			d2 := e.push(ref, wasm, oci.LayoutWasm)
			e.attach(ref, d2, sig, true)
		}, verify.ErrTampered},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := e.ref(e.reg.Host, "refusals/case"+string(rune('a'+i)), "1")
			tt.setup(ref)
			_, err := distrib.Pull(ctx, e.opts(), distrib.Source{Name: "p", Ref: ref, Policy: tt.policy})
			if !errors.Is(err, tt.want) {
				t.Fatalf("Pull = %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want.Error()+":") {
				t.Errorf("refusal %q does not name the reason %q", err, tt.want)
			}
		})
	}
}

// TestWarmCacheRegistryStopped: once pulled, Open needs no registry, and pull keeps the
// locked entry (with a warning) when the registry is unreachable.
func TestWarmCacheRegistryStopped(t *testing.T) {
	e := newEnv(t)
	key := sigtest.NewKey(t)
	ref := e.ref(e.reg.Host, "plugins/warm", "1")
	d := e.push(ref, textkit(t), oci.LayoutWasm)
	e.attach(ref, d, key.Sign(t, d.Digest.String()), false)
	src := distrib.Source{Name: "warm", Ref: ref, Policy: &verify.Policy{KeyPEM: key.PublicPEM}}
	entry, err := distrib.Pull(context.Background(), e.opts(), src)
	if err != nil {
		t.Fatal(err)
	}
	e.reg.Stop()
	if _, err := distrib.Open(context.Background(), e.opts(), src, &entry); err != nil {
		t.Fatalf("Open with the registry stopped: %v", err)
	}
	if _, err := distrib.Pull(context.Background(), e.opts(), src); !errors.Is(err, oci.ErrUnreachable) {
		t.Fatalf("Pull with the registry stopped = %v, want ErrUnreachable", err)
	}
	kept, err := distrib.PullOrKeep(context.Background(), e.opts(), src, &entry)
	if err != nil || kept.Digest != entry.Digest {
		t.Fatalf("PullOrKeep = %+v, %v; want the locked entry", kept, err)
	}
	if !strings.Contains(e.logs.String(), "registry unreachable") {
		t.Errorf("no warning logged: %s", e.logs)
	}
	// The entry kept names the signer verified now, not the one the file claims.
	edited := entry
	edited.Signer = &verify.Signer{Kind: "key", KeyID: strings.Repeat("0", 64)}
	if kept, err := distrib.PullOrKeep(context.Background(), e.opts(), src, &edited); err != nil || *kept.Signer != *entry.Signer {
		t.Errorf("PullOrKeep of an entry with another key_id = signer %+v, %v; want %+v", kept.Signer, err, entry.Signer)
	}
}

// TestPolicyChangedAtStart: with the cache warm and the registry stopped, Open (what
// every start runs) verifies the locked bundle under the policy in force then, so a key
// or identity changed since the pull refuses the plugin with its reason.
func TestPolicyChangedAtStart(t *testing.T) {
	e := newEnv(t)
	wasm := textkit(t)
	key := sigtest.NewKey(t)
	vs := sigtest.NewSigstore(t)
	root := vs.TrustedRoot(t)
	ctx := context.Background()
	keyedRef := e.ref(e.reg.Host, "start/keyed", "1")
	d := e.push(keyedRef, wasm, oci.LayoutWasm)
	e.attach(keyedRef, d, key.Sign(t, d.Digest.String()), false)
	keylessRef := e.ref(e.reg.Host, "start/keyless", "1")
	d = e.push(keylessRef, wasm, oci.LayoutHyperORAS)
	e.attach(keylessRef, d, vs.Sign(t, identity, issuer, d.Digest.String()), true)

	keyedPolicy := &verify.Policy{KeyPEM: key.PublicPEM}
	keylessPolicy := &verify.Policy{Identity: identity, Issuer: issuer, TrustedRootJSON: root}
	keyedEntry, err := distrib.Pull(ctx, e.opts(), distrib.Source{Name: "k", Ref: keyedRef, Policy: keyedPolicy})
	if err != nil {
		t.Fatal(err)
	}
	keylessEntry, err := distrib.Pull(ctx, e.opts(), distrib.Source{Name: "kl", Ref: keylessRef, Policy: keylessPolicy})
	if err != nil {
		t.Fatal(err)
	}
	e.reg.Stop()

	tests := []struct {
		name   string
		ref    oci.Ref
		entry  *lock.Entry
		policy *verify.Policy
		want   error // nil: opens
	}{
		{"keyed, policy unchanged", keyedRef, &keyedEntry, keyedPolicy, nil},
		{"keyless, policy unchanged", keylessRef, &keylessEntry, keylessPolicy, nil},
		{"another key", keyedRef, &keyedEntry, &verify.Policy{KeyPEM: sigtest.NewKey(t).PublicPEM}, verify.ErrWrongKey},
		{"keyless policy over a keyed pull", keyedRef, &keyedEntry, keylessPolicy, verify.ErrWrongIdentity},
		{"another identity", keylessRef, &keylessEntry, &verify.Policy{Identity: "other@plugins.example", Issuer: issuer, TrustedRootJSON: root}, verify.ErrWrongIdentity},
		{"another issuer", keylessRef, &keylessEntry, &verify.Policy{Identity: identity, Issuer: "https://other.example", TrustedRootJSON: root}, verify.ErrWrongIdentity},
		{"key policy over a keyless pull", keylessRef, &keylessEntry, keyedPolicy, verify.ErrWrongKey},
		{"another trusted root", keylessRef, &keylessEntry, &verify.Policy{Identity: identity, Issuer: issuer, TrustedRootJSON: sigtest.NewSigstore(t).TrustedRoot(t)}, verify.ErrUntrusted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := distrib.Open(ctx, distrib.Options{Cache: e.store}, distrib.Source{Name: "p", Ref: tt.ref, Policy: tt.policy}, tt.entry)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Open = %v, want it to open", err)
				}
				return
			}
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.want.Error()+":") {
				t.Fatalf("Open = %v, want %v named", err, tt.want)
			}
		})
	}
}

// TestTamperedCache: a cached module or bundle changed on disk is refused at Open.
func TestTamperedCache(t *testing.T) {
	e := newEnv(t)
	key := sigtest.NewKey(t)
	ref := e.ref(e.reg.Host, "plugins/cache", "1")
	d := e.push(ref, textkit(t), oci.LayoutWasm)
	e.attach(ref, d, key.Sign(t, d.Digest.String()), false)
	src := distrib.Source{Name: "c", Ref: ref, Policy: &verify.Policy{KeyPEM: key.PublicPEM}}
	entry, err := distrib.Pull(context.Background(), e.opts(), src)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{entry.Module, entry.Bundle} {
		p, _ := e.store.Path(d)
		orig, _ := os.ReadFile(p)
		changed := bytes.Clone(orig)
		changed[len(changed)-1] ^= 1
		os.WriteFile(p, changed, 0o600)
		if _, err := distrib.Open(context.Background(), e.opts(), src, &entry); !errors.Is(err, cache.ErrCorrupt) {
			t.Errorf("Open with %s changed on disk = %v, want ErrCorrupt", d, err)
		}
		os.WriteFile(p, orig, 0o600)
	}
	// A lockfile entry for another source, or none, is refused with "run pull".
	other := src
	other.Ref.Tag = "2"
	for _, le := range []*lock.Entry{nil, &entry} {
		if _, err := distrib.Open(context.Background(), e.opts(), other, le); !errors.Is(err, distrib.ErrNotLocked) || !strings.Contains(err.Error(), "run mcp-wasmhost pull") {
			t.Errorf("Open of an unlocked source = %v, want ErrNotLocked", err)
		}
	}
}

// TestVerifyNone: verify = "none" pulls without a signature and is logged at pull and open.
func TestVerifyNone(t *testing.T) {
	e := newEnv(t)
	ref := e.ref(e.reg.Host, "plugins/none", "1")
	e.push(ref, textkit(t), oci.LayoutWasm)
	src := distrib.Source{Name: "none", Ref: ref}
	entry, err := distrib.Pull(context.Background(), e.opts(), src)
	if err != nil || entry.Signer != nil || entry.Bundle != "" {
		t.Fatalf("Pull = %+v, %v; want no signer", entry, err)
	}
	if _, err := distrib.Open(context.Background(), e.opts(), src, &entry); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(e.logs.String(), `verify = \"none\"`); n != 2 {
		t.Errorf("%d warnings, want one at pull and one at open:\n%s", n, e.logs)
	}
	// The entry pulled without a signature does not satisfy a policy added later.
	src.Policy = &verify.Policy{KeyPEM: sigtest.NewKey(t).PublicPEM}
	if _, err := distrib.Open(context.Background(), e.opts(), src, &entry); !errors.Is(err, verify.ErrUnsigned) {
		t.Errorf("Open under a new policy = %v, want ErrUnsigned", err)
	}
}
