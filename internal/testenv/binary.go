package testenv

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
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

// SyncBuffer collects what a process writes (its stderr, say) while a test reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
