package verify

import (
	"bytes"
	"crypto"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	sgverify "github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
)

// The reasons a signature is refused (errors.Is).
var (
	ErrUnsigned      = errors.New("unsigned")
	ErrWrongKey      = errors.New("wrong key")
	ErrWrongIdentity = errors.New("wrong identity")
	ErrTampered      = errors.New("tampered")
	ErrUntrusted     = errors.New("untrusted")
)

// MaxBundleBytes caps one bundle.
const MaxBundleBytes = 1 << 20

// Policy is one plugin's [plugins.verify]: KeyPEM, or Identity, Issuer and
// TrustedRootJSON. The zero Policy is not valid (use [None] in config for no check).
type Policy struct {
	// KeyPEM is a PEM public key ("cosign generate-key-pair" writes cosign.pub).
	KeyPEM []byte
	// Identity is the signing certificate's subject alternative name (an e-mail or a
	// workflow URI), matched exactly.
	Identity string
	// Issuer is the OIDC issuer in the certificate, matched exactly.
	Issuer string
	// TrustedRootJSON is a Sigstore trusted_root.json: the Fulcio CAs, Rekor logs (and CT
	// logs, timestamp authorities) the signature must chain to.
	TrustedRootJSON []byte
}

// Signer is who a verified bundle says signed.
type Signer struct {
	Kind     string    `json:"kind"`               // "key" or "keyless"
	Identity string    `json:"identity,omitempty"` // keyless: certificate SAN
	Issuer   string    `json:"issuer,omitempty"`   // keyless: OIDC issuer
	KeyID    string    `json:"key_id,omitempty"`   // key: sha256 of the public key (DER), hex
	Time     time.Time `json:"time,omitzero"`      // keyless: the transparency log's time
}

// String is a one-line form for logs and check: a key signer by the first 16 digits of
// its key ID. It holds for any Signer, also one decoded from a hand-edited lockfile.
func (s Signer) String() string {
	if s.Kind == "key" {
		id := s.KeyID
		if len(id) > 16 {
			id = id[:16]
		}
		return "key sha256:" + id
	}
	return s.Identity + " (" + s.Issuer + ")"
}

// Verifier checks bundles against one policy.
type Verifier struct {
	policy   Policy
	keyID    string
	verifier *sgverify.Verifier
}

// New checks p and prepares its verifier.
func New(p Policy) (*Verifier, error) {
	v := &Verifier{policy: p}
	switch {
	case len(p.KeyPEM) > 0:
		if p.Identity != "" || p.Issuer != "" || len(p.TrustedRootJSON) > 0 {
			return nil, errors.New("verify: key and keyless (identity, issuer, trusted_root) are exclusive")
		}
		pub, err := cryptoutils.UnmarshalPEMToPublicKey(p.KeyPEM)
		if err != nil {
			return nil, fmt.Errorf("verify: public key: %w", err)
		}
		der, err := cryptoutils.MarshalPublicKeyToDER(pub)
		if err != nil {
			return nil, fmt.Errorf("verify: public key: %w", err)
		}
		sum := crypto.SHA256.New()
		sum.Write(der)
		v.keyID = hex.EncodeToString(sum.Sum(nil))
		sv, err := signature.LoadVerifier(pub, crypto.SHA256)
		if err != nil {
			return nil, fmt.Errorf("verify: public key: %w", err)
		}
		key := root.NewExpiringKey(sv, time.Time{}, time.Time{})
		material := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) { return key, nil })
		if v.verifier, err = sgverify.NewVerifier(material, sgverify.WithNoObserverTimestamps()); err != nil {
			return nil, fmt.Errorf("verify: %w", err)
		}
	case p.Identity != "" || p.Issuer != "" || len(p.TrustedRootJSON) > 0:
		if p.Identity == "" || p.Issuer == "" || len(p.TrustedRootJSON) == 0 {
			return nil, errors.New("verify: keyless needs identity, issuer and trusted_root")
		}
		tr, err := root.NewTrustedRootFromJSON(p.TrustedRootJSON)
		if err != nil {
			return nil, fmt.Errorf("verify: trusted root: %w", err)
		}
		if len(tr.FulcioCertificateAuthorities()) == 0 || len(tr.RekorLogs()) == 0 {
			return nil, errors.New("verify: trusted root lists no certificate authority or no transparency log")
		}
		opts := []sgverify.VerifierOption{sgverify.WithTransparencyLog(1), sgverify.WithObserverTimestamps(1)}
		if len(tr.CTLogs()) > 0 {
			opts = append(opts, sgverify.WithSignedCertificateTimestamps(1))
		}
		if v.verifier, err = sgverify.NewVerifier(tr, opts...); err != nil {
			return nil, fmt.Errorf("verify: %w", err)
		}
	default:
		return nil, errors.New("verify: the policy names no key and no identity")
	}
	return v, nil
}

