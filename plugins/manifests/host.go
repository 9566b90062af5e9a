package manifests

import (
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"os"
)

// HostID identifies the build of the program at exe (the server, whose binary is also
// the workers'): its Go build ID, which changes with any change to the program's
// source or dependencies, else the sha256 of the file. Entries written by one build are
// never used by another, whose sandbox or ABI may differ.
func HostID(exe string) (string, error) {
	if id, ok := goBuildID(exe); ok {
		return "go-build-id:" + id, nil
	}
	f, err := os.Open(exe)
	if err != nil {
		return "", fmt.Errorf("identify this program: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("identify this program: %w", err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// goBuildID reads the Go build ID note of an ELF executable.
func goBuildID(exe string) (string, bool) {
	f, err := elf.Open(exe)
	if err != nil {
		return "", false
	}
	defer f.Close()
	s := f.Section(".note.go.buildid")
	if s == nil {
		return "", false
	}
	b, err := s.Data()
	if err != nil || len(b) < 16 {
		return "", false
	}
	// An ELF note: name size, descriptor size, type (4: the Go build ID), the name
	// "Go\x00" padded to 4 bytes, then the descriptor.
	bo := f.ByteOrder
	namesz, descsz, typ := bo.Uint32(b), bo.Uint32(b[4:]), bo.Uint32(b[8:])
	if namesz != 4 || typ != 4 || string(b[12:16]) != "Go\x00\x00" || uint64(descsz) > uint64(len(b)-16) || descsz == 0 {
		return "", false
	}
	return string(b[16 : 16+descsz]), true
}
