package oci_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"strings"
	"testing"

	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/oci"
)

const hex64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestParseRef(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{in: "oci://ghcr.io/org/plugin:1.2.0", want: "oci://ghcr.io/org/plugin:1.2.0"},
		{in: "oci://127.0.0.1:5000/a/b/c:v1", want: "oci://127.0.0.1:5000/a/b/c:v1"},
		{in: "oci://ghcr.io/org/plugin@sha256:" + hex64, want: "oci://ghcr.io/org/plugin@sha256:" + hex64},
		{in: "ghcr.io/org/plugin:1", err: "want oci://"},
		{in: "oci://ghcr.io/org/plugin", err: "name a tag"},
		{in: "oci://ghcr.io/org/plugin:1@sha256:" + hex64, err: "not both"},
		{in: "oci://ghcr.io/org/plugin@sha512:" + hex64 + hex64, err: "sha256"},
		{in: "oci://ghcr.io/Org/plugin:1", err: "invalid"},
	}
	for _, tt := range tests {
		r, err := oci.ParseRef(tt.in)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ParseRef(%q) = %v, %v; want an error with %q", tt.in, r, err, tt.err)
		case tt.err == "" && (err != nil || r.String() != tt.want):
			t.Errorf("ParseRef(%q) = %q, %v; want %q", tt.in, r, err, tt.want)
		}
	}
}

var module = []byte("\x00asm\x01\x00\x00\x00")

func tarOf(t *testing.T, files map[string][]byte, gz bool) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for name, content := range files {
		tw.WriteHeader(&tar.Header{Name: name, Size: int64(len(content)), Mode: 0o644, Typeflag: tar.TypeReg})
		tw.Write(content)
	}
	tw.Close()
	if !gz {
		return b.Bytes()
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(b.Bytes())
	zw.Close()
	return z.Bytes()
}

