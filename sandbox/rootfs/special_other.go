//go:build !linux

package rootfs

// specialFile finds no special file systems outside Linux: the path rule
// (specialDirs) is what applies there.
func specialFile(uintptr) (string, error) { return "", nil }
