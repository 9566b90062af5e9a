package worker

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"unsafe"
)

func harden(h hardening) error {
	limits := []struct {
		name     string
		resource int
		value    uint64
	}{
		{"core dumps", syscall.RLIMIT_CORE, 0},
		{"open files", syscall.RLIMIT_NOFILE, h.OpenFiles},
		{"address space", syscall.RLIMIT_AS, h.AddressSpaceMiB << 20},
	}
	for _, l := range limits {
		if l.value == 0 && l.resource != syscall.RLIMIT_CORE {
			continue
		}
		if err := syscall.Setrlimit(l.resource, &syscall.Rlimit{Cur: l.value, Max: l.value}); err != nil {
			return fmt.Errorf("limit %s to %d: %w", l.name, l.value, err)
		}
	}
	if h.Nice > 0 {
		if err := renice(h.Nice); err != nil {
			return err
		}
	}
	if h.Seccomp && seccompArch != 0 {
		return installSeccomp()
	}
	return nil
}

// renice sets the nice value of every thread of this process. Linux keeps it per
// thread, and a new thread takes its creator's: once every thread has it, so does
// every thread the Go runtime starts later. A thread started during a pass by one not
// yet reniced is caught by the next pass; it ends when a pass finds no new thread.
func renice(nice int) error {
	done := map[int]bool{}
	for {
		tids, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("renice: %w", err)
		}
		fresh := false
		for _, t := range tids {
			tid, err := strconv.Atoi(t.Name())
			if err != nil || done[tid] {
				continue
			}
			fresh, done[tid] = true, true
			if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice); err != nil && err != syscall.ESRCH {
				return fmt.Errorf("renice thread %d to %d: %w", tid, nice, err)
			}
		}
		if !fresh {
			return nil
		}
	}
}

// Seccomp BPF, as in linux/filter.h and linux/seccomp.h.
const (
	bpfLD, bpfW, bpfABS   = 0x00, 0x00, 0x20
	bpfJMP, bpfJEQ, bpfK  = 0x05, 0x10, 0x00
	bpfJGE, bpfRET        = 0x30, 0x06
	seccompRetAllow       = 0x7fff0000
	seccompRetErrno       = 0x00050000
	seccompRetKillProcess = 0x80000000
	seccompSetModeFilter  = 1
	seccompFlagTSync      = 1
	prSetNoNewPrivs       = 38
	offsetNR, offsetArch  = 0, 4 // in struct seccomp_data
)

type sockFilter struct {
	code uint16
	jt   uint8
	jf   uint8
	k    uint32
}

type sockFprog struct {
	len    uint16
	filter *sockFilter
}

// seccompFilter refuses the denied system calls with EPERM and kills the process if it
// ever runs code for another architecture's system call table.
func seccompFilter() []sockFilter {
	f := []sockFilter{
		{bpfLD | bpfW | bpfABS, 0, 0, offsetArch},
		{bpfJMP | bpfJEQ | bpfK, 1, 0, seccompArch},
		{bpfRET | bpfK, 0, 0, seccompRetKillProcess},
		{bpfLD | bpfW | bpfABS, 0, 0, offsetNR},
	}
	if seccompX32Bit != 0 { // x32 numbers alias the x86-64 ones with this bit set
		f = append(f, sockFilter{bpfJMP | bpfJGE | bpfK, uint8(len(seccompDenied) + 1), 0, seccompX32Bit})
	}
	for i, nr := range seccompDenied {
		// Jump to the EPERM return after the last comparison.
		f = append(f, sockFilter{bpfJMP | bpfJEQ | bpfK, uint8(len(seccompDenied) - i), 0, nr})
	}
	return append(f,
		sockFilter{bpfRET | bpfK, 0, 0, seccompRetAllow},
		sockFilter{bpfRET | bpfK, 0, 0, seccompRetErrno | uint32(syscall.EPERM)},
	)
}

func installSeccomp() error {
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0, 0, 0, 0); errno != 0 {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", errno)
	}
	f := seccompFilter()
	prog := sockFprog{len: uint16(len(f)), filter: &f[0]}
	if _, _, errno := syscall.RawSyscall(seccompSyscall, seccompSetModeFilter, seccompFlagTSync, uintptr(unsafe.Pointer(&prog))); errno != 0 {
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER): %w", errno)
	}
	return nil
}
