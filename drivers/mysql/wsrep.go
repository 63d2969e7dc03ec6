package mysql

import (
	"context"
	"database/sql"
	gosync "sync"
	"sync/atomic"

	"github.com/go-sql-driver/mysql"
)

// Galera (MariaDB wsrep): a brute-force abort during a prepare.
//
// A transaction that holds a row lock a replicated write set needs is
// brute-force (BF) aborted: rolled back at once, and the client told with
// error 1213 on its next statement. MariaDB (seen on 10.11.19 with
// galera-4) loses that error when the abort lands while the session is
// running COM_STMT_PREPARE: the prepare answers OK, the transaction is
// already gone, and every later statement of the session runs in
// autocommit mode, each committing on its own. A Tx that prepared one of
// its statements on its connection (the first use of that statement on
// that session) after taking its partition's row lock could so write a
// counter row, a commit or a push result outside any transaction — the
// lost updates and stray rows TestGaleraStormAcrossNodes and
// TestGaleraPrepareAbort caught (docs/mysql.md § Galera).
//
// The guard: on a wsrep node, a statement prepared on a transaction's
// session is followed, before it runs, by SELECT @@in_transaction; 0 means
// the transaction was rolled back under the prepare, and the statement
// fails with the 1213 the server should have sent (errTxLost: a write
// conflict, retried like any other, TX-9). A BF abort at any other moment
// is reported by the server itself: on the check, or on the next
// statement. The check costs one round trip per statement text and
// session — the prepares of a session's first transactions — and none
// once the pool's sessions have prepared what the Tx runs. A statement
// whose values are too many to keep prepared (maxCachedArgs) is prepared
// for each use, and checked each time.
//
// Which statements a session has prepared is known from database/sql's
// rules: a pool statement (stmtcache.Cache) used in a transaction is prepared on
// the transaction's session the first time, and stays prepared there
// until the session or the statement closes (the cache never replaces
// one).

// selectInTransaction: 1 while the session is inside a transaction
// (MariaDB; START TRANSACTION sets it, a rollback or commit clears it).
const selectInTransaction = `SELECT @@in_transaction`

// selectWsrepOn: is the server a Galera node (MariaDB)?
const selectWsrepOn = `SELECT @@global.wsrep_on`

// erUnknownSystemVariable: the server has no such variable (no wsrep).
const erUnknownSystemVariable = 1193

// errTxLost is the error of a statement whose transaction was rolled back
// by a brute-force abort the server did not report: the 1213 it should
// have sent, so that it maps to a write conflict (TX-9) and is retried
// wherever a deadlock is.
var errTxLost = &mysql.MySQLError{Number: erLockDeadlock, SQLState: [5]byte{'4', '0', '0', '0', '1'},
	Message: "the transaction was brute-force aborted (Galera) while a statement was being prepared; the server did not report it"}

// maxGuardSessions bounds the sessions the guard remembers; past it the
// guard forgets them all (each is then checked once more per statement).
const maxGuardSessions = 512

// wsrepGuard knows, per session, which pool statements database/sql has
// prepared on it, and which session each guarded transaction runs on.
type wsrepGuard struct {
	mu gosync.Mutex
	// sessions is keyed by the driver's connection (database/sql hands it
	// out through sql.Conn.Raw); the reference keeps a closed
	// connection's address from being reused while it is a key.
	sessions map[any]*guardSession
	txs      map[*sql.Tx]*guardSession
	// lost counts the checks that found the transaction gone. It also
	// counts aborts the server did report on the prepare of a pool
	// statement: database/sql's Tx.StmtContext keeps that error for the
	// statement's first use, so the check runs and sees the rollback.
	lost atomic.Int64
}

// guardSession is what the guard knows of one session. Only the
// transaction holding the session uses it, one statement at a time.
type guardSession struct {
	mu       gosync.Mutex
	prepared map[*sql.Stmt]bool
}

func (s *guardSession) has(st *sql.Stmt) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.prepared[st]
}

func (s *guardSession) add(st *sql.Stmt) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prepared[st] = true
}

// forget drops everything known of the session: after a failed statement
// it is not known whether database/sql's prepare of it succeeded.
func (s *guardSession) forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.prepared)
}

// session returns the record of the driver connection dc.
func (g *wsrepGuard) session(dc any) *guardSession {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s := g.sessions[dc]; s != nil {
		return s
	}
	if g.sessions == nil || len(g.sessions) >= maxGuardSessions {
		g.sessions = map[any]*guardSession{}
	}
	s := &guardSession{prepared: map[*sql.Stmt]bool{}}
	g.sessions[dc] = s
	return s
}

