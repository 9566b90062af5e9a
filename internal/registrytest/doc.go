// Package registrytest starts a real OCI registry for tests: Debian's docker-registry
// (the CNCF distribution registry, /usr/bin/docker-registry), on a free loopback port
// with its storage in a temporary directory, optionally behind basic auth.
package registrytest
