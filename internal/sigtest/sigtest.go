package sigtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"testing"
	"time"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	"google.golang.org/protobuf/encoding/protojson"
)

// Key is a signing key pair, as cosign generate-key-pair makes.
type Key struct {
	priv *ecdsa.PrivateKey
	// PublicPEM is what cosign.pub holds.
	PublicPEM []byte
}

// NewKey makes a P-256 key.
func NewKey(t testing.TB) *Key {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return &Key{priv: priv, PublicPEM: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})}
}

// Sign returns a bundle (v0.3, JSON) holding a message signature over the manifest
// digest ("sha256:<hex>"), with the public key as its verification material.
func (k *Key) Sign(t testing.TB, digest string) []byte {
	t.Helper()
	sum := decode(t, digest)
	sig, err := ecdsa.SignASN1(rand.Reader, k.priv, sum)
	if err != nil {
		t.Fatal(err)
	}
	pb := &protobundle.Bundle{
		MediaType: "application/vnd.dev.sigstore.bundle.v0.3+json",
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_PublicKey{PublicKey: &protocommon.PublicKeyIdentifier{Hint: ""}},
		},
		Content: &protobundle.Bundle_MessageSignature{MessageSignature: &protocommon.MessageSignature{
			MessageDigest: &protocommon.HashOutput{Algorithm: protocommon.HashAlgorithm_SHA2_256, Digest: sum},
			Signature:     sig,
		}},
	}
	return marshal(t, pb)
}

func decode(t testing.TB, digest string) []byte {
	t.Helper()
	if len(digest) != 71 || digest[:7] != "sha256:" {
		t.Fatalf("digest %q is not sha256:<hex>", digest)
	}
	b, err := hex.DecodeString(digest[7:])
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func marshal(t testing.TB, pb *protobundle.Bundle) []byte {
	t.Helper()
	b, err := protojson.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	var check bundle.Bundle
	if err := check.UnmarshalJSON(b); err != nil {
		t.Fatalf("the bundle made does not parse: %v", err)
	}
	return b
}

// Sigstore is a virtual Sigstore deployment.
type Sigstore struct {
	vs *ca.VirtualSigstore
}

// NewSigstore makes one.
func NewSigstore(t testing.TB) *Sigstore {
	t.Helper()
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	return &Sigstore{vs: vs}
}

// TrustedRoot is its trusted_root.json.
func (s *Sigstore) TrustedRoot(t testing.TB) []byte {
	t.Helper()
	// No CT log: the virtual CA's certificates carry no SCT, and a root that lists CT
	// logs makes verify require one.
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, s.vs.FulcioCertificateAuthorities(), nil,
		s.vs.TimestampingAuthorities(), rawIDs(t, s.vs.RekorLogs()))
	if err != nil {
		t.Fatal(err)
	}
	b, err := tr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rawIDs gives each log the raw key ID a trusted_root.json carries: the virtual
// Sigstore keeps the hex string's bytes, which would not survive a JSON round trip.
func rawIDs(t testing.TB, logs map[string]*root.TransparencyLog) map[string]*root.TransparencyLog {
	t.Helper()
	out := map[string]*root.TransparencyLog{}
	for id, l := range logs {
		raw, err := hex.DecodeString(id)
		if err != nil {
			t.Fatal(err)
		}
		c := *l
		c.ID = raw
		out[id] = &c
	}
	return out
}

// Sign returns a keyless bundle: a certificate for identity from issuer, a DSSE envelope
// whose in-toto statement names the manifest digest (what cosign sign
// --new-bundle-format writes for an image), and its transparency log entry with an
// inclusion proof.
func (s *Sigstore) Sign(t testing.TB, identity, issuer, digest string) []byte {
	t.Helper()
	sum := decode(t, digest)
	statement, _ := json.Marshal(map[string]any{
		"_type":         "https://in-toto.io/Statement/v1",
		"subject":       []any{map[string]any{"name": "plugin", "digest": map[string]string{"sha256": hex.EncodeToString(sum)}}},
		"predicateType": "https://sigstore.dev/cosign/sign/v1",
		"predicate":     map[string]any{},
	})
	e, err := s.vs.AttestAtTime(identity, issuer, statement, time.Now().Add(5*time.Minute), true)
	if err != nil {
		t.Fatal(err)
	}
	vc, err := e.VerificationContent()
	if err != nil {
		t.Fatal(err)
	}
	sc, err := e.SignatureContent()
	if err != nil {
		t.Fatal(err)
	}
	env := sc.EnvelopeContent().RawEnvelope()
	payload, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		t.Fatal(err)
	}
	pe := &protodsse.Envelope{Payload: payload, PayloadType: env.PayloadType}
	for _, sg := range env.Signatures {
		raw, err := base64.StdEncoding.DecodeString(sg.Sig)
		if err != nil {
			t.Fatal(err)
		}
		pe.Signatures = append(pe.Signatures, &protodsse.Signature{Sig: raw, Keyid: sg.KeyID})
	}
	entries, err := e.TlogEntries()
	if err != nil {
		t.Fatal(err)
	}
	vm := &protobundle.VerificationMaterial{
		Content: &protobundle.VerificationMaterial_Certificate{Certificate: &protocommon.X509Certificate{RawBytes: vc.Certificate().Raw}},
	}
	for _, en := range entries {
		tle := en.TransparencyLogEntry()
		tle.KindVersion = &protorekor.KindVersion{Kind: "dsse", Version: "0.0.1"}
		// The entry made keeps its signed entry timestamp to itself: sign it again, so
		// that the log's integrated time is attested (what Rekor v1 gives).
		set, err := s.vs.RekorSignPayload(tlog.RekorPayload{
			Body: base64.StdEncoding.EncodeToString(tle.CanonicalizedBody), IntegratedTime: tle.IntegratedTime,
			LogIndex: tle.LogIndex, LogID: hex.EncodeToString(tle.LogId.KeyId)})
		if err != nil {
			t.Fatal(err)
		}
		tle.InclusionPromise = &protorekor.InclusionPromise{SignedEntryTimestamp: set}
		vm.TlogEntries = append(vm.TlogEntries, tle)
	}
	return marshal(t, &protobundle.Bundle{
		MediaType:            "application/vnd.dev.sigstore.bundle.v0.3+json",
		VerificationMaterial: vm,
		Content:              &protobundle.Bundle_DsseEnvelope{DsseEnvelope: pe},
	})
}

