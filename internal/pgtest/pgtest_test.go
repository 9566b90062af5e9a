package pgtest_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/pgtest"
)

// TestStart: the server answers on its socket only, each database is new, and the
// directory is gone after the test.
func TestStart(t *testing.T) {
	var dir string
	t.Run("server", func(t *testing.T) {
		s := pgtest.Start(t)
		dir = s.Socket()
		ctx := context.Background()
		a, b := s.NewDatabase(t), s.NewDatabase(t)
		if a == b {
			t.Fatalf("NewDatabase twice = %s both times", a)
		}
		conn, err := pgx.Connect(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var listen string
		if err := conn.QueryRow(ctx, "SHOW listen_addresses").Scan(&listen); err != nil || listen != "" {
			t.Errorf("listen_addresses = %q, %v; want none (socket only)", listen, err)
		}
		if !strings.Contains(a, "host=") {
			t.Errorf("DSN %s names no socket", a)
		}
	})
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("after the test, %s: %v; want it removed", dir, err)
	}
}
