package egress

import (
	"net/netip"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		reason string // "" for public
	}{
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		{"2606:4700:4700::1111", ""},
		{"127.0.0.1", "loopback"},
		{"127.255.255.254", "loopback"},
		{"::1", "loopback"},
		{"0.0.0.0", "unspecified"},
		{"::", "unspecified"},
		{"10.0.0.5", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"fc00::1", "private"},
		{"fd12:3456::1", "private"},
		{"169.254.1.1", "link-local"},
		{"fe80::1", "link-local"},
		{"100.64.0.1", "CGNAT"},
		{"100.127.255.255", "CGNAT"},
		{"224.0.0.1", "multicast"},
		{"ff02::1", "multicast"},
		{"255.255.255.255", "broadcast"},
		{"169.254.169.254", "cloud metadata"},
		{"fd00:ec2::254", "cloud metadata"},
		{"::ffff:127.0.0.1", "loopback address embedded"},
		{"::ffff:169.254.169.254", "cloud metadata address embedded"},
		{"::ffff:10.1.2.3", "private address embedded"},
		{"64:ff9b::a00:1", "private address embedded"},
		{"64:ff9b::7f00:1", "loopback address embedded"},
		{"2002:7f00:1::1", "loopback address embedded"},
		{"2002:a9fe:a9fe::", "cloud metadata address embedded"},
		{"::127.0.0.1", "IPv4-compatible"},
		{"2001::1", "Teredo"},
		{"fe80::1%eth0", "scoped"},
		{"::ffff:8.8.8.8", ""},
		{"64:ff9b::808:808", ""},
		{"2002:808:808::1", ""},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			_, reason, ok := Classify(netip.MustParseAddr(tc.addr))
			if tc.reason == "" {
				if !ok {
					t.Fatalf("Classify(%s) = %q, want public", tc.addr, reason)
				}
				return
			}
			if ok || !strings.Contains(reason, tc.reason) {
				t.Fatalf("Classify(%s) = %q, %v, want a refusal naming %q", tc.addr, reason, ok, tc.reason)
			}
		})
	}
}

func TestParseTarget(t *testing.T) {
	for _, tc := range []struct {
		url    string
		origin string // "" when refused
	}{
		{"https://api.example.com/x?y=1", "https://api.example.com"},
		{"https://API.Example.com:8443/", "https://api.example.com:8443"},
		{"http://93.184.216.34/", "http://93.184.216.34"},
		{"http://[2606:4700::1]:8080/", "http://[2606:4700::1]:8080"},
		{"http://2130706433/", ""},
		{"http://0x7f000001/", ""},
		{"http://0x7f.0.0.1/", ""},
		{"http://0177.0.0.1/", ""},
		{"http://127.1/", ""},
		{"http://127.0.0.01/", ""},
		{"http://1.2.3/", ""},
		{"http://[::ffff:7f00:1%25eth0]/", ""},
		{"http://user:pw@example.com/", ""},
		{"ftp://example.com/", ""},
		{"file:///etc/passwd", ""},
		{"http://exa_mple.com/", ""},
		{"http://example.com./", ""},
		{"http://ex%61mple.com/", ""},
		{"http://example.com:0/", ""},
		{"http://example.com:99999/", ""},
		{"http:example.com", ""},
	} {
		t.Run(tc.url, func(t *testing.T) {
			tg, err := parseTarget(tc.url)
			if tc.origin == "" {
				if err == nil {
					t.Fatalf("parseTarget(%q) = %s, want refused", tc.url, tg.origin())
				}
				return
			}
			if err != nil || tg.origin() != tc.origin {
				t.Fatalf("parseTarget(%q) = %q, %v, want %q", tc.url, tg.origin(), err, tc.origin)
			}
		})
	}
}
