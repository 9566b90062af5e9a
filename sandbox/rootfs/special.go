package rootfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// SpecialRule names the rule that keeps grants out of kernel file systems, in errors.
const SpecialRule = "a directory grant may not reach a kernel file system (procfs, sysfs, devices, cgroupfs, debugfs, tracefs, securityfs, bpf, configfs, mqueue and the like)"

// specialDirs are where kernel file systems live, refused with everything below them
// whatever file system a path there is on.
var specialDirs = []string{"/proc", "/sys", "/dev"}

// ErrSpecial is the error of a grant that reaches a kernel file system.
var ErrSpecial = errors.New(SpecialRule)

// CheckDir refuses dir as a grant if it resolves (symbolic links followed) to /proc,
// /sys, /dev or below, or lies on a kernel file system (statfs f_type). New checks the
// same, again on the directory it opened, and at every open that nothing inside the
// grant crosses into one.
func CheckDir(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return err
	}
	for _, p := range specialDirs {
		if real == p || strings.HasPrefix(real, p+"/") {
			if real != abs {
				return fmt.Errorf("%s resolves to %s, under %s: %w", dir, real, p, ErrSpecial)
			}
			return fmt.Errorf("%s is under %s: %w", dir, p, ErrSpecial)
		}
	}
	f, err := os.Open(real)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := checkFile(f); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	return nil
}
