// Package oci talks to OCI registries through oras-go: it resolves a plugin's reference
// to a manifest digest, fetches the manifest, its module layer and its signature bundles
// into a [cache.Cache], and pushes modules in the CNCF Wasm artifact layout.
//
// The registry is not trusted. Manifests are read up to [MaxManifestBytes], layers up to
// [MaxLayerBytes] and bundles up to [MaxBundleBytes] whatever Content-Length says; every
// byte is hashed as it is read, and a tag's digest is computed from the bytes received,
// never taken from a header. Only sha256 digests are accepted.
//
// Three layouts are read (see [Layout]): the CNCF TAG Runtime Wasm artifact (what
// [Push] writes), hyper-mcp's ORAS artifact and hyper-mcp's Docker image, which holds
// /plugin.wasm in a tar layer. An index is narrowed to wasip1/wasm, else linux/amd64.
package oci
