package registrytest

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// Binary is the registry the tests run.
const Binary = "/usr/bin/docker-registry"

// Registry is one running registry process.
type Registry struct {
	// Host is "127.0.0.1:PORT", the registry part of a reference.
	Host string
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

// Options configure Start; the zero value is an open registry.
type Options struct {
	// Username and Password, when set, require basic auth (an htpasswd file).
	Username, Password string
	// Dir is the storage directory; "" means a new temporary one. Starting a second
	// registry on the same Dir serves the same content.
	Dir string
}

// Start runs a registry for the test, stopped in t.Cleanup. It skips the test when the
// binary is not installed.
func Start(t testing.TB, opts Options) *Registry {
	t.Helper()
	if _, err := os.Stat(Binary); err != nil {
		t.Skipf("%s not installed (Debian package docker-registry): %v", Binary, err)
	}
	work := t.TempDir()
	storage := opts.Dir
	if storage == "" {
		storage = filepath.Join(work, "storage")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := ln.Addr().String()
	ln.Close()
	auth := ""
	if opts.Username != "" {
		hash, err := bcrypt.GenerateFromPassword([]byte(opts.Password), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		pw := filepath.Join(work, "htpasswd")
		if err := os.WriteFile(pw, fmt.Appendf(nil, "%s:%s\n", opts.Username, hash), 0o600); err != nil {
			t.Fatal(err)
		}
		auth = fmt.Sprintf("auth:\n  htpasswd:\n    realm: test\n    path: %s\n", pw)
	}
	conf := fmt.Sprintf(`version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
%s`, storage, host, auth)
	confPath := filepath.Join(work, "config.yml")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(work, "registry.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(Binary, "serve", confPath)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &Registry{Host: host, cmd: cmd, done: make(chan struct{}), log: logPath}
	go func() { cmd.Wait(); logFile.Close(); close(r.done) }()
	t.Cleanup(r.Stop)
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get("http://" + host + "/v2/")
		if err == nil {
			resp.Body.Close()
			return r
		}
		select {
		case <-r.done:
			b, _ := os.ReadFile(logPath)
			t.Fatalf("registry exited at start: %s", b)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("registry at %s not up after 15 s: %v", host, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the registry and waits for it; calling it again does nothing.
func (r *Registry) Stop() {
	select {
	case <-r.done:
		return
	default:
	}
	r.cmd.Process.Kill()
	<-r.done
}

// Log is what the registry wrote so far.
func (r *Registry) Log() string {
	b, _ := os.ReadFile(r.log)
	return string(b)
}
