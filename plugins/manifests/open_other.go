//go:build !unix

package manifests

const openFlags = 0
