package sqlitesql

// Client-cursor acks (CR-6) in the SQLite dialect. This file's init adds
// the statement to InfraStatements (it writes: the writer runs it).

func init() {
	InfraStatements = append(InfraStatements, AckClient)
}

// AckClient raises a client record's cursor and time in place (CR-6): ?1
// partition, ?2 client id, ?3 actor id, ?4 cursor, ?5 time. It matches
// only the record of the client bound to the actor, and only when the
// cursor is at most the partition's max_seq; it sets cursor to
// max(cursor, ?4) and updated_at_ms to max(updated_at_ms, ?5) and nothing
// else, in one statement, so a record write racing it lands wholly
// before or after. Rows changed: 1 when acked, 0 when nothing was written.
// The integers are cast, so they may be bound as decimal text (D1).
// Served by the clients' and the partitions' primary keys.
const AckClient = `UPDATE _sync_clients SET cursor = max(cursor, CAST(?4 AS INTEGER)),
	updated_at_ms = max(updated_at_ms, CAST(?5 AS INTEGER))
WHERE partition = ?1 AND client_id = ?2 AND actor_id = ?3
	AND CAST(?4 AS INTEGER) <= coalesce((SELECT max_seq FROM _sync_partitions WHERE partition = ?1), 0)`
