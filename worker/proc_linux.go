package worker

import (
	"os"
	"strconv"
	"syscall"
)

// sysProcAttr puts a worker in its own process group, so that a terminal's signals reach
// only the server, and has the kernel kill it if the server dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// openFileCount returns how many descriptors process pid holds, or -1 if unknown.
func openFileCount(pid int) int {
	fds, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		return -1
	}
	return len(fds)
}

// killGroup kills a worker and anything it started: a worker is its own process group.
func killGroup(p *os.Process) {
	if syscall.Kill(-p.Pid, syscall.SIGKILL) != nil {
		_ = p.Kill()
	}
}
