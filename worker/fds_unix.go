//go:build unix

package worker

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// closeInherited closes every file descriptor above stderr that the worker inherited
// from the server (which may itself have inherited them from whatever started it):
// the worker's only channels are stdin, stdout and stderr, and keep if it is not -1:
// the file the server opened for the worker's CPU profile (profile.go), which it
// marks close-on-exec.
//
// An inherited descriptor is one without close-on-exec: it survived the exec. It is
// not close_range(3, ~0U, 0): the Go runtime has by then opened descriptors of its own
// (the cgroup CPU limit files it rereads to size GOMAXPROCS), always with close-on-exec,
// and closing them under it would let the runtime read whatever reuses the number.
func closeInherited(keep int) error {
	fds, err := openDescriptors()
	if err != nil {
		return err
	}
	for _, fd := range fds {
		if fd <= 2 {
			continue
		}
		if fd == keep {
			unix.CloseOnExec(fd)
			continue
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if errors.Is(err, unix.EBADF) {
			continue // the listing's own descriptor, closed since
		}
		if err != nil {
			return fmt.Errorf("inspect inherited descriptor %d: %w", fd, err)
		}
		if flags&unix.FD_CLOEXEC != 0 {
			continue
		}
		if err := unix.Close(fd); err != nil && !errors.Is(err, unix.EBADF) {
			return fmt.Errorf("close inherited descriptor %d: %w", fd, err)
		}
	}
	return nil
}

// maxProbedFD bounds the descriptors probed one by one where no listing exists.
const maxProbedFD = 1 << 16

// openDescriptors lists the process's open descriptors from /proc/self/fd (Linux) or
// /dev/fd, or else every number below the descriptor limit (at most maxProbedFD).
func openDescriptors() ([]int, error) {
	for _, dir := range []string{"/proc/self/fd", "/dev/fd"} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		fds := make([]int, 0, len(entries))
		for _, e := range entries {
			if fd, err := strconv.Atoi(e.Name()); err == nil {
				fds = append(fds, fd)
			}
		}
		return fds, nil
	}
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return nil, fmt.Errorf("list open descriptors: %w", err)
	}
	n := min(rl.Cur, maxProbedFD)
	fds := make([]int, n)
	for i := range fds {
		fds[i] = i
	}
	return fds, nil
}
