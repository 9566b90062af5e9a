package host

import "testing"

func TestSourceOf(t *testing.T) {
	tests := []struct {
		remote, want string
	}{
		{"127.0.0.2:5000", "127.0.0.2/32"},
		{"[::ffff:10.1.2.3]:80", "10.1.2.3/32"},
		{"[2001:db8:1:2:3:4:5:6]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::1]:443", "2001:db8:1:2::/64"},
		{"[fe80::1%eth0]:22", "fe80::/64"},
		{"not an address", "invalid Prefix"},
	}
	for _, tt := range tests {
		t.Run(tt.remote, func(t *testing.T) {
			if got := sourceOf(tt.remote).String(); got != tt.want {
				t.Errorf("sourceOf(%q) = %s, want %s", tt.remote, got, tt.want)
			}
		})
	}
}
