package worker

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// TestSeccompRefuses runs the filter for real, in a child process (a filter cannot be
// removed once installed): sockets and exec are refused with EPERM, ordinary work goes on.
func TestSeccompRefuses(t *testing.T) {
	if seccompArch == 0 {
		t.Skip("no seccomp filter for this architecture")
	}
	if os.Getenv("MCPWH_SECCOMP_CHILD") == "1" {
		seccompChild(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSeccompRefuses$", "-test.v")
	cmd.Env = append(os.Environ(), "MCPWH_SECCOMP_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestSeccompRefuses") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func seccompChild(t *testing.T) {
	if err := harden(hardening{OpenFiles: 64, Seccomp: true}); err != nil {
		t.Fatalf("harden() = %v", err)
	}
	if _, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0); !errors.Is(err, syscall.EPERM) {
		t.Errorf("socket() = %v, want EPERM", err)
	}
	if _, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0); !errors.Is(err, syscall.EPERM) {
		t.Errorf("socket(AF_UNIX) = %v, want EPERM", err)
	}
	if err := exec.Command("/bin/true").Run(); err == nil || !strings.Contains(err.Error(), "operation not permitted") {
		t.Errorf("exec /bin/true = %v, want operation not permitted", err)
	}
	if f, err := os.Open("/dev/null"); err != nil {
		t.Errorf("open /dev/null = %v: ordinary work must go on", err)
	} else {
		f.Close()
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur != 64 {
		t.Errorf("RLIMIT_NOFILE = %d, %v; want 64", rl.Cur, err)
	}
}
