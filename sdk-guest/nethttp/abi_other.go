//go:build !wasip1

package nethttp

// request has no host outside WebAssembly.
func request([]byte) ([]byte, error) { return nil, ErrUnsupported }
