//go:build !unix

package manifests

import "errors"

func mkfifo(string) error { return errors.New("no FIFOs here") }
