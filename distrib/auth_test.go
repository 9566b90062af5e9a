package distrib_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-wasmhost/mcp-wasmhost/distrib"
	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/cache"
	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/oci"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/registrytest"
)

// TestRegistryAuth: credentials come from a Docker config.json, or from config for the
// host (which wins); without them the registry's refusal is reported.
func TestRegistryAuth(t *testing.T) {
	reg := registrytest.Start(t, registrytest.Options{Username: "ci", Password: "pw"})
	docker := filepath.Join(t.TempDir(), "config.json")
	b, _ := json.Marshal(map[string]any{"auths": map[string]any{reg.Host: map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte("ci:pw"))}}})
	os.WriteFile(docker, b, 0o600)
	ref := oci.Ref{Registry: reg.Host, Repository: "auth/plugin", Tag: "1"}
	tests := []struct {
		name string
		opts oci.Options
		fail string // "" when the pull succeeds
	}{
		{"docker config", oci.Options{DockerConfig: docker, Registries: []oci.Registry{{Host: reg.Host, PlainHTTP: true}}}, ""},
		{"config password", oci.Options{Registries: []oci.Registry{{Host: reg.Host, Username: "ci", Password: "pw", PlainHTTP: true}}}, ""},
		{"config overrides docker config", oci.Options{DockerConfig: docker, Registries: []oci.Registry{{Host: reg.Host, Username: "ci", Password: "wrong", PlainHTTP: true}}}, "401"},
		{"no credentials", oci.Options{Registries: []oci.Registry{{Host: reg.Host, PlainHTTP: true}}}, "asks for credentials and none are configured"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, err := oci.NewClient(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			store, _ := cache.Open(t.TempDir())
			if i == 0 {
				if _, err := client.Push(context.Background(), ref, textkit(t), oci.LayoutWasm); err != nil {
					t.Fatalf("push: %v", err)
				}
			}
			_, err = distrib.Pull(context.Background(), distrib.Options{Cache: store, Client: client}, distrib.Source{Name: "a", Ref: ref})
			if tt.fail == "" && err != nil {
				t.Fatalf("Pull = %v", err)
			}
			if tt.fail != "" && (err == nil || !strings.Contains(err.Error(), tt.fail)) {
				t.Fatalf("Pull = %v, want an error with %q", err, tt.fail)
			}
		})
	}
}
