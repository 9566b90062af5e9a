package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// buildInfo is what `version` prints: where the binary came from.
type buildInfo struct {
	Module   string // the module version: "v1.2.0", or "(devel)" for a build in a checkout
	Revision string // the VCS revision, "" when the build had none
	Modified bool   // the checkout had uncommitted changes
	Time     string // the revision's commit time, "" when unknown
	Go       string // the Go toolchain
}

// readBuildInfo reads the version the go command stamped into the binary (go build
// and go install record the module version and, in a checkout, the VCS revision).
func readBuildInfo() buildInfo {
	b := buildInfo{Module: "(devel)", Go: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if v := info.Main.Version; v != "" {
		b.Module = v
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		case "vcs.time":
			b.Time = s.Value
		}
	}
	return b
}

// printVersion writes the version, one fact a line.
func printVersion(w io.Writer) {
	b := readBuildInfo()
	fmt.Fprintf(w, "mcp-wasmhost %s\n", b.Module)
	switch {
	case b.Revision == "":
		fmt.Fprintln(w, "revision  unknown (built outside a git checkout)")
	case b.Modified:
		fmt.Fprintf(w, "revision  %s+modified (%s)\n", b.Revision, b.Time)
	default:
		fmt.Fprintf(w, "revision  %s (%s)\n", b.Revision, b.Time)
	}
	fmt.Fprintf(w, "go        %s %s/%s\n", b.Go, runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(w, "guest ABI %d\n", sandbox.ABIVersion)
}

// version is the server's version for serverInfo: the module version, else the
// revision's first 12 characters.
func version() string {
	b := readBuildInfo()
	if b.Module != "(devel)" {
		return b.Module
	}
	if len(b.Revision) >= 12 {
		v := "dev-" + b.Revision[:12]
		if b.Modified {
			v += "+modified"
		}
		return v
	}
	return "dev"
}
