package sqlite

// As hands the host the engine transaction of the Tx (driver.Aser): a
// **sql.Tx target is set to the *sql.Tx the Tx runs in, on the store's
// one writer connection (BEGIN IMMEDIATE, so every other writer waits,
// TX-1). Statements run through it land with Commit and vanish with
// Rollback or CommitRejected (TX-2, TX-8). Upserts the Tx staged are
// written before As returns, so the host's statements see every write of
// the Tx made before As (TX-3). The host must not Commit or Rollback the
// *sql.Tx and must not use it after the Tx ends. As returns false once
// the Tx ended or was aborted, or when writing the staged upserts failed
// (the Tx is then aborted). Every other target: false.
//
// The Conn has no As: its handles are the one writer connection, which a
// host statement outside a Tx would hold against every push, and a
// query_only reader pool; a host that wants SQLite tables of its own next
// to the store's opens the same file itself, or writes them through Tx.As.
func (t *Tx) As(target any) bool {
	return t.state.HandOut(target, t.st.tx, t.c.closed.Load, func() error { return t.flushStaged(t.beginCtx) })
}
