//go:build wasip1

package nethttp

import (
	"encoding/json"
	"errors"
	"fmt"
	"unsafe"
)

// The package imports the two host functions it needs itself, so that the guest
// package (and every guest that makes no requests) stays as it was.

//go:wasmimport mcpwh request
func hostRequest(method unsafe.Pointer, methodLen uint32, params unsafe.Pointer, paramsLen uint32) int32

//go:wasmimport mcpwh reply_read
func hostReplyRead(buf unsafe.Pointer, n uint32) int32

// Status codes (docs/ABI.md).
const (
	statusUnsupported = -4
	statusFailed      = -6
)

func request(name string, params []byte) ([]byte, error) {
	method := []byte(name)
	n := hostRequest(unsafe.Pointer(&method[0]), uint32(len(method)), unsafe.Pointer(&params[0]), uint32(len(params)))
	switch {
	case n == statusUnsupported:
		return nil, ErrUnsupported
	case n == statusFailed:
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(readReply(4096), &e)
		return nil, errors.New(e.Error)
	case n < 0:
		return nil, fmt.Errorf("host request %s failed with status %d", name, n)
	}
	return readReply(int(n)), nil
}

func readReply(n int) []byte {
	if n == 0 {
		return nil
	}
	buf := make([]byte, n)
	got := hostReplyRead(unsafe.Pointer(&buf[0]), uint32(n))
	if got < 0 {
		return nil
	}
	return buf[:got]
}
