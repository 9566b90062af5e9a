// Package verify checks a plugin's Sigstore bundle against the operator's policy, in
// process, with sigstore-go: a cosign public key, or a keyless identity (certificate
// SAN and OIDC issuer, both exact) under a trusted root, with the signature's inclusion
// in the root's transparency log (Rekor) required.
//
// What is signed is the plugin's manifest digest: a bundle holds either a message
// signature over the manifest bytes or a DSSE envelope whose in-toto statement names
// the manifest digest as its subject (what cosign sign --new-bundle-format writes). A
// refusal wraps one of [ErrUnsigned], [ErrWrongKey], [ErrWrongIdentity], [ErrTampered] or
// [ErrUntrusted], and its message starts with that reason.
package verify
