//go:build !unix

package sandbox

import "errors"

// Without mmap the reservation is a Go allocation of the whole limit: the runtime takes
// large allocations from the operating system untouched, so it costs little until used.

func roundToOSPage(n uint64) uint64 { return (n + 4095) &^ 4095 }

func reserve(size uint64) ([]byte, error) { return make([]byte, size), nil }

func commit([]byte) error { return nil }

func unreserve([]byte) error { return nil }

func discard([]byte) error { return errors.ErrUnsupported }
