package postgres

// sqlIncarnation is the server's incarnation: the postmaster's start time
// in µs since the Unix epoch (backend.start).
const sqlIncarnation = `(extract(epoch FROM pg_postmaster_start_time()) * 1000000)::bigint`

const (
	// sqlXactStatus: ?1 the transaction id (xid8 as bigint), ?2 the
	// incarnation that ran it → the server's incarnation and, when it is
	// ?2, the status: 'committed', 'aborted', 'in progress', or NULL when
	// it is too old to be known.
	sqlXactStatus = `SELECT s.inc, CASE WHEN s.inc = $2 THEN pg_xact_status($1::bigint::text::xid8) END
FROM (SELECT ` + sqlIncarnation + ` AS inc) s`
	// sqlXactStatusOnly: ?1 the transaction id → its status.
	sqlXactStatusOnly = `SELECT pg_xact_status($1::bigint::text::xid8)`
	// sqlEndXactBackend: ?1 the backend's pid (its pg_backend_pid()), ?2
	// the transaction's 32-bit xid, ?3 the incarnation that ran it: ends
	// the backend only while it still runs that transaction on that
	// incarnation, so neither a pid reused by a later backend nor one of a
	// restarted server is ever hit.
	sqlEndXactBackend = `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
WHERE pid = $1 AND backend_xid::text = $2 AND ` + sqlIncarnation + ` = $3`
)

// sqlBackendAlive: ?1 a pid → how many backends of this database run
// under it, and the server's incarnation; sqlEndBackend ends it, ?2 the
// incarnation it must be on. sqlCommitLanded: ?1 partition, ?2 seq, ?3
// the Tx's token (tx_token) → whether the Tx's first commit is in the log.
const (
	sqlBackendAlive = `SELECT count(*), ` + sqlIncarnation + ` FROM pg_stat_activity WHERE pid = $1 AND datname = current_database()`
	sqlEndBackend   = `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
WHERE pid = $1 AND datname = current_database() AND ` + sqlIncarnation + ` = $2`
	sqlCommitLanded = `SELECT count(*) FROM _sync_commits WHERE partition = $1 AND seq = $2 AND tx_token = $3`
)

// sqlSideBackend → the side connection's own pid and client port.
// sqlPortBackendAlive: ?1 a pid, ?2 a client port → how many backends of
// this database run under that pid for that port; sqlEndPortBackend
// ends them.
const (
	sqlSideBackend      = `SELECT pg_backend_pid(), coalesce(inet_client_port(), -1)`
	sqlPortBackendAlive = `SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND client_port = $2 AND datname = current_database()`
	sqlEndPortBackend   = `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
WHERE pid = $1 AND client_port = $2 AND datname = current_database()`
)
