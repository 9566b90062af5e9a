// Command memhog is a test guest that allocates as much memory as it is asked to.
package main

import (
	"fmt"

	guest "github.com/mcp-wasmhost/mcp-wasmhost/sdk-guest"
)

type hogArgs struct {
	MiB int `json:"mib"`
}

var keep [][]byte

func init() {
	guest.Add(guest.Tool{Name: "hog", Description: "Allocates and touches mib MiB."},
		func(_ *guest.Call, in hogArgs) (*guest.Result, error) {
			for i := 0; i < in.MiB; i++ {
				b := make([]byte, 1<<20)
				for j := range b {
					b[j] = byte(j)
				}
				keep = append(keep, b)
			}
			return guest.Text(fmt.Sprintf("allocated %d MiB", in.MiB)), nil
		})
}

func main() {}
