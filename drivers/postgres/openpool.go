package postgres

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/syncstore/syncstore/driver"
)

// Options configure a Conn opened over the host's pool (OpenPool). The
// zero value is ready to use.
type Options struct {
	// ListenerDSN, if not "", is the DSN (any form pgx accepts) of the
	// dedicated connections SubscribeCommits opens for LISTEN (FAN-1):
	// point it straight at the server when the pool goes through a
	// transaction-mode pooler (PgBouncer), which cannot keep a LISTEN
	// session. "" = connect as the pool's connections do.
	ListenerDSN string
}

// OpenPool returns a Conn over pool, a pool the host owns (its tracer,
// TLS, sizes and pooler settings stay the host's): it creates the
// infrastructure tables if needed, exactly as Open does, in the schema the
// pool's connections resolve (their search_path). Wrap the result with
// sync.OpenConn to get a Store.
//
// The Conn borrows pool: Close rolls back the Conn's open Txs and leaves
// the pool open; the host closes it, after the Conn. Nothing is changed on
// the pool or its config; each connection's PgConn.CustomData gets one
// entry, "syncstore/postgres.backend" (the server backend last reported on
// it, for settling a lost COMMIT answer, TX-10). The driver needs nothing of a connection beyond
// what pgx gives by default — no AfterConnect hook, no runtime parameter,
// no registered type — so any pool works; each Tx holds one of the pool's
// connections from Begin to its end (size the pool for the pushes that
// run at once), and a pool whose connections go through a
// transaction-mode pooler works for everything but LISTEN, which
// Options.ListenerDSN routes around. Statement caching is the pool's
// (pgx's QueryExecMode): a pooler that cannot keep prepared statements
// needs a mode that does not cache them, set by the host on its pool.
//
// Errors: CodeInvalidArgument for a nil pool or a malformed ListenerDSN
// (the message never repeats it: it may hold a password);
// CodeUnavailable when the server cannot be reached within ctx.
func OpenPool(ctx context.Context, pool *pgxpool.Pool, opts Options) (*Conn, error) {
	if pool == nil {
		return nil, driver.Errorf(driver.CodeInvalidArgument, "postgres: OpenPool: nil pool")
	}
	var listen *pgx.ConnConfig
	if opts.ListenerDSN != "" {
		if strings.TrimSpace(opts.ListenerDSN) == "" {
			return nil, driver.Errorf(driver.CodeInvalidArgument, "postgres: OpenPool: blank listener DSN")
		}
		cc, err := pgx.ParseConfig(opts.ListenerDSN)
		if err != nil {
			return nil, driver.Errorf(driver.CodeInvalidArgument, "postgres: OpenPool: malformed listener DSN")
		}
		listen = cc
	}
	c := &Conn{pool: pool, cfg: pool.Config(), hostPool: true, listen: listen}
	if err := c.initInfra(ctx); err != nil {
		return nil, err
	}
	return c, nil
}
