package host

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestCheckpointData: the direct decoding of checkpoint_save's usual form, and
// encoding/json for any other.
func TestCheckpointData(t *testing.T) {
	for _, tc := range []struct {
		params string
		want   string // "" with ok false: an error
		ok     bool
	}{
		{`{"data":"aGVsbG8="}`, "hello", true},
		{` {"data":"aGVsbG8="} `, "hello", true},
		{`{"data":""}`, "", true},
		{`{"data":"YQ\/b"}`, "", false},         // an escaped slash: encoding/json decides
		{`{"data": "aGVsbG8="}`, "hello", true}, // another spacing: encoding/json
		{`{"data":"aGVsbG8"}`, "", false},       // unpadded
		{`{"data":"!!!!"}`, "", false},
		{`{"data":5}`, "", false},
		{`{"data":"aGVsbG8=","x":1}`, "hello", true},
	} {
		got, err := checkpointData([]byte(tc.params))
		var p struct {
			Data []byte `json:"data"`
		}
		jerr := json.Unmarshal([]byte(tc.params), &p)
		if (err == nil) != (jerr == nil) || err == nil && !bytes.Equal(got, p.Data) {
			t.Errorf("checkpointData(%s) = %q, %v; encoding/json says %q, %v", tc.params, got, err, p.Data, jerr)
		}
	}
}

// FuzzCheckpointData holds the direct decoding to encoding/json's answer on every
// valid JSON document (the sandbox passes on no other).
func FuzzCheckpointData(f *testing.F) {
	for _, s := range []string{`{"data":"aGVsbG8="}`, `{"data":"YQ\/b"}`, `{"data":"a"}`, `{"data":"\u0041AAA"}`, `{"data":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		if !json.Valid(params) {
			return
		}
		got, err := checkpointData(params)
		var p struct {
			Data []byte `json:"data"`
		}
		jerr := json.Unmarshal(params, &p)
		if (err == nil) != (jerr == nil) || err == nil && !bytes.Equal(got, p.Data) {
			t.Errorf("checkpointData(%q) = %q, %v; encoding/json says %q, %v", params, got, err, p.Data, jerr)
		}
	})
}
