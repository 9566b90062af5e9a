// Command stateful is a test guest that keeps state in globals, to prove that every
// call runs in a fresh instance: "remember" returns what the previous call stored.
package main

import (
	"fmt"

	guest "github.com/mcp-wasmhost/mcp-wasmhost/sdk-guest"
)

var (
	calls    int
	previous string
)

type rememberArgs struct {
	Value string `json:"value"`
}

func init() {
	guest.Add(guest.Tool{Name: "remember", Description: "Stores value; returns the call count and what was stored before."},
		func(_ *guest.Call, in rememberArgs) (*guest.Result, error) {
			calls++
			prev := previous
			previous = in.Value
			return guest.Text(fmt.Sprintf("calls=%d previous=%q", calls, prev)), nil
		})
}

func main() {}
