//go:build !wasip1

package nethttp

// request has no host outside WebAssembly.
func request(string, []byte) ([]byte, error) { return nil, ErrUnsupported }
