//go:build unix

package sandbox

import (
	"errors"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

var osPage = uint64(os.Getpagesize())

func roundToOSPage(n uint64) uint64 { return (n + osPage - 1) &^ (osPage - 1) }

// reserve maps size bytes that cannot be accessed: address space, no memory.
func reserve(size uint64) ([]byte, error) {
	return unix.Mmap(-1, 0, int(size), unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANON|unix.MAP_NORESERVE)
}

// commit makes b readable and writable; its pages cost memory when first touched.
func commit(b []byte) error { return unix.Mprotect(b, unix.PROT_READ|unix.PROT_WRITE) }

func unreserve(b []byte) error { return unix.Munmap(b) }

// discard gives b's pages back to the operating system; they read as zero afterwards.
// Only Linux promises the zeros (MADV_DONTNEED on private anonymous memory).
func discard(b []byte) error {
	if runtime.GOOS != "linux" {
		return errors.ErrUnsupported
	}
	return unix.Madvise(b, unix.MADV_DONTNEED)
}
