package sqlitesql

// Auth leases (capability leases, LEASE-1…LEASE-4) in the SQLite dialect,
// shared by drivers/sqlite and drivers/d1http.
//
// One table, _sync_leases, keyed (partition, client_id): one record per
// client, refreshed in place. A second index (partition, lease_id) serves
// revocation by id. Issuing is one upsert whose conflict branch keeps the
// stored id only for a live record of the same actor, so a refresh and a
// revocation racing it are ordered by the engine: either the revocation
// lands first (the upsert stores the fresh id) or it marks the refreshed
// record. The store compares no clock: expiry is the caller's.

// LeasesDDL creates the leases table and its id index; idempotent. This
// file's init appends it to InfraDDL, so every store has it from its
// first open (an older store gains it on its next open), and the fixed
// statements to InfraStatements (the read to ReadStatements).
var LeasesDDL = []string{
	`CREATE TABLE IF NOT EXISTS _sync_leases (
	partition TEXT NOT NULL,
	client_id TEXT NOT NULL,
	lease_id TEXT NOT NULL,
	actor_id TEXT NOT NULL,
	allowed_scopes TEXT NOT NULL,
	issued_at_ms INTEGER NOT NULL,
	expires_at_ms INTEGER NOT NULL,
	revoked INTEGER NOT NULL,
	PRIMARY KEY (partition, client_id)
) WITHOUT ROWID`,
	`CREATE INDEX IF NOT EXISTS _sync_leases_by_id ON _sync_leases (partition, lease_id)`,
}

func init() {
	InfraDDL = append(InfraDDL, LeasesDDL...)
	InfraStatements = append(InfraStatements, IssueLease, SelectLease, RevokeLease, DeleteLeases)
	ReadStatements = append(ReadStatements, SelectLease)
}

// Lease statements.
const (
	// IssueLease: ?1 partition, ?2 client id, ?3 candidate lease id, ?4
	// actor id, ?5 allowed scopes (JSON text), ?6 issued at, ?7 expires
	// at. Keeps the stored id for a live record of the same actor
	// (LEASE-2), else stores ?3; never revoked afterwards (LEASE-1).
	IssueLease = `INSERT INTO _sync_leases (partition, client_id, lease_id, actor_id, allowed_scopes, issued_at_ms, expires_at_ms, revoked)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 0)
ON CONFLICT (partition, client_id) DO UPDATE SET
	lease_id = CASE WHEN _sync_leases.revoked = 0 AND _sync_leases.actor_id = excluded.actor_id THEN _sync_leases.lease_id ELSE excluded.lease_id END,
	actor_id = excluded.actor_id, allowed_scopes = excluded.allowed_scopes,
	issued_at_ms = excluded.issued_at_ms, expires_at_ms = excluded.expires_at_ms, revoked = 0`
	// SelectLease: ?1 partition, ?2 client id → the record (LEASE-1).
	SelectLease = `SELECT lease_id, actor_id, allowed_scopes, issued_at_ms, expires_at_ms, revoked FROM _sync_leases
WHERE partition = ?1 AND client_id = ?2`
	// RevokeLease: ?1 partition, ?2 lease id (LEASE-3).
	RevokeLease = `UPDATE _sync_leases SET revoked = 1 WHERE partition = ?1 AND lease_id = ?2`
	// DeleteLeases: ?1 partition. Run by a log epoch rotation, in its
	// transaction or batch (LEASE-5, REG-2).
	DeleteLeases = `DELETE FROM _sync_leases WHERE partition = ?1`
)
