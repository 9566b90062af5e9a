// Package cache keeps blobs on disk by their sha256 digest: manifests, layers, extracted
// modules and signature bundles pulled from registries.
//
// A blob is written to a temporary file while it is hashed and renamed to
// blobs/sha256/<hex> only when the bytes match the digest, so the cache never holds a
// file under a name it does not deserve. Every read hashes the file again: a blob changed
// on disk is refused with [ErrCorrupt], never handed on.
package cache
