//go:build wasip1

package guest

import (
	"encoding/json"
	"errors"
	"fmt"
	"unsafe"
)

//go:wasmimport mcpwh input_len
func hostInputLen() int32

//go:wasmimport mcpwh input_read
func hostInputRead(buf unsafe.Pointer, n uint32) int32

//go:wasmimport mcpwh output_write
func hostOutputWrite(buf unsafe.Pointer, n uint32) int32

//go:wasmimport mcpwh log
func hostLog(level int32, msg unsafe.Pointer, n uint32) int32

//go:wasmimport mcpwh progress
func hostProgress(progress, total float64, msg unsafe.Pointer, n uint32) int32

//go:wasmimport mcpwh request
func hostRequest(method unsafe.Pointer, methodLen uint32, params unsafe.Pointer, paramsLen uint32) int32

//go:wasmimport mcpwh reply_read
func hostReplyRead(buf unsafe.Pointer, n uint32) int32

// Status codes (docs/ABI.md).
const (
	statusUnsupported = -4
	statusUnavailable = -5
	statusFailed      = -6
)

//go:wasmexport mcpwh_abi_version
func exportABIVersion() int32 { return ABIVersion }

//go:wasmexport mcpwh_describe
func exportDescribe() int32 {
	b, err := manifest()
	if err != nil {
		writeOutput([]byte(err.Error()))
		return 1
	}
	writeOutput(b)
	return 0
}

//go:wasmexport mcpwh_call
func exportCall() int32 {
	input := make([]byte, hostInputLen())
	if len(input) > 0 {
		hostInputRead(unsafe.Pointer(&input[0]), uint32(len(input)))
	}
	out, err := dispatch(wasmBackend{}, input)
	if err != nil {
		writeOutput([]byte(err.Error()))
		return 1
	}
	writeOutput(out)
	return 0
}

func writeOutput(b []byte) {
	hostOutputWrite(ptr(b), uint32(len(b)))
}

// ptr returns a pointer to b's bytes, or nil for an empty b (the host never reads it).
func ptr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

type wasmBackend struct{}

func (wasmBackend) log(level Level, msg string) {
	b := []byte(msg)
	hostLog(int32(level), ptr(b), uint32(len(b)))
}

func (wasmBackend) progress(done, total float64, msg string) {
	b := []byte(msg)
	hostProgress(done, total, ptr(b), uint32(len(b)))
}

func (wasmBackend) request(method string, params []byte) ([]byte, error) {
	m := []byte(method)
	n := hostRequest(ptr(m), uint32(len(m)), ptr(params), uint32(len(params)))
	switch {
	case n == statusUnsupported:
		return nil, ErrUnsupported
	case n == statusUnavailable:
		return nil, ErrUnavailable
	case n == statusFailed:
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(readReply(), &e)
		return nil, errors.New(e.Error)
	case n < 0:
		return nil, fmt.Errorf("host request %s failed with status %d", method, n)
	}
	reply := make([]byte, n)
	if n > 0 {
		hostReplyRead(unsafe.Pointer(&reply[0]), uint32(n))
	}
	return reply, nil
}

func readReply() []byte {
	buf := make([]byte, 4096)
	n := hostReplyRead(unsafe.Pointer(&buf[0]), uint32(len(buf)))
	if n < 0 {
		return nil
	}
	return buf[:n]
}