func TestExtract(t *testing.T) {
	other := []byte("\x00asm\x01\x00\x00\x00\x00")
	tests := []struct {
		name      string
		layer     []byte
		mediaType string
		want      []byte
		err       string
	}{
		{"raw", module, oci.MediaTypeWasmLayer, module, ""},
		{"raw under a tar type (hyper-mcp ORAS)", module, "application/vnd.oci.image.layer.v1.tar", module, ""},
		{"not wasm", []byte("hello"), oci.MediaTypeWasmLayer, nil, "not a WebAssembly module"},
		{"tar.gz with /plugin.wasm", tarOf(t, map[string][]byte{"plugin.wasm": module, "other.wasm": other}, true), "application/vnd.docker.image.rootfs.diff.tar.gzip", module, ""},
		{"tar with ./plugin.wasm", tarOf(t, map[string][]byte{"./plugin.wasm": module}, false), "application/vnd.oci.image.layer.v1.tar", module, ""},
		{"tar with one other .wasm", tarOf(t, map[string][]byte{"app/tool.wasm": other}, true), "application/vnd.oci.image.layer.v1.tar+gzip", other, ""},
		{"tar with two .wasm", tarOf(t, map[string][]byte{"a.wasm": module, "b.wasm": other}, true), "application/vnd.oci.image.layer.v1.tar+gzip", nil, "2 .wasm files"},
		{"tar without wasm", tarOf(t, map[string][]byte{"README": []byte("x")}, true), "application/vnd.oci.image.layer.v1.tar+gzip", nil, "no /plugin.wasm"},
		{"unknown type", module, "application/zip", nil, "unknown media type"},
	}
	for _, tt := range tests {
		got, err := oci.Extract(tt.layer, tt.mediaType)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s: Extract = %v; want an error with %q", tt.name, err, tt.err)
		case tt.err == "" && (err != nil || !bytes.Equal(got, tt.want)):
			t.Errorf("%s: Extract = %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}

// TestGzipBomb: a small gzip layer that unpacks past MaxUnpackedBytes is refused. The
// layer is gzip members concatenated (one reader reads them as one stream): a tar
// header, then the same compressed MiB of zeros again and again.
func TestGzipBomb(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("inflates 520 MiB")
	}
	member := func(b []byte) []byte {
		var z bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
		zw.Write(b)
		zw.Close()
		return z.Bytes()
	}
	size := int64(oci.MaxUnpackedBytes + 8<<20)
	var hdr bytes.Buffer
	tw := tar.NewWriter(&hdr)
	tw.WriteHeader(&tar.Header{Name: "plugin.wasm", Size: size, Mode: 0o644, Typeflag: tar.TypeReg})
	layer := member(hdr.Bytes())
	zeros := member(make([]byte, 1<<20))
	for n := int64(0); n < size; n += 1 << 20 {
		layer = append(layer, zeros...)
	}
	_, err := oci.Extract(layer, "application/vnd.oci.image.layer.v1.tar+gzip")
	if !errors.Is(err, oci.ErrTooLarge) {
		t.Fatalf("Extract of a %d-byte gzip unpacking to %d = %v, want ErrTooLarge", len(layer), size, err)
	}
	// The same with a filler entry before a small /plugin.wasm.
	hdr.Reset()
	tw = tar.NewWriter(&hdr)
	tw.WriteHeader(&tar.Header{Name: "filler.bin", Size: size, Mode: 0o644, Typeflag: tar.TypeReg})
	layer = member(hdr.Bytes())
	for n := int64(0); n < size; n += 1 << 20 {
		layer = append(layer, zeros...)
	}
	if _, err := oci.Extract(layer, "application/vnd.oci.image.layer.v1.tar+gzip"); !errors.Is(err, oci.ErrTooLarge) {
		t.Fatalf("Extract of a filler bomb = %v, want ErrTooLarge", err)
	}
}

func TestParseManifest(t *testing.T) {
	desc := `{"mediaType":"application/wasm","digest":"sha256:` + hex64 + `","size":8}`
	cfg := `{"mediaType":"application/vnd.wasm.config.v0+json","digest":"sha256:` + hex64 + `","size":2}`
	tests := []struct {
		name, body, ctype string
		layout            oci.Layout
		err               error
		errText           string
	}{
		{"wasm artifact", `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":` + cfg + `,"layers":[` + desc + `]}`, "", oci.LayoutWasm, nil, ""},
		{"media type from the header", `{"schemaVersion":2,"config":` + cfg + `,"layers":[` + desc + `]}`, "application/vnd.oci.image.manifest.v1+json", oci.LayoutWasm, nil, ""},
		{"unknown manifest type", `{"mediaType":"application/vnd.oci.artifact.manifest.v1+json"}`, "", "", oci.ErrUnknownMediaType, ""},
		{"sha512 layer", strings.Replace(`{"mediaType":"application/vnd.oci.image.manifest.v1+json","config":`+cfg+`,"layers":[`+desc+`]}`, `"sha256:`+hex64+`","size":8`, `"sha512:`+hex64+hex64+`","size":8`, 1), "", "", nil, "sha256"},
		{"layer too large", strings.Replace(`{"mediaType":"application/vnd.oci.image.manifest.v1+json","config":`+cfg+`,"layers":[`+desc+`]}`, `"size":8`, `"size":999999999999`, 1), "", "", oci.ErrTooLarge, ""},
		{"no layers", `{"mediaType":"application/vnd.oci.image.manifest.v1+json","config":` + cfg + `,"layers":[]}`, "", "", nil, "0 layers"},
		{"not JSON", `{`, "", "", nil, "manifest"},
	}
	for _, tt := range tests {
		m, err := oci.ParseManifest([]byte(tt.body), tt.ctype)
		if err == nil && tt.layout != "" {
			_, layout, lerr := m.Module()
			if lerr != nil || layout != tt.layout {
				t.Errorf("%s: Module = %s, %v; want %s", tt.name, layout, lerr, tt.layout)
			}
			continue
		}
		if err == nil || (tt.err != nil && !errors.Is(err, tt.err)) || (tt.errText != "" && !strings.Contains(err.Error(), tt.errText)) {
			t.Errorf("%s: ParseManifest = %v; want %v %q", tt.name, err, tt.err, tt.errText)
		}
	}
}

// FuzzManifest: no input makes the manifest reader, the platform choice or the layer
// choice panic, and whatever is accepted has sha256 descriptors within the limits.
func FuzzManifest(f *testing.F) {
	desc := `{"mediaType":"application/wasm","digest":"sha256:` + hex64 + `","size":8}`
	f.Add([]byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":`+desc+`,"layers":[`+desc+`]}`), "")
	f.Add([]byte(`{"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:`+hex64+`","size":9,"platform":{"os":"wasip1","architecture":"wasm"}}]}`), "")
	f.Add([]byte(`{"config":{"mediaType":"application/vnd.docker.container.image.v1+json","digest":"sha256:`+hex64+`","size":1},"layers":[{"mediaType":"application/vnd.docker.image.rootfs.diff.tar.gzip","digest":"sha256:`+hex64+`","size":1}]}`), "application/vnd.docker.distribution.manifest.v2+json")
	f.Fuzz(func(t *testing.T, b []byte, ctype string) {
		m, err := oci.ParseManifest(b, ctype)
		if err != nil {
			return
		}
		if m.IsIndex() {
			d, err := m.Platform()
			if err == nil && d.Size > oci.MaxManifestBytes {
				t.Fatalf("platform manifest of %d bytes accepted", d.Size)
			}
			return
		}
		l, _, err := m.Module()
		if err == nil && (l.Size > oci.MaxLayerBytes || !strings.HasPrefix(l.Digest.String(), "sha256:")) {
			t.Fatalf("layer %+v accepted", l)
		}
		oci.Extract(b, l.MediaType)
	})
}
