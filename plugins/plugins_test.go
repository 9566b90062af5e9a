package plugins_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

func TestLoadChecksDigest(t *testing.T) {
	e := testenv.Engine(t)
	s := testenv.Spec(t, "textkit", "plugins/textkit/textkit.wasm")
	real := s.SHA256
	s.SHA256 = strings.Repeat("0", 64)
	_, err := plugins.Load(context.Background(), e, s)
	if err == nil || !strings.Contains(err.Error(), "has sha256 "+real+", but config pins "+s.SHA256) {
		t.Fatalf("Load(wrong digest) = %v, want both digests named", err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	e := testenv.Engine(t)
	_, err := plugins.Load(context.Background(), e, plugins.Spec{Name: "gone", Path: "/nonexistent.wasm"})
	if err == nil || !strings.Contains(err.Error(), `plugin "gone"`) || !strings.Contains(err.Error(), "/nonexistent.wasm") {
		t.Fatalf("Load(missing) = %v", err)
	}
}

func TestCatalog(t *testing.T) {
	e := testenv.Engine(t)
	tk := testenv.Load(t, e, testenv.Spec(t, "textkit", "plugins/textkit/textkit.wasm"))
	tb := testenv.Load(t, e, testenv.Spec(t, "toolbox", "plugins/toolbox/toolbox.wasm"))
	c, err := plugins.NewCatalog([]*plugins.Plugin{tk, tb})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"textkit_stats", "textkit_sha256", "toolbox_json_format", "toolbox_slow_count"} {
		if _, ok := c.Lookup(name); !ok {
			t.Errorf("Lookup(%q) = false, want the tool", name)
		}
	}
	slow, _ := c.Lookup("toolbox_slow_count")
	if slow.TaskSupport != plugins.TaskOptional {
		t.Errorf("toolbox_slow_count TaskSupport = %q, want optional", slow.TaskSupport)
	}
	if _, err := plugins.NewCatalog([]*plugins.Plugin{tk, tk}); err == nil {
		t.Error("NewCatalog(same plugin twice) = nil error, want a collision")
	}

	// prefix "": the guest's own names; two plugins offering one name are refused.
	bare := testenv.Spec(t, "bare", "plugins/textkit/textkit.wasm")
	bare.Unprefixed = true
	b1 := testenv.Load(t, e, bare)
	if b1.Tools[0].Name != b1.Tools[0].GuestName {
		t.Errorf("prefix \"\": name %q, want %q", b1.Tools[0].Name, b1.Tools[0].GuestName)
	}
	bare.Name = "bare2"
	b2 := testenv.Load(t, e, bare)
	_, err = plugins.NewCatalog([]*plugins.Plugin{b1, b2})
	if err == nil || !strings.Contains(err.Error(), `plugins "bare" and "bare2"`) {
		t.Errorf("NewCatalog(two plugins with prefix \"\") = %v, want a collision naming both", err)
	}
}

func TestArgumentsAndOutput(t *testing.T) {
	e := testenv.Engine(t)
	tk := testenv.Load(t, e, testenv.Spec(t, "textkit", "plugins/textkit/textkit.wasm"))
	c, _ := plugins.NewCatalog([]*plugins.Plugin{tk})
	sha, _ := c.Lookup("textkit_sha256")
	tests := []struct {
		args string
		want string // "" means valid
	}{
		{`{"text":"abc"}`, ""},
		{`{}`, "required"},
		{`{"text":5}`, "want \"string\""},
		{`[1]`, "must be a JSON object"},
		{`{"text":"a"`, "unexpected end"},
		{"{\"text\":\"\xff\"}", "not valid UTF-8"},
		{`{"text":"a","text":"b"}`, "duplicate object key"},
		{`{"text":"\ud800"}`, "lone surrogate"},
	}
	for _, tt := range tests {
		err := sha.CheckArguments(context.Background(), json.RawMessage(tt.args))
		var ae *plugins.ArgumentError
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("CheckArguments(%s) = %v, want nil", tt.args, err)
		case tt.want != "" && (!errors.As(err, &ae) || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("CheckArguments(%s) = %v, want an ArgumentError containing %q", tt.args, err, tt.want)
		}
	}
	out, err := sha.Call(context.Background(), json.RawMessage(`{"text":"abc"}`), nil)
	if err != nil || !strings.Contains(string(out), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") {
		t.Fatalf("Call(sha256 abc) = %s, %v", out, err)
	}
}

func TestGuestFailureIsTyped(t *testing.T) {
	e := testenv.Engine(t)
	s := testenv.Spec(t, "spin", "testdata/wasm/loop.wasm")
	s.Limits = sandbox.Limits{Timeout: 100_000_000} // 100ms
	p := testenv.Load(t, e, s)
	_, err := p.Tools[0].Call(context.Background(), nil, nil)
	var ge *sandbox.GuestError
	if !errors.As(err, &ge) || ge.Kind != sandbox.KindTimeout {
		t.Fatalf("Call(spin) = %v, want a timeout GuestError", err)
	}
}
