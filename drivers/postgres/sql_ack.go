package postgres

// sqlAckClient raises a client record's cursor and time in place (CR-6):
// $1 partition, $2 client id, $3 actor id, $4 cursor, $5 time. It matches
// only the record of the client bound to the actor, and only when the
// cursor is at most the partition's max_seq, and sets cursor and
// updated_at_ms to the greater of theirs and the given ones, nothing
// else: one statement, the record's row locked for it, so a record write
// racing it lands wholly before or after. Rows changed: 1 when acked.
const sqlAckClient = `UPDATE _sync_clients SET cursor = greatest(cursor, $4::bigint),
	updated_at_ms = greatest(updated_at_ms, $5::bigint)
WHERE partition = $1 AND client_id = $2 AND actor_id = $3
	AND $4::bigint <= coalesce((SELECT max_seq FROM _sync_partitions WHERE partition = $1), 0)`
