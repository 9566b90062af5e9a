//go:build linux && !amd64

package worker

// No seccomp filter is written for this architecture yet; the rlimits still apply.
const (
	seccompArch    = 0
	seccompX32Bit  = 0
	seccompSyscall = 0
)

var seccompDenied []uint32
