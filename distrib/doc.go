// Package distrib brings plugins from OCI registries: [Pull] resolves a source's tag,
// fetches the manifest, the module and its signatures into a content-addressed cache,
// verifies the signature against the plugin's policy and returns the lockfile entry;
// [Open] is what the server runs at start: no network, everything read from the cache
// by the digests the lockfile pins, hashed again, and the signature verified again.
//
// The jobs are split by package: distrib/oci (the registry, through oras-go),
// distrib/cache (blobs by sha256), distrib/verify (Sigstore bundles, through
// sigstore-go) and distrib/lock (the lockfile).
package distrib
