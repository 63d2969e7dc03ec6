package testdb

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func dbExists(t *testing.T, server, name string) bool {
	t.Helper()
	c, err := pgx.Connect(t.Context(), server)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close(context.Background()) }()
	var n int
	if err := c.QueryRow(t.Context(), "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// TestNewPostgresCreatesAndDrops: a fresh database exists and is usable
// during the test and is dropped afterwards, also when the test failed
// (a subtest's Cleanup runs after its failure).
func TestNewPostgresCreatesAndDrops(t *testing.T) {
	server := PostgresServer(t)
	var name string
	t.Run("inner", func(t *testing.T) {
		dsn := NewPostgres(t)
		c, err := pgx.Connect(t.Context(), dsn)
		if err != nil {
			t.Fatalf("connect to the new database: %v", err)
		}
		defer func() { _ = c.Close(context.Background()) }()
		if err := c.QueryRow(t.Context(), "SELECT current_database()").Scan(&name); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(name, "syncstore_t_") || !dbExists(t, server, name) {
			t.Fatalf("database %q is not a fresh syncstore_t_ database", name)
		}
	})
	if name == "" {
		t.Fatal("the inner test did not run")
	}
	if dbExists(t, server, name) {
		t.Fatalf("database %s still exists after its test ended", name)
	}
	if src := Source(Postgres); src == "" {
		t.Fatal("Source is empty after a resolved server")
	}
}

func TestDSNFor(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u@h:5432/postgres?sslmode=disable": "postgres://u@h:5432/db1?sslmode=disable",
		"host=h user=u": "host=h user=u dbname=db1",
	} {
		if got := PostgresDSNFor(in, "db1"); got != want {
			t.Errorf("PostgresDSNFor(%q) = %q, want %q", in, got, want)
		}
	}
}
