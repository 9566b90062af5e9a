//go:build !linux

package worker

import (
	"os"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func killGroup(p *os.Process) { _ = p.Kill() }

// openFileCount is unknown here: -1.
func openFileCount(int) int { return -1 }
