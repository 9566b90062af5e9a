package host

import (
	"testing"
	"time"
)

func TestShortDuration(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{time.Hour, "1h"},
		{2 * time.Second, "2s"},
		{90 * time.Second, "1m30s"},
		{10 * time.Minute, "10m"},
		{time.Hour + time.Minute, "1h1m"},
		{time.Hour + time.Second, "1h0m1s"},
		{24 * time.Hour, "24h"},
		{1500 * time.Millisecond, "1.5s"},
	} {
		t.Run(tt.want, func(t *testing.T) {
			if got := shortDuration(tt.d); got != tt.want {
				t.Errorf("shortDuration(%v) = %q, want %q", tt.d, got, tt.want)
			}
		})
	}
}
