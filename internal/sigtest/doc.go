// Package sigtest signs plugins for tests: cosign-style keyed bundles with a key made in
// the test, and keyless bundles from a virtual Sigstore (sigstore-go's testing/ca: a
// Fulcio-like CA, a Rekor-like log with inclusion proofs and signed entry timestamps) whose trusted root
// the test writes to a file.
//
// The trusted root lists no CT log (see [Sigstore.TrustedRoot]).
package sigtest
