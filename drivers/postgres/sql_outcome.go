package postgres

const (
	// sqlXactStatus: ?1 the transaction id (xid8 as bigint) →
	// 'committed', 'aborted', 'in progress', or NULL when it is too old
	// to be known.
	sqlXactStatus = `SELECT pg_xact_status($1::bigint::text::xid8)`
	// sqlEndXactBackend: ?1 the backend's pid, ?2 the transaction's
	// 32-bit xid: ends the backend only while it still runs that
	// transaction, so a pid reused by a later backend is never hit.
	sqlEndXactBackend = `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = $1 AND backend_xid::text = $2`
)

// sqlBackendAlive: ?1 a pid → whether a backend of this database runs
// under it; sqlEndBackend ends it. sqlCommitLanded: ?1 partition, ?2 seq,
// ?3 the Tx's token (tx_token) → whether the Tx's first commit is in the log.
const (
	sqlBackendAlive = `SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND datname = current_database()`
	sqlEndBackend   = `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = $1 AND datname = current_database()`
	sqlCommitLanded = `SELECT count(*) FROM _sync_commits WHERE partition = $1 AND seq = $2 AND tx_token = $3`
)
