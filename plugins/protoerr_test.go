package plugins

import (
	"strings"
	"testing"
)

func TestProtocolError(t *testing.T) {
	tests := []struct {
		out     string
		code    int64  // of the ProtocolError, 0 for none
		problem string // in the error, "" for none
	}{
		{`{"content":[]}`, 0, ""},
		{`{"error":{"code":-32603,"message":"down"}}`, -32603, ""},
		{`{"error":{"code":-32000,"message":"busy","data":{"retry":1}}}`, -32000, ""},
		{`{"error":{"code":-32602,"message":"x"}}`, 0, "not -32603 or in -32099..-32000"},
		{`{"error":{"code":-32100,"message":"x"}}`, 0, "not -32603"},
		{`{"error":{"message":"x"}}`, 0, "code is required"},
		{`{"error":{"code":-32603}}`, 0, "message is required"},
		{`{"error":{"code":-32603,"message":"x"},"content":[]}`, 0, "either content or error"},
	}
	for _, tt := range tests {
		perr, err := protocolError([]byte(tt.out))
		switch {
		case tt.problem != "" && (err == nil || !strings.Contains(err.Error(), tt.problem)):
			t.Errorf("protocolError(%s) = %v, want an error containing %q", tt.out, err, tt.problem)
		case tt.problem == "" && err != nil:
			t.Errorf("protocolError(%s) = %v", tt.out, err)
		case tt.code != 0 && (perr == nil || perr.Code != tt.code):
			t.Errorf("protocolError(%s) = %+v, want code %d", tt.out, perr, tt.code)
		case tt.code == 0 && perr != nil:
			t.Errorf("protocolError(%s) = %+v, want none", tt.out, perr)
		}
	}
}
