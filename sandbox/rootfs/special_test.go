package rootfs_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"

	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox/rootfs"
)

// TestNewRefusesKernelFileSystems: a grant of /proc (which holds the server's own
// environment, /proc/<pid>/environ), /sys, /dev, anything below them, or a link to
// one, is refused with an error naming the rule.
func TestNewRefusesKernelFileSystems(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("kernel file systems at /proc, /sys and /dev are Linux's")
	}
	links := t.TempDir()
	for name, target := range map[string]string{"to-proc": "/proc", "to-self": "/proc/self", "to-cgroup": "/sys/fs/cgroup"} {
		if err := os.Symlink(target, filepath.Join(links, name)); err != nil {
			t.Fatal(err)
		}
	}
	dirs := []string{"/proc", "/proc/self", "/proc/self/fd", "/sys", "/sys/kernel", "/sys/fs/cgroup", "/dev", "/dev/shm",
		"/proc/../proc", filepath.Join(links, "to-proc"), filepath.Join(links, "to-self"), filepath.Join(links, "to-cgroup")}
	for _, dir := range dirs {
		if _, err := os.Stat(dir); err != nil {
			continue // not on this machine
		}
		t.Run(dir, func(t *testing.T) {
			f, err := rootfs.New(dir, false)
			if err == nil {
				f.Close()
				t.Fatalf("New(%s) succeeded", dir)
			}
			if !errors.Is(err, rootfs.ErrSpecial) || !strings.Contains(err.Error(), rootfs.SpecialRule) {
				t.Errorf("New(%s) = %v, want the rule %q", dir, err, rootfs.SpecialRule)
			}
			if err := rootfs.CheckDir(dir); !errors.Is(err, rootfs.ErrSpecial) {
				t.Errorf("CheckDir(%s) = %v, want ErrSpecial", dir, err)
			}
		})
	}
	// An ordinary directory is fine.
	if err := rootfs.CheckDir(t.TempDir()); err != nil {
		t.Errorf("CheckDir(a temporary directory) = %v", err)
	}
}

// TestNoCrossingIntoKernelFileSystems: procfs mounted inside a granted directory (a
// bind mount or a mount point there) cannot be read through the grant. It runs in a
// child process in a mount namespace of its own, where it may mount.
func TestNoCrossingIntoKernelFileSystems(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux mount namespaces")
	}
	if dir := os.Getenv("MCPWH_ROOTFS_MOUNT_CHILD"); dir != "" {
		crossingChild(t, dir)
		return
	}
	dir := t.TempDir()
	write(t, filepath.Join(dir, "hello.txt"), "hello")
	if err := os.Mkdir(filepath.Join(dir, "proc"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNoCrossingIntoKernelFileSystems$", "-test.v")
	cmd.Env = append(os.Environ(), "MCPWH_ROOTFS_MOUNT_CHILD="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	out, err := cmd.CombinedOutput()
	if err != nil && (errors.Is(err, syscall.EPERM) || strings.Contains(string(out), "SKIP")) {
		t.Skipf("no mount namespace here: %v\n%s", err, out)
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: TestNoCrossingIntoKernelFileSystems") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func crossingChild(t *testing.T, dir string) {
	if err := syscall.Mount("proc", filepath.Join(dir, "proc"), "proc", 0, ""); err != nil {
		t.Skipf("mount proc: %v", err)
	}
	// A grant of the mount itself is refused by its file system, not its path.
	if f, err := rootfs.New(filepath.Join(dir, "proc"), false); err == nil || !errors.Is(err, rootfs.ErrSpecial) || !strings.Contains(err.Error(), "procfs") {
		if f != nil {
			f.Close()
		}
		t.Errorf("New(procfs mounted at %s/proc) = %v, want ErrSpecial naming procfs", dir, err)
	}
	fsys := open(t, dir, false)
	for _, path := range []string{"proc/self/environ", "proc/self/cmdline", "proc/self", "proc"} {
		if got, errno := readFile(fsys, path); errno != experimentalsys.EPERM {
			t.Errorf("read %s through the grant = %q, %v; want EPERM", path, got, errno)
		}
	}
	if _, errno := readDir(fsys, "proc"); errno != experimentalsys.EPERM {
		t.Errorf("list proc through the grant = %v; want EPERM", errno)
	}
	if got, errno := readFile(fsys, "hello.txt"); errno != 0 || got != "hello" {
		t.Errorf("read hello.txt = %q, %v; ordinary files must still work", got, errno)
	}
}
