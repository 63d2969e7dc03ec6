//go:build aqmeasure

package aqmeasure

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
)

// serverWatch counts the statements of a store's database still running
// on its server after a call returned, and their server memory where the
// engine reports it: PostgreSQL backends active on the database
// (pg_stat_activity; memory not exposed per backend before PostgreSQL
// 14's pg_backend_memory_contexts, which reads only its own backend);
// MariaDB threads whose statement names the database
// (information_schema.processlist, with MEMORY_USED).
type serverWatch struct {
	count func(ctx context.Context) (n int, memMB int64, err error)
}

func pgWatch(base, dsn string) *serverWatch {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil
	}
	db := cfg.Database
	return &serverWatch{count: func(ctx context.Context) (int, int64, error) {
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			return 0, 0, err
		}
		defer c.Close(ctx)
		var n int
		err = c.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND state <> 'idle' AND pid <> pg_backend_pid()`, db).Scan(&n)
		return n, -1, err
	}}
}

func mysqlWatch(base, dsn string) *serverWatch {
	cfg, err := gomysql.ParseDSN(strings.TrimPrefix(dsn, "mysql://"))
	if err != nil {
		return nil
	}
	name := cfg.DBName
	bcfg, err := gomysql.ParseDSN(strings.TrimPrefix(base, "mysql://"))
	if err != nil {
		return nil
	}
	bcfg.DBName = ""
	return &serverWatch{count: func(ctx context.Context) (int, int64, error) {
		db, err := sql.Open("mysql", bcfg.FormatDSN())
		if err != nil {
			return 0, 0, err
		}
		defer db.Close()
		var n int
		var mem sql.NullInt64
		err = db.QueryRowContext(ctx, `SELECT count(*), sum(MEMORY_USED) FROM information_schema.processlist
			WHERE COMMAND <> 'Sleep' AND ID <> CONNECTION_ID() AND INFO LIKE concat('%`+"`"+`', ?, '`+"`"+`%')`, name).Scan(&n, &mem)
		return n, mem.Int64 >> 20, err
	}}
}

// leftRunning polls w up to 5 s after a call returned: the statements
// still running then (0 when they all ended within 5 s) and the peak
// server memory seen, "-" when not measurable.
func (w *serverWatch) leftRunning() (string, string) {
	if w == nil {
		return "-", "-"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	deadline := time.Now().Add(5 * time.Second)
	var peak int64 = -1
	for {
		n, mem, err := w.count(ctx)
		if err != nil {
			return "? (" + err.Error() + ")", "-"
		}
		peak = max(peak, mem)
		if n == 0 || time.Now().After(deadline) {
			m := "-"
			if peak >= 0 {
				m = "+" + itoa(peak) + " MB"
			}
			return itoa(int64(n)), m
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