func (g *wsrepGuard) track(tx *sql.Tx, s *guardSession) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.txs == nil {
		g.txs = map[*sql.Tx]*guardSession{}
	}
	g.txs[tx] = s
}

func (g *wsrepGuard) untrack(tx *sql.Tx) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.txs, tx)
}

// of returns the session of a guarded transaction, nil for any other.
func (g *wsrepGuard) of(tx *sql.Tx) *guardSession {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.txs[tx]
}

// probeWsrep sets c.wsrep: the server is a MariaDB Galera node with
// wsrep on. MySQL has no @@in_transaction to check with; Galera on it
// (Percona XtraDB Cluster) is not guarded (docs/mysql.md § Galera).
func (c *Conn) probeWsrep(ctx context.Context) error {
	if !c.maria || c.replica {
		return nil
	}
	var on bool
	err := c.db.QueryRowContext(ctx, selectWsrepOn).Scan(&on)
	if errNumber(err) == erUnknownSystemVariable {
		return nil
	}
	if err != nil {
		return c.mapErr(ctx, err, "mysql: initialize the store")
	}
	c.wsrep = on
	return nil
}

// beginOn starts a transaction on sc (opts as sql.Conn.BeginTx); on a
// wsrep node it is guarded until endTx.
func (c *Conn) beginOn(ctx context.Context, sc *sql.Conn, opts *sql.TxOptions) (*sql.Tx, error) {
	var s *guardSession
	if c.wsrep {
		if err := sc.Raw(func(dc any) error {
			s = c.guard.session(dc)
			return nil
		}); err != nil {
			return nil, err
		}
	}
	tx, err := sc.BeginTx(ctx, opts)
	if err == nil && s != nil {
		c.guard.track(tx, s)
	}
	return tx, err
}

// guarded returns the session of tx if it is guarded, nil if it is not
// (no transaction, or not on a wsrep node).
func (c *Conn) guarded(tx *sql.Tx) *guardSession {
	if !c.wsrep || tx == nil {
		return nil
	}
	return c.guard.of(tx)
}

// endTx forgets tx once it is committed or rolled back.
func (c *Conn) endTx(tx *sql.Tx) {
	if c.wsrep {
		c.guard.untrack(tx)
	}
}

// txAlive checks that tx is still a transaction on its session after a
// statement was prepared on it (see the top of this file): errTxLost if a
// brute-force abort rolled it back unreported; the server's own error
// (1213 when the abort came after the prepare) if the check fails.
func (c *Conn) txAlive(ctx context.Context, tx *sql.Tx) error {
	var in int
	if err := tx.QueryRowContext(ctx, selectInTransaction).Scan(&in); err != nil {
		return err
	}
	if in == 0 {
		c.guard.lost.Add(1)
		return errTxLost
	}
	return nil
}

// txStmt returns q's statement on tx: the pool's, when it has prepared
// q, else one prepared on tx's session for this transaction (warming the
// pool's in the background). On a guarded transaction a statement that
// database/sql prepares on the session is checked before it is returned.
func (c *Conn) txStmt(ctx context.Context, tx *sql.Tx, q string) (*sql.Stmt, error) {
	s := c.guarded(tx)
	if st := c.stmts.Peek(q); st != nil {
		if s == nil || s.has(st) {
			return tx.StmtContext(ctx, st), nil
		}
		txs := tx.StmtContext(ctx, st) // prepares st on the session
		if err := c.txAlive(ctx, tx); err != nil {
			return nil, err
		}
		s.add(st)
		return txs, nil
	}
	c.stmts.Warm(q)
	st, err := tx.PrepareContext(ctx, q)
	if err != nil || s == nil {
		return st, err
	}
	if err := c.txAlive(ctx, tx); err != nil {
		return nil, err // st is closed with tx
	}
	return st, nil
}

// oneShot prepares q on tx for one use: a statement whose values are too
// many to keep prepared (maxCachedArgs). database/sql would prepare it
// the same way inside ExecContext or QueryContext; doing it here lets a
// guarded transaction be checked between the prepare and the run. The
// statement is closed with tx.
func (c *Conn) oneShot(ctx context.Context, tx *sql.Tx, q string) (*sql.Stmt, error) {
	st, err := tx.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	if err := c.txAlive(ctx, tx); err != nil {
		return nil, err
	}
	return st, nil
}

// txFailed notes that a statement of tx failed: on a guarded transaction
// the session's prepared statements are no longer taken as known.
func (c *Conn) txFailed(tx *sql.Tx, err error) {
	if err == nil || err == sql.ErrNoRows {
		return
	}
	if s := c.guarded(tx); s != nil {
		s.forget()
	}
}
