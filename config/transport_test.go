package config_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/config"
)

func TestTransportLimits(t *testing.T) {
	tests := []struct {
		doc  string
		want config.Server // only the four transport limits are compared
		fail string
	}{
		{"", config.Server{}, ""}, // zero: the host's defaults
		{"[server]\nmax_message_bytes = 1048576\nbody_read_timeout = \"2s\"\nmax_sessions = 5\nsession_idle_timeout = \"10m\"\n",
			config.Server{MaxMessageBytes: 1 << 20, BodyReadTimeout: config.Duration{Duration: 2 * time.Second},
				MaxSessions: 5, SessionIdleTimeout: config.Duration{Duration: 10 * time.Minute}}, ""},
		{"[server]\nmax_message_bytes = 100\n", config.Server{}, "max_message_bytes 100 out of range"},
		{"[server]\nbody_read_timeout = \"1ms\"\n", config.Server{}, "body_read_timeout 1ms out of range"},
		{"[server]\nmax_sessions = -1\n", config.Server{}, "max_sessions -1 out of range"},
		{"[server]\nsession_idle_timeout = \"1000h\"\n", config.Server{}, "session_idle_timeout 1000h0m0s out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.doc, func(t *testing.T) {
			cfg, err := config.Parse([]byte(tt.doc), "config.toml", t.TempDir())
			switch {
			case tt.fail != "":
				if err == nil || !strings.Contains(err.Error(), tt.fail) {
					t.Errorf("Parse(%q) = %v, want %q", tt.doc, err, tt.fail)
				}
				return
			case err != nil:
				t.Fatalf("Parse(%q) = %v", tt.doc, err)
			}
			s := cfg.Server
			got := config.Server{MaxMessageBytes: s.MaxMessageBytes, BodyReadTimeout: s.BodyReadTimeout,
				MaxSessions: s.MaxSessions, SessionIdleTimeout: s.SessionIdleTimeout}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse(%q).Server limits = %+v, want %+v", tt.doc, got, tt.want)
			}
		})
	}
}
