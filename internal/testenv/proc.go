package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Children returns the process IDs of pid's children (its worker processes), from
// /proc (Linux).
func Children(pid int) []int {
	var kids []int
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, s := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(s); err == nil {
				kids = append(kids, n)
			}
		}
	}
	return kids
}

// Descriptors returns what each open file descriptor of process pid refers to, by
// number, from /proc (Linux).
func Descriptors(pid int) map[int]string {
	fds := map[int]string{}
	entries, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name()))
		fds[n] = target
	}
	return fds
}

// StrayDescriptors lists the descriptors above stderr that server's worker processes
// hold and keep(target) does not accept, besides the Go runtime's own (anon_inode:
// and /sys/fs/cgroup/ files), as "worker PID holds fd N -> TARGET". A worker that is
// still starting (between fork and exec, or before its Main has closed what it
// inherited) holds the server's descriptors for a moment, so it waits up to 10 s for
// the list to empty and returns what is left, with the number of workers seen.
func StrayDescriptors(server int, keep func(target string) bool) (held []string, workers int) {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		pids := Children(server)
		held = held[:0]
		for _, pid := range pids {
			for fd, target := range Descriptors(pid) {
				if fd > 2 && !keep(target) && !strings.HasPrefix(target, "anon_inode:") && !strings.HasPrefix(target, "/sys/fs/cgroup/") {
					held = append(held, fmt.Sprintf("worker %d holds fd %d -> %s", pid, fd, target))
				}
			}
		}
		if len(held) == 0 || time.Now().After(deadline) {
			return held, len(pids)
		}
	}
}
