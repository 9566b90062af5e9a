package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"testing"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/mcptest"
)

// BenchmarkAuthRequest: one stateless request to the binary over loopback HTTP
// (tools/list, and a tools/call of toolbox_json_format that runs a guest), without
// authentication, with an API key, and with a JWT (RS256) verified against the
// cached JWKS. The difference per request is what verification costs there.
func BenchmarkAuthRequest(b *testing.B) {
	as := newTestAS(b)
	plugin := pluginTOML(b, "toolbox", "plugins/toolbox/toolbox.wasm", "")
	sum := sha256.Sum256([]byte("bench-key"))
	plainURL, _ := startHTTP(b, writeConfig(b, serverTOML(b)+plugin))
	keyURL, _ := startHTTP(b, writeConfig(b, serverTOML(b)+fmt.Sprintf(`[server.auth]
mode = "api_keys"

[[server.auth.keys]]
name = "bench"
sha256 = %q

[[server.auth.grants]]
key = "bench"
tools = ["*"]

`, hex.EncodeToString(sum[:]))+plugin))
	jwtURL, _ := startHTTP(b, oauthConfig(b, as))
	jwtTok := as.mint(b, as.user("alice", "mcp tools:json"), jose.RS256, nil, "k1")
	cases := []struct {
		name, url, token string
	}{{"none", plainURL, ""}, {"api_key", keyURL, "bench-key"}, {"jwt_RS256", jwtURL, jwtTok}}
	for _, method := range []string{"tools/list", "tools/call"} {
		for _, c := range cases {
			b.Run(method+"/"+c.name, func(b *testing.B) {
				client := &http.Client{Transport: http.DefaultTransport}
				if c.token != "" {
					client.Transport = bearer{c.token}
				}
				s := &mcptest.Stateless{URL: c.url, Client: client}
				params := map[string]any{}
				if method == "tools/call" {
					params = map[string]any{"name": "toolbox_json_format", "arguments": map[string]any{"json": `{"a":1}`}}
				}
				for b.Loop() {
					resp, err := s.Call(method, params, nil)
					if err != nil || resp.Error != nil || resp.HTTPStatus != 200 {
						b.Fatalf("%s = %+v, %v", method, resp, err)
					}
				}
			})
		}
	}
}