// Verify checks that bundleJSON is a valid signature of the manifest digest
// ("sha256:<hex>") under the policy.
func (v *Verifier) Verify(bundleJSON []byte, manifestDigest string) (Signer, error) {
	hexDigest, ok := strings.CutPrefix(manifestDigest, "sha256:")
	want, err := hex.DecodeString(hexDigest)
	if !ok || err != nil || len(want) != 32 {
		return Signer{}, fmt.Errorf("verify: digest %q is not sha256", manifestDigest)
	}
	if len(bundleJSON) > MaxBundleBytes {
		return Signer{}, fmt.Errorf("%w: bundle of %d bytes, over %d", ErrTampered, len(bundleJSON), MaxBundleBytes)
	}
	var b bundle.Bundle
	if err := b.UnmarshalJSON(bundleJSON); err != nil {
		return Signer{}, fmt.Errorf("%w: bundle does not parse: %v", ErrTampered, err)
	}
	if err := signsDigest(&b, want); err != nil {
		return Signer{}, err
	}
	content, err := b.VerificationContent()
	if err != nil {
		return Signer{}, fmt.Errorf("%w: %v", ErrTampered, err)
	}
	keyless := content.Certificate() != nil
	var policy sgverify.PolicyBuilder
	artifact := sgverify.WithArtifactDigest("sha256", want)
	switch {
	case len(v.policy.KeyPEM) > 0 && keyless:
		return Signer{}, fmt.Errorf("%w: signed with a certificate (keyless), the policy names a key", ErrWrongKey)
	case len(v.policy.KeyPEM) > 0:
		policy = sgverify.NewPolicy(artifact, sgverify.WithKey())
	case !keyless:
		return Signer{}, fmt.Errorf("%w: signed with a key, the policy wants identity %q", ErrWrongIdentity, v.policy.Identity)
	default:
		// The identity is compared below, so that a wrong one is named as such.
		policy = sgverify.NewPolicy(artifact, sgverify.WithoutIdentitiesUnsafe())
	}
	res, err := v.verifier.Verify(&b, policy)
	if err != nil {
		if len(v.policy.KeyPEM) > 0 {
			return Signer{}, fmt.Errorf("%w: %v", ErrWrongKey, err)
		}
		return Signer{}, fmt.Errorf("%w: %v", ErrUntrusted, err)
	}
	if len(v.policy.KeyPEM) > 0 {
		return Signer{Kind: "key", KeyID: v.keyID}, nil
	}
	if res == nil || res.Signature == nil || res.Signature.Certificate == nil {
		return Signer{}, fmt.Errorf("%w: no certificate in the verified result", ErrUntrusted)
	}
	cert := res.Signature.Certificate
	if cert.SubjectAlternativeName != v.policy.Identity || cert.Issuer != v.policy.Issuer {
		return Signer{}, fmt.Errorf("%w: signed by %q (issuer %q), the policy wants %q (issuer %q)",
			ErrWrongIdentity, cert.SubjectAlternativeName, cert.Issuer, v.policy.Identity, v.policy.Issuer)
	}
	s := Signer{Kind: "keyless", Identity: cert.SubjectAlternativeName, Issuer: cert.Issuer}
	for _, ts := range res.VerifiedTimestamps {
		if s.Time.IsZero() || ts.Timestamp.Before(s.Time) {
			s.Time = ts.Timestamp.UTC()
		}
	}
	return s, nil
}

// signsDigest checks that the bundle is about the manifest digest, so that a valid
// signature of another image (a replaced tag, a changed layer) reads "tampered".
func signsDigest(b *bundle.Bundle, want []byte) error {
	if ms := b.GetMessageSignature(); ms != nil {
		md := ms.GetMessageDigest()
		if md == nil || md.GetAlgorithm() != protocommon.HashAlgorithm_SHA2_256 {
			return fmt.Errorf("%w: message signature has no sha256 digest", ErrTampered)
		}
		if !bytes.Equal(md.GetDigest(), want) {
			return fmt.Errorf("%w: the signature is for sha256:%x, not sha256:%x", ErrTampered, md.GetDigest(), want)
		}
		return nil
	}
	env := b.GetDsseEnvelope()
	if env == nil {
		return fmt.Errorf("%w: bundle holds no signature", ErrTampered)
	}
	if env.GetPayloadType() != "application/vnd.in-toto+json" {
		return fmt.Errorf("%w: DSSE payload type %q", ErrTampered, env.GetPayloadType())
	}
	var st struct {
		Subject []struct {
			Digest map[string]string `json:"digest"`
		} `json:"subject"`
	}
	if err := json.Unmarshal(env.GetPayload(), &st); err != nil {
		return fmt.Errorf("%w: in-toto statement: %v", ErrTampered, err)
	}
	var named []string
	for _, s := range st.Subject {
		if s.Digest["sha256"] == hex.EncodeToString(want) {
			return nil
		}
		named = append(named, "sha256:"+s.Digest["sha256"])
	}
	return fmt.Errorf("%w: the signature is for %v, not sha256:%x", ErrTampered, named, want)
}
