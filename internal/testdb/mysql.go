package testdb

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	tcmysql "github.com/testcontainers/testcontainers-go/modules/mysql"
)

// MySQL finds a MySQL or MariaDB server: SYNCSTORE_TEST_MYSQL_DSN (a
// go-sql-driver DSN, e.g. "root@tcp(127.0.0.1:3306)/"), the local service
// root@127.0.0.1:3306 without a password, or a mysql:8.0 container. The
// user must be allowed to create and drop databases.
var MySQL = Engine{
	Name:      "MySQL/MariaDB",
	EnvVar:    "SYNCSTORE_TEST_MYSQL_DSN",
	LocalAddr: "127.0.0.1:3306",
	LocalDSN:  "root@tcp(127.0.0.1:3306)/",
	Ping: func(ctx context.Context, dsn string) error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return myExec(ctx, dsn, "DO 1")
	},
	Container: func(ctx context.Context) (string, func(), error) {
		ctr, err := tcmysql.Run(ctx, "mysql:8.0", tcmysql.WithUsername("root"), tcmysql.WithPassword("syncstore"))
		if err != nil {
			return "", nil, err
		}
		dsn, err := ctr.ConnectionString(ctx)
		if err != nil {
			_ = ctr.Terminate(context.Background())
			return "", nil, err
		}
		return dsn, func() { _ = ctr.Terminate(context.Background()) }, nil
	},
	Create: func(ctx context.Context, dsn, name string) (string, error) {
		if err := myExec(ctx, dsn, "CREATE DATABASE "+myQuote(name)+" CHARACTER SET utf8mb4"); err != nil {
			return "", err
		}
		return MySQLDSNFor(dsn, name)
	},
	Drop: func(ctx context.Context, dsn, name string) error {
		return myExec(ctx, dsn, "DROP DATABASE IF EXISTS "+myQuote(name))
	},
}

// MySQLServer returns the DSN of a MySQL/MariaDB server (see the package
// doc), or skips/fails t.
func MySQLServer(t testing.TB) string { t.Helper(); return ServerDSN(t, MySQL) }

// NewMySQL returns the DSN of a fresh MySQL/MariaDB database, dropped
// when t ends.
func NewMySQL(t testing.TB) string { t.Helper(); return NewDatabase(t, MySQL) }

// MySQLDSNFor returns the go-sql-driver DSN dsn pointing at database name.
func MySQLDSNFor(dsn, name string) (string, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "", err
	}
	cfg.DBName = name
	return cfg.FormatDSN(), nil
}

// myExec runs one statement on the server of dsn, without its database.
func myExec(ctx context.Context, dsn, stmt string) error {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return err
	}
	cfg.DBName = ""
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	_, err = db.ExecContext(ctx, stmt)
	return err
}

// myQuote returns name as a backquoted identifier.
func myQuote(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }
