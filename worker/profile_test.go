package worker_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/worker"
)

// With a profile directory, a worker holds one more descriptor, its profile's file,
// keeps the rest of its hardening, and writes a CPU profile named by plugin and pid
// there when it exits.
func TestWorkerCPUProfile(t *testing.T) {
	// A descriptor without close-on-exec, as a server inherits one from its parent.
	marker := filepath.Join(t.TempDir(), "inherited-marker")
	fd, err := syscall.Open(marker, syscall.O_CREAT|syscall.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	dir := t.TempDir()
	m, err := supervisor(t, worker.Options{ProfileDir: dir}).Load(context.Background(),
		worker.Spec{Name: "textkit", Wasm: wasm(t, "plugins/textkit/textkit.wasm"), Processes: 1})
	if err != nil {
		t.Fatal(err)
	}
	pid := m.PID()
	want := filepath.Join(dir, fmt.Sprintf("textkit-%d.cpu.pprof", pid))
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if !strings.Contains(string(status), "Seccomp:\t2") {
		t.Errorf("a profiled worker runs without its seccomp filter:\n%s", status)
	}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	profiles := 0
	for _, fd := range fds {
		target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if n, _ := strconv.Atoi(fd.Name()); n <= 2 || strings.HasPrefix(target, "anon_inode:") || strings.HasPrefix(target, "/sys/fs/cgroup/") {
			continue
		}
		if target != want {
			t.Errorf("worker holds fd %s -> %s; want only the standard three, the Go runtime's own and %s", fd.Name(), target, want)
			continue
		}
		profiles++
	}
	if profiles != 1 {
		t.Errorf("worker holds its profile's file %d times, want 1", profiles)
	}
	for range 200 {
		if _, err := m.Call(context.Background(), input("ping", map[string]any{}), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("profile directory holds %d files, want 1 (%s)", len(entries), want)
	}
	b, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("profile is not gzip: %v", err)
	}
	pb, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("profile: %v", err)
	}
	// The profile's string table names its sample types.
	for _, s := range []string{"samples", "cpu", "nanoseconds"} {
		if !bytes.Contains(pb, []byte(s)) {
			t.Errorf("profile lacks %q: not a CPU profile", s)
		}
	}
	// And Go's own pprof reads it, where the toolchain is at hand.
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to run pprof with")
	}
	out, err := exec.Command(gobin, "tool", "pprof", "-top", want).CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("Type: cpu")) {
		t.Errorf("go tool pprof -top %s = %v:\n%s", want, err, out)
	}
}

// A profile directory that does not exist is refused when the supervisor is made.
func TestProfileDirMustExist(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing")
	if _, err := worker.NewSupervisor(worker.Options{ProfileDir: dir}); err == nil {
		t.Errorf("NewSupervisor(ProfileDir: %s) = nil error, want one", dir)
	}
}

// A worker that is killed writes no profile, and leaves no empty file behind; the
// worker started in its place writes its own.
func TestKilledWorkerLeavesNoProfile(t *testing.T) {
	dir := t.TempDir()
	m, err := supervisor(t, worker.Options{ProfileDir: dir}).Load(context.Background(),
		worker.Spec{Name: "textkit", Wasm: wasm(t, "plugins/textkit/textkit.wasm"), Processes: 1})
	if err != nil {
		t.Fatal(err)
	}
	killed := m.PID()
	if err := syscall.Kill(killed, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The call waits for the worker started in the killed one's place.
	var err2 error
	for range 100 {
		if _, err2 = m.Call(context.Background(), input("ping", map[string]any{}), nil); err2 == nil && m.PID() != killed && m.PID() != 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err2 != nil {
		t.Fatal(err2)
	}
	restarted := m.PID()
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := fmt.Sprintf("textkit-%d.cpu.pprof", restarted); len(names) != 1 || names[0] != want {
		t.Errorf("profile directory holds %q, want only %s (worker %d was killed)", names, want, killed)
	}
}
