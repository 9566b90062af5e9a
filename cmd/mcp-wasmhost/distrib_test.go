package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/lock"
	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/oci"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/registrytest"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/sigtest"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
)

// ociConfig writes a config whose [server.distribution] reaches reg with a password
// file, plus extra plugin tables, with the signer's key beside it. It returns its path.
func ociConfig(t *testing.T, reg *registrytest.Registry, key *sigtest.Key, plugins string) string {
	t.Helper()
	cfg := writeConfig(t, "")
	dir := filepath.Dir(cfg)
	os.WriteFile(filepath.Join(dir, "cosign.pub"), key.PublicPEM, 0o644)
	os.WriteFile(filepath.Join(dir, "registry.password"), []byte("s3cret\n"), 0o600)
	body := serverTOML(t) + fmt.Sprintf(`[server.distribution]
cache_dir = %q
docker_config = "no-docker-config.json"
[[server.distribution.registries]]
host = %q
username = "ci"
password_file = "registry.password"
plain_http = true

`, filepath.Join(dir, "oci-cache"), reg.Host) + plugins
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func sourceTOML(name, source, verify string) string {
	return fmt.Sprintf("[[plugins]]\nname = %q\nsource = %q\nmemory_mib = 16\n%s\n\n", name, source, verify)
}

const keyed = "[plugins.verify]\nkey = \"cosign.pub\""

// TestOCIPushPullRun is the whole path through the real binary against a registry with
// password auth: push a module, sign it, publish the same module in hyper-mcp's Docker
// image layout, pull both, check shows their provenance, then the registry stops and
// the server serves both plugins from the cache over stdio.
func TestOCIPushPullRun(t *testing.T) {
	reg := registrytest.Start(t, registrytest.Options{Username: "ci", Password: "s3cret"})
	key := sigtest.NewKey(t)
	kit := "oci://" + reg.Host + "/plugins/textkit:1.0.0"
	hyper := "oci://" + reg.Host + "/hyper-mcp/textkit-plugin:latest"
	cfg := ociConfig(t, reg, key, sourceTOML("kit", kit, keyed)+sourceTOML("hyper", hyper, keyed))

	// push, as a plugin author does.
	wasmPath := testenv.Path("plugins/textkit/textkit.wasm")
	out, err := exec.Command(binary, "--config", cfg, "push", wasmPath, kit).Output()
	if err != nil {
		t.Fatalf("push: %v: %s", err, stderrOf(err))
	}
	pushed := strings.TrimSpace(string(out))
	if _, err := digest.Parse(pushed); err != nil {
		t.Fatalf("push printed %q, want the manifest digest", out)
	}
	client, err := oci.NewClient(oci.Options{Registries: []oci.Registry{{Host: reg.Host, Username: "ci", Password: "s3cret", PlainHTTP: true}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	kitRef, _ := oci.ParseRef(kit)
	if _, err := client.AttachBundle(ctx, kitRef, ocispec.Descriptor{Digest: digest.Digest(pushed)}, key.Sign(t, pushed), false); err != nil {
		t.Fatal(err)
	}
	hyperRef, _ := oci.ParseRef(hyper)
	wasm, _ := os.ReadFile(wasmPath)
	hd, err := client.Push(ctx, hyperRef, wasm, oci.LayoutDockerImage)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.AttachBundle(ctx, hyperRef, hd, key.Sign(t, hd.Digest.String()), true); err != nil {
		t.Fatal(err)
	}

	// pull writes the lockfile.
	start := time.Now()
	out, err = exec.Command(binary, "--config", cfg, "pull").Output()
	t.Logf("pull of two sources: %s", time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("pull: %v: %s", err, stderrOf(err))
	}
	lf, err := lock.Read(lock.Path(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if e := lf.Plugins["kit"]; e.Digest != pushed || e.Signer == nil || e.Signer.Kind != "key" {
		t.Errorf("lockfile kit = %+v, want %s signed by the key", e, pushed)
	}
	if e := lf.Plugins["hyper"]; e.Digest != hd.Digest.String() || e.Layout != string(oci.LayoutDockerImage) || e.Module != lf.Plugins["kit"].Module {
		t.Errorf("lockfile hyper = %+v, want %s in the Docker layout, same module", e, hd.Digest)
	}
	if !strings.Contains(string(out), pushed) {
		t.Errorf("pull output lacks the digest:\n%s", out)
	}

	// check shows provenance.
	start = time.Now()
	out, err = exec.Command(binary, "--config", cfg, "check").Output()
	t.Logf("check, cache warm, both verified: %s", time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("check: %v: %s", err, stderrOf(err))
	}
	for _, want := range []string{kit, pushed, hyper, hd.Digest.String(), "key sha256:", "kit_ping", "hyper_ping"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}

	// The tag moves (the same module republished in another layout, signed): only
	// pull brings the new digest, and says so.
	moved, err := client.Push(ctx, kitRef, wasm, oci.LayoutHyperORAS)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.AttachBundle(ctx, kitRef, moved, key.Sign(t, moved.Digest.String()), false); err != nil {
		t.Fatal(err)
	}
	if lf, _ := lock.Read(lock.Path(cfg)); lf.Plugins["kit"].Digest != pushed {
		t.Fatalf("the lockfile changed without a pull: %+v", lf.Plugins["kit"])
	}
	combined, err := exec.Command(binary, "--config", cfg, "pull", "kit").CombinedOutput()
	if err != nil || !strings.Contains(string(combined), "plugin updated") || !strings.Contains(string(combined), moved.Digest.String()) {
		t.Errorf("pull after the tag moved = %v:\n%s", err, combined)
	}
	pushed = moved.Digest.String()
	if lf, _ := lock.Read(lock.Path(cfg)); lf.Plugins["kit"].Digest != pushed || lf.Plugins["hyper"].Digest != hd.Digest.String() {
		t.Errorf("lockfile after pull kit = %+v", lf.Plugins)
	}

	// The registry stops; the server needs only the cache.
	reg.Stop()
	cs, stderr := connectStdio(t, "--config", cfg)
	for _, tool := range []string{"kit_ping", "hyper_ping"} {
		if got := callText(t, cs, tool, map[string]any{}); got != "pong" {
			t.Errorf("%s = %q, want pong; stderr:\n%s", tool, got, stderr)
		}
	}
	cs.Close()

	// pull with the registry down keeps the locked digests, with a warning.
	combined, err = exec.Command(binary, "--config", cfg, "pull").CombinedOutput()
	if err != nil || !strings.Contains(string(combined), "registry unreachable") {
		t.Errorf("pull with the registry down = %v:\n%s", err, combined)
	}
	if again, _ := lock.Read(lock.Path(cfg)); again.Plugins["kit"].Digest != pushed {
		t.Errorf("the lockfile changed: %+v", again.Plugins["kit"])
	}
}

// TestOCIRefusedAtStart: a source the lockfile does not pin, or whose cached module was
// changed, is refused with the reason and the other plugins are served; a source with
// no policy is a config error.
func TestOCIRefusedAtStart(t *testing.T) {
	reg := registrytest.Start(t, registrytest.Options{Username: "ci", Password: "s3cret"})
	key := sigtest.NewKey(t)
	src := "oci://" + reg.Host + "/plugins/unpulled:1"
	cfg := ociConfig(t, reg, key, sourceTOML("unpulled", src, keyed)+
		pluginTOML(t, "textkit", "plugins/textkit/textkit.wasm", ""))
	cs, stderr := connectStdio(t, "--config", cfg)
	if got := callText(t, cs, "textkit_ping", map[string]any{}); got != "pong" {
		t.Errorf("textkit_ping = %q", got)
	}
	if log := stderr.String(); !strings.Contains(log, "run mcp-wasmhost pull") || !strings.Contains(log, `plugin=unpulled`) {
		t.Errorf("stderr does not refuse the unpulled source with the fix:\n%s", log)
	}
	cs.Close()

	// A lockfile that does not parse refuses the sources, names the file, and the
	// local plugin is still served.
	os.WriteFile(lock.Path(cfg), []byte(`{"version":1,"plugins":{"unpulled":{"source":"oci://x/y:1","digest":"sha256:nothex"}}}`), 0o644)
	out, err := exec.Command(binary, "--config", cfg, "check").CombinedOutput()
	if err == nil || !strings.Contains(string(out), lock.FileName) || !strings.Contains(string(out), "textkit_ping") {
		t.Errorf("check with a bad lockfile = %v:\n%s", err, out)
	}

	noPolicy := ociConfig(t, reg, key, sourceTOML("bare", src, ""))
	out, err = exec.Command(binary, "--config", noPolicy, "check").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "source needs a signature policy") {
		t.Errorf("check of a source without a policy = %v:\n%s", err, out)
	}

	// verify = "none" must be written, and it is logged at start.
	client, _ := oci.NewClient(oci.Options{Registries: []oci.Registry{{Host: reg.Host, Username: "ci", Password: "s3cret", PlainHTTP: true}}})
	ref, _ := oci.ParseRef(src)
	wasm, _ := os.ReadFile(testenv.Path("plugins/textkit/textkit.wasm"))
	if _, err := client.Push(context.Background(), ref, wasm, oci.LayoutHyperORAS); err != nil {
		t.Fatal(err)
	}
	unsigned := ociConfig(t, reg, key, sourceTOML("unsigned", src, `verify = "none"`))
	if out, err := exec.Command(binary, "--config", unsigned, "pull").CombinedOutput(); err != nil {
		t.Fatalf("pull: %v\n%s", err, out)
	}
	out, err = exec.Command(binary, "--config", unsigned, "check").CombinedOutput()
	if err != nil || !strings.Contains(string(out), `verify = \"none\"`) || !strings.Contains(string(out), "unverified") {
		t.Errorf("check of an unsigned source = %v:\n%s", err, out)
	}
	// A cached module changed on disk is refused at start.
	lf, _ := lock.Read(lock.Path(unsigned))
	h := strings.TrimPrefix(lf.Plugins["unsigned"].Module, "sha256:")
	p := filepath.Join(filepath.Dir(unsigned), "oci-cache", "blobs", "sha256", h)
	b, _ := os.ReadFile(p)
	b[len(b)-1] ^= 1
	os.WriteFile(p, b, 0o600)
	out, err = exec.Command(binary, "--config", unsigned, "check").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "cached blob does not match its digest") {
		t.Errorf("check with a changed cache = %v:\n%s", err, out)
	}
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// TestPullHandEditedLockfile: a lockfile entry edited by hand (a key_id cut short) is
// refused by pull with the file, the line and the field, even with the registry down,
// where pull used to print the kept entry and panic slicing the key ID.
func TestPullHandEditedLockfile(t *testing.T) {
	reg := registrytest.Start(t, registrytest.Options{Username: "ci", Password: "s3cret"})
	key := sigtest.NewKey(t)
	src := "oci://" + reg.Host + "/plugins/edited:1"
	cfg := ociConfig(t, reg, key, sourceTOML("edited", src, keyed))
	client, err := oci.NewClient(oci.Options{Registries: []oci.Registry{{Host: reg.Host, Username: "ci", Password: "s3cret", PlainHTTP: true}}})
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := oci.ParseRef(src)
	wasm, _ := os.ReadFile(testenv.Path("plugins/textkit/textkit.wasm"))
	d, err := client.Push(context.Background(), ref, wasm, oci.LayoutWasm)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.AttachBundle(context.Background(), ref, d, key.Sign(t, d.Digest.String()), false); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(binary, "--config", cfg, "pull").CombinedOutput(); err != nil {
		t.Fatalf("pull: %v\n%s", err, out)
	}
	reg.Stop()
	path := lock.Path(cfg)
	b, _ := os.ReadFile(path)
	keyID := lockedKeyID(t, path)
	edited := strings.Replace(string(b), `"key_id": "`+keyID+`"`, `"key_id": "ab"`, 1)
	if edited == string(b) {
		t.Fatalf("key_id %s not found in the lockfile:\n%s", keyID, b)
	}
	os.WriteFile(path, []byte(edited), 0o644)
	line := 1 + strings.Count(edited[:strings.Index(edited, `"edited": {`)], "\n")
	out, err := exec.Command(binary, "--config", cfg, "pull").CombinedOutput()
	if err == nil || strings.Contains(string(out), "panic") {
		t.Fatalf("pull with a cut key_id = %v, want a refusal:\n%s", err, out)
	}
	for _, want := range []string{fmt.Sprintf("%s:%d:", path, line), `plugin "edited"`, `signer.key_id "ab"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("pull's refusal lacks %q:\n%s", want, out)
		}
	}
	if after, _ := os.ReadFile(path); string(after) != edited {
		t.Errorf("pull rewrote a lockfile it refused:\n%s", after)
	}
}

func lockedKeyID(t *testing.T, path string) string {
	t.Helper()
	lf, err := lock.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range lf.Plugins {
		if e.Signer != nil && e.Signer.KeyID != "" {
			return e.Signer.KeyID
		}
	}
	t.Fatalf("no key_id in %s", path)
	return ""
}

// TestOCIPolicyChangedAtStart: the server verifies every start, cache warm and registry
// stopped, under the policy in the config then: after the key and the identity change
// in config, the keyed and the keyless plugin are refused with "wrong key" and "wrong
// identity", and the local plugin is still served.
func TestOCIPolicyChangedAtStart(t *testing.T) {
	reg := registrytest.Start(t, registrytest.Options{Username: "ci", Password: "s3cret"})
	key := sigtest.NewKey(t)
	vs := sigtest.NewSigstore(t)
	const identity, issuer = "dev@plugins.example", "https://issuer.example"
	keyedSrc := "oci://" + reg.Host + "/plugins/keyed:1"
	keylessSrc := "oci://" + reg.Host + "/plugins/keyless:1"
	keyless := func(id string) string {
		return fmt.Sprintf("[plugins.verify]\nidentity = %q\nissuer = %q\ntrusted_root = \"trusted_root.json\"", id, issuer)
	}
	local := pluginTOML(t, "textkit", "plugins/textkit/textkit.wasm", "")
	cfg := ociConfig(t, reg, key, sourceTOML("keyed", keyedSrc, keyed)+sourceTOML("keyless", keylessSrc, keyless(identity))+local)
	dir := filepath.Dir(cfg)
	os.WriteFile(filepath.Join(dir, "trusted_root.json"), vs.TrustedRoot(t), 0o644)

	client, err := oci.NewClient(oci.Options{Registries: []oci.Registry{{Host: reg.Host, Username: "ci", Password: "s3cret", PlainHTTP: true}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	wasm, _ := os.ReadFile(testenv.Path("plugins/textkit/textkit.wasm"))
	for _, s := range []struct {
		src  string
		sign func(digest string) []byte
	}{
		{keyedSrc, func(d string) []byte { return key.Sign(t, d) }},
		{keylessSrc, func(d string) []byte { return vs.Sign(t, identity, issuer, d) }},
	} {
		ref, _ := oci.ParseRef(s.src)
		d, err := client.Push(ctx, ref, wasm, oci.LayoutWasm)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.AttachBundle(ctx, ref, d, s.sign(d.Digest.String()), true); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command(binary, "--config", cfg, "pull").CombinedOutput(); err != nil {
		t.Fatalf("pull: %v\n%s", err, out)
	}
	reg.Stop()
	if out, err := exec.Command(binary, "--config", cfg, "check").CombinedOutput(); err != nil {
		t.Fatalf("check with the policy of the pull: %v\n%s", err, out)
	}

	// Another key in cosign.pub, another identity in config.toml.
	os.WriteFile(filepath.Join(dir, "cosign.pub"), sigtest.NewKey(t).PublicPEM, 0o644)
	body, _ := os.ReadFile(cfg)
	changed := strings.Replace(string(body), keyless(identity), keyless("other@plugins.example"), 1)
	if changed == string(body) {
		t.Fatal("the keyless policy is not in the config")
	}
	os.WriteFile(cfg, []byte(changed), 0o644)

	cs, stderr := connectStdio(t, "--config", cfg)
	if got := callText(t, cs, "textkit_ping", map[string]any{}); got != "pong" {
		t.Errorf("textkit_ping = %q, want pong", got)
	}
	cs.Close()
	refusals := map[string]string{"keyed": "wrong key:", "keyless": "wrong identity:"}
	for _, line := range strings.Split(stderr.String(), "\n") {
		for plugin, reason := range refusals {
			if strings.Contains(line, "plugin refused") && strings.Contains(line, "plugin="+plugin+" ") && strings.Contains(line, reason) {
				delete(refusals, plugin)
			}
		}
	}
	for plugin, reason := range refusals {
		t.Errorf("no \"plugin refused\" line for %s with %q at start:\n%s", plugin, reason, stderr)
	}
	out, err := exec.Command(binary, "--config", cfg, "check").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "wrong key:") || !strings.Contains(string(out), "wrong identity:") {
		t.Errorf("check after the policy changed = %v, want both refusals named:\n%s", err, out)
	}
}

// TestOCIExtismPluginRefused: a module built with Extism's PDK, as hyper-mcp's published
// plugins are, in hyper-mcp's Docker image layout: pull fetches it, and the host refuses
// it at load for its Extism imports, naming them, while the other plugins are served.
func TestOCIExtismPluginRefused(t *testing.T) {
	reg := registrytest.Start(t, registrytest.Options{Username: "ci", Password: "s3cret"})
	key := sigtest.NewKey(t)
	src := "oci://" + reg.Host + "/hyper-mcp/time-plugin:latest"
	cfg := ociConfig(t, reg, key, sourceTOML("time", src, keyed)+pluginTOML(t, "textkit", "plugins/textkit/textkit.wasm", ""))
	client, err := oci.NewClient(oci.Options{Registries: []oci.Registry{{Host: reg.Host, Username: "ci", Password: "s3cret", PlainHTTP: true}}})
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := oci.ParseRef(src)
	d, err := client.Push(context.Background(), ref, extismModule(), oci.LayoutDockerImage)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.AttachBundle(context.Background(), ref, d, key.Sign(t, d.Digest.String()), true); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(binary, "--config", cfg, "pull").CombinedOutput(); err != nil {
		t.Fatalf("pull of an Extism plugin: %v\n%s", err, out)
	}
	const want = `imports extism:host/env.input_length, but the host provides no module "extism:host/env"`
	out, err := exec.Command(binary, "--config", cfg, "check").CombinedOutput()
	if err == nil || !strings.Contains(string(out), want) || !strings.Contains(string(out), "textkit_ping") {
		t.Errorf("check of an Extism plugin = %v, want %q and textkit served:\n%s", err, want, out)
	}
}

// extismModule is the shape of an Extism PDK plugin: it imports the Extism kernel's
// functions from "extism:host/env" and exports its memory and its handlers.
func extismModule() []byte {
	section := func(id byte, body ...byte) []byte { return append([]byte{id, byte(len(body))}, body...) }
	name := func(s string) []byte { return append([]byte{byte(len(s))}, s...) }
	var imp []byte
	imp = append(imp, 1) // one import
	imp = append(imp, name("extism:host/env")...)
	imp = append(imp, name("input_length")...)
	imp = append(imp, 0x00, 0) // a function of type 0
	var exp []byte
	exp = append(exp, 2)
	exp = append(exp, name("memory")...)
	exp = append(exp, 0x02, 0)
	exp = append(exp, name("call")...)
	exp = append(exp, 0x00, 1) // function 1, after the import
	m := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	m = append(m, section(1, 2, 0x60, 0, 1, 0x7e, 0x60, 0, 1, 0x7f)...) // () -> i64, () -> i32
	m = append(m, section(2, imp...)...)
	m = append(m, section(3, 1, 1)...)    // one function of type 1
	m = append(m, section(5, 1, 0, 1)...) // one memory, one page
	m = append(m, section(7, exp...)...)
	m = append(m, section(10, 1, 4, 0, 0x41, 0, 0x0b)...) // call: i32.const 0
	return m
}
