package oci_test

import (
	"fmt"

	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/oci"
)

func ExampleParseRef() {
	r, err := oci.ParseRef("oci://ghcr.io/example/textkit:1.2.0")
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Registry, r.Repository, r.Tag)
	pinned := r.At("sha256:" + hex64)
	fmt.Println(pinned)
	// Output:
	// ghcr.io example/textkit 1.2.0
	// oci://ghcr.io/example/textkit@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
}
