package egress_test

import (
	"fmt"
	"net/netip"

	"github.com/mcp-wasmhost/mcp-wasmhost/egress"
)

// Classify names why an address is refused, also when it hides in an IPv6 address.
func ExampleClassify() {
	for _, a := range []string{"93.184.216.34", "10.0.0.5", "169.254.169.254", "::ffff:127.0.0.1", "64:ff9b::a9fe:a9fe"} {
		where, reason, ok := egress.Classify(netip.MustParseAddr(a))
		if ok {
			fmt.Println(a, "public")
			continue
		}
		fmt.Println(a, reason, where)
	}
	// Output:
	// 93.184.216.34 public
	// 10.0.0.5 private address 10.0.0.0/8
	// 169.254.169.254 cloud metadata address 169.254.169.254/32
	// ::ffff:127.0.0.1 loopback address embedded in ::ffff:127.0.0.1 127.0.0.0/8
	// 64:ff9b::a9fe:a9fe cloud metadata address embedded in 64:ff9b::a9fe:a9fe 169.254.169.254/32
}
