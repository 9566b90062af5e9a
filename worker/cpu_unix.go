//go:build unix

package worker

import (
	"syscall"
	"time"
)

// processCPU is the CPU time this process used so far (user + system), 0 if unknown.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
