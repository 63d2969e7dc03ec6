package mysql

import "database/sql"

// As hands the host the pool the Conn runs on (driver.Aser): a **sql.DB
// target is set to it. The Conn keeps owning a pool it opened, and never
// closes one the host brought (OpenDB): the host must not close it while
// the Conn is open. Every other target: false.
func (c *Conn) As(target any) bool {
	p, ok := target.(**sql.DB)
	if !ok || p == nil || c.closed.Load() {
		return false
	}
	*p = c.db
	return true
}

// As hands the host the engine transaction of the Tx (driver.Aser): a
// **sql.Tx target is set to the *sql.Tx the Tx runs in, on its own
// connection, while it holds the partition's row lock (TX-1). Statements
// run through it land with Commit and vanish with Rollback or
// CommitRejected (TX-2, TX-8; As takes the savepoint CommitRejected rolls
// back to, so host writes go too). Writes the Tx staged or deferred are
// written before As returns, so the host's statements see every write of
// the Tx made before As (TX-3); writes the Tx makes after As may be kept
// again until its next read or Commit. The host must not Commit or
// Rollback the *sql.Tx (the Tx's outcome would no longer be its own to
// report, TX-10) and must not use it after the Tx ends. A statement that
// fails with an engine error may have rolled the engine transaction back
// (a deadlock does): the Tx's Commit then fails. As returns false once
// the Tx ended or was aborted, or when the savepoint or writing the kept
// writes failed (the Tx is then aborted). Every other target: false.
func (t *Tx) As(target any) bool {
	return t.state.HandOut(target, t.tx, t.c.closed.Load, func() error {
		if err := t.savepointFirst(t.beginCtx); err != nil {
			return err
		}
		return t.flushStaged(t.beginCtx)
	})
}
