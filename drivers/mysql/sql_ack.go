package mysql

// ackClient raises a client record's cursor and time in place (CR-6):
// cursor, time, p, client id, actor id, cursor, p. It matches only the
// record of the client bound to the actor, and only when the cursor is at
// most the partition's max_seq, and sets cursor_seq and updated_at_ms to
// the greater of theirs and the given ones, nothing else: one statement,
// the record's row locked for it, so a record write racing it lands
// wholly before or after. Rows matched (ClientFoundRows): 1 when acked.
const ackClient = `UPDATE _sync_clients SET cursor_seq = GREATEST(cursor_seq, ?), updated_at_ms = GREATEST(updated_at_ms, ?)
WHERE p = ? AND client_id = ? AND actor_id = ?
	AND ? <= COALESCE((SELECT max_seq FROM _sync_partitions WHERE p = ?), 0)`
