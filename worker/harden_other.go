//go:build !linux

package worker

// harden applies nothing outside Linux: the process boundary itself is the backstop.
func harden(hardening) error { return nil }