// EditTlog returns bundle with its transparency log entries (as protojson decodes to
// maps: inclusionProof, inclusionPromise, integratedTime, canonicalizedBody ...) passed
// through edit. The result is not checked: it may no longer parse as a bundle.
func EditTlog(t testing.TB, bundle []byte, edit func(entries []map[string]any) []map[string]any) []byte {
	t.Helper()
	var b map[string]any
	if err := json.Unmarshal(bundle, &b); err != nil {
		t.Fatal(err)
	}
	vm, _ := b["verificationMaterial"].(map[string]any)
	if vm == nil {
		t.Fatal("bundle has no verificationMaterial")
	}
	raw, _ := vm["tlogEntries"].([]any)
	entries := make([]map[string]any, len(raw))
	for i, r := range raw {
		entries[i] = r.(map[string]any)
	}
	entries = edit(entries)
	if len(entries) == 0 {
		delete(vm, "tlogEntries")
	} else {
		vm["tlogEntries"] = entries
	}
	out, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Tlog returns bundle's transparency log entries, for [EditTlog] to put in another.
func Tlog(t testing.TB, bundle []byte) []map[string]any {
	t.Helper()
	var entries []map[string]any
	EditTlog(t, bundle, func(e []map[string]any) []map[string]any { entries = e; return e })
	return entries
}

// FlipBase64 is the base64 string s with one bit of its first byte flipped.
func FlipBase64(t testing.TB, s string) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b) == 0 {
		t.Fatalf("%q is not base64 of at least one byte: %v", s, err)
	}
	b[0] ^= 1
	return base64.StdEncoding.EncodeToString(b)
}
