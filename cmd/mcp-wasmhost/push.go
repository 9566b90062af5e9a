package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"

	"github.com/mcp-wasmhost/mcp-wasmhost/config"
	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/oci"
)

// runPush is `mcp-wasmhost push FILE.wasm oci://REGISTRY/REPO:TAG`: publish a module in
// the CNCF Wasm artifact layout and print its manifest digest, which is what to sign.
// Credentials and plain_http come from the config's [server.distribution] when the
// config file exists.
func runPush(ctx context.Context, configPath string, args []string, stdout, stderr io.Writer) error {
	flags := flag.NewFlagSet("mcp-wasmhost push", flag.ContinueOnError)
	flags.SetOutput(stderr)
	plain := flags.Bool("plain-http", false, "speak http:// to the registry (loopback or a private network only)")
	flags.Usage = func() {
		fmt.Fprintf(stderr, "usage: mcp-wasmhost [--config FILE] push [--plain-http] FILE.wasm oci://REGISTRY/REPOSITORY:TAG\n\nPublishes the module as a Wasm OCI artifact and prints its manifest digest (sign that).\n")
		flags.PrintDefaults()
	}
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if flags.NArg() != 2 {
		flags.Usage()
		return errors.New("push: want FILE.wasm and oci://REGISTRY/REPOSITORY:TAG")
	}
	ref, err := oci.ParseRef(flags.Arg(1))
	if err != nil {
		return err
	}
	if ref.Tag == "" {
		return fmt.Errorf("push: %s: name a tag; the digest is computed", flags.Arg(1))
	}
	wasm, err := os.ReadFile(flags.Arg(0))
	if err != nil {
		return fmt.Errorf("push: %w", err)
	}
	var dist config.Distribution
	if cfg, err := config.Load(configPath); err == nil {
		dist = cfg.Server.Distribution
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if *plain {
		i := slices.IndexFunc(dist.Registries, func(r config.Registry) bool { return r.Host == ref.Registry })
		if i < 0 {
			dist.Registries = append(dist.Registries, config.Registry{Host: ref.Registry})
			i = len(dist.Registries) - 1
		}
		dist.Registries[i].PlainHTTP = true
	}
	client, err := registryClient(dist)
	if err != nil {
		return err
	}
	desc, err := client.Push(ctx, ref, wasm, oci.LayoutWasm)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, desc.Digest)
	fmt.Fprintf(stderr, "pushed %s (%d bytes) as %s\nsign it: cosign sign --new-bundle-format --key cosign.key %s/%s@%s\n",
		flags.Arg(0), len(wasm), ref, ref.Registry, ref.Repository, desc.Digest)
	return nil
}
