// Package pgtest starts a throwaway PostgreSQL server for a test: initdb in a
// temporary directory with Debian's PostgreSQL 15 binaries (/usr/lib/postgresql/15/bin),
// listening on a unix socket only (no TCP port), run as the postgres OS user when the
// test runs as root, and stopped and removed when the test ends.
//
// Missing binaries fail the test with an install hint; only MCP_WASMHOST_NO_POSTGRES=1
// turns that into a skip, for machines that cannot have PostgreSQL.
//
//	srv := pgtest.Start(t)
//	dsn := srv.NewDatabase(t) // postgres://postgres@/db1?host=/tmp/pgtest-.../sock
package pgtest
