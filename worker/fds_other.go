//go:build !unix

package worker

// closeInherited has nothing to close where descriptors are not inherited by number.
func closeInherited(int) error { return nil }
