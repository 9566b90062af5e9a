package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
)

// FileSHA256 returns the lowercase hex sha256 digest of the file at path, as
// a plugin's sha256 key pins it.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// PinLine returns the line that pins the file at path in a [[plugins]] table:
// sha256 = "<digest>".
func PinLine(path string) (string, error) {
	sum, err := FileSHA256(path)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("sha256 = %q", sum), nil
}

// missingPin is the message for a plugin whose sha256 is empty: with the
// digest of the file it names and the line to paste once the operator trusts
// it, when that file can be read (a missing file is reported when it loads).
func missingPin(path string) string {
	line, err := PinLine(path)
	if err != nil {
		return "sha256 is required"
	}
	return fmt.Sprintf("sha256 is required; %s has sha256 %s: if you trust this file, paste this line into its [[plugins]] table: %s",
		path, line[len(`sha256 = "`):len(line)-1], line)
}
