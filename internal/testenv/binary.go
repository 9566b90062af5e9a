package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
)

// BuildServer builds the real mcp-wasmhost binary into a new temporary directory, for
// a TestMain. It returns the binary's path and a function that removes it.
func BuildServer() (path string, remove func(), err error) {
	dir, err := os.MkdirTemp("", "mcp-wasmhost-bin")
	if err != nil {
		return "", nil, err
	}
	path = filepath.Join(dir, "mcp-wasmhost")
	build := exec.Command("go", "build", "-o", path, "./cmd/mcp-wasmhost")
	build.Dir = Root()
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return path, func() { os.RemoveAll(dir) }, nil
}
