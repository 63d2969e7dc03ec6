package testdb

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"
)

// Postgres finds a PostgreSQL server: SYNCSTORE_TEST_POSTGRES_DSN, the
// local service postgres@127.0.0.1:5432, or a postgres:16-alpine
// container.
var Postgres = Engine{
	Name:      "PostgreSQL",
	EnvVar:    "SYNCSTORE_TEST_POSTGRES_DSN",
	LocalAddr: "127.0.0.1:5432",
	LocalDSN:  "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
	Ping: func(ctx context.Context, dsn string) error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return err
		}
		defer func() { _ = c.Close(context.Background()) }()
		return c.Ping(ctx)
	},
	Container: func(ctx context.Context) (string, func(), error) {
		ctr, err := tcpostgres.Run(ctx, "postgres:16-alpine",
			tcpostgres.WithUsername("postgres"), tcpostgres.WithPassword("postgres"),
			tcpostgres.BasicWaitStrategies())
		if err != nil {
			return "", nil, err
		}
		dsn, err := ctr.ConnectionString(ctx, "sslmode=disable")
		if err != nil {
			_ = ctr.Terminate(context.Background())
			return "", nil, err
		}
		return dsn, func() { _ = ctr.Terminate(context.Background()) }, nil
	},
	Create: func(ctx context.Context, dsn, name string) (string, error) {
		if err := pgExec(ctx, dsn, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE template0 ENCODING 'UTF8'"); err != nil {
			return "", err
		}
		return PostgresDSNFor(dsn, name), nil
	},
	Drop: func(ctx context.Context, dsn, name string) error {
		return pgExec(ctx, dsn, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	},
}

// PostgresServer returns the DSN of a PostgreSQL server (see the package
// doc), or skips/fails t.
func PostgresServer(t testing.TB) string { t.Helper(); return ServerDSN(t, Postgres) }

// NewPostgres returns the DSN of a fresh PostgreSQL database, dropped
// when t ends.
func NewPostgres(t testing.TB) string { t.Helper(); return NewDatabase(t, Postgres) }

// PostgresDSNFor returns dsn pointing at database name (URL or
// keyword/value form).
func PostgresDSNFor(dsn, name string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		if u, err := url.Parse(dsn); err == nil {
			u.Path = "/" + name
			return u.String()
		}
	}
	return dsn + " dbname=" + name
}

func pgExec(ctx context.Context, dsn, stmt string) error {
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close(context.Background()) }()
	_, err = c.Exec(ctx, stmt)
	return err
}
