//go:build unix

package manifests

import "syscall"

// openFlags keep reading an entry from following a symbolic link swapped in after the
// check, or blocking on a FIFO.
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK
