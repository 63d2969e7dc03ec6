package sqlitesql

import (
	"strings"
)

// Blob references (capability blob-refs, BLOB-1) in the SQLite dialect.
//
// One table, _sync_blob_refs, keyed (partition, blob_id, tbl, row_id), so
// listing the distinct referenced ids of a partition walks the primary
// key in order and the rows referencing one blob are a key range. A second
// index (partition, tbl, row_id, blob_id) serves replacing a row's set
// and clearing it when the row is deleted: every statement is served by
// an index (docs/performance.md: cost must not grow with the store).
//
// The set of a row is written in the push transaction, so it lands with
// the commit and vanishes with a rollback. Deleting a row clears its set
// (BlobRefsClearRow, run by the driver right after the row's DELETE);
// retiring a table clears the sets of its rows (RetiredTables,
// BlobRefsClearTable).

// BlobRefsDDL creates the blob-refs table and its row index; idempotent.
// This file's init appends it to InfraDDL, so every store has it from its
// first open, and the fixed statements below to InfraStatements (the
// listing also to ReadStatements), so a driver prepares them once.
var BlobRefsDDL = []string{
	`CREATE TABLE IF NOT EXISTS _sync_blob_refs (
	partition TEXT NOT NULL,
	blob_id TEXT NOT NULL,
	tbl TEXT NOT NULL,
	row_id TEXT NOT NULL,
	PRIMARY KEY (partition, blob_id, tbl, row_id)
) WITHOUT ROWID`,
	`CREATE INDEX IF NOT EXISTS _sync_blob_refs_by_row ON _sync_blob_refs (partition, tbl, row_id, blob_id)`,
}

func init() {
	InfraDDL = append(InfraDDL, BlobRefsDDL...)
	InfraStatements = append(InfraStatements, BlobRefsClearRow, BlobRefsInsert, BlobRefsListIDs)
	ReadStatements = append(ReadStatements, BlobRefsListIDs)
}

// Blob-refs statements.
const (
	// BlobRefsClearRow: ?1 partition, ?2 table, ?3 row id. Run by SetBlobRefs
	// before inserting the new set, and after a row's DELETE (BLOB-1).
	BlobRefsClearRow = `DELETE FROM _sync_blob_refs WHERE partition = ?1 AND tbl = ?2 AND row_id = ?3`
	// BlobRefsInsert: ?1 partition, ?2 table, ?3 row id, ?4 a JSON array of
	// blob ids (JSONList). A repeated id is one reference.
	BlobRefsInsert = `INSERT INTO _sync_blob_refs (partition, blob_id, tbl, row_id)
SELECT DISTINCT ?1, j.value, ?2, ?3 FROM json_each(?4) AS j WHERE true
ON CONFLICT DO NOTHING`
	// BlobRefsClearTable: ?1 table; every partition. Run when a migration
	// retires the table (SCH-6), in the migration's transaction; it walks
	// the whole table, as a migration may.
	BlobRefsClearTable = `DELETE FROM _sync_blob_refs WHERE tbl = ?1`
	// BlobRefsListIDs: ?1 partition, ?2 after blob id (exclusive), ?3 limit →
	// distinct blob ids ascending bytewise (a walk of the primary key).
	BlobRefsListIDs = `SELECT DISTINCT blob_id FROM _sync_blob_refs WHERE partition = ?1 AND blob_id > ?2 ORDER BY blob_id LIMIT ?3`
)

// BlobRefsRowsSQL returns the statement listing the existing rows of the
// table that reference a blob: ?1 partition, ?2 blob id, ?3 the table's
// name as a value, ?4 limit → row id, then the table's scope columns in
// Def.Scopes order; ascending by row id. The join keeps only rows that
// exist; both sides are primary-key lookups.
func (x *Table) BlobRefsRowsSQL() string {
	cols := []string{"r.row_id"}
	for _, s := range x.Def.Scopes {
		cols = append(cols, "t."+Quote(s.Column))
	}
	return "SELECT " + strings.Join(cols, ", ") + " FROM _sync_blob_refs AS r JOIN " + Quote(x.Def.Name) + " AS t" +
		" ON t." + Quote(PartitionColumn) + " = r.partition AND t." + Quote(x.Def.PrimaryKey) + " = r.row_id" +
		" WHERE r.partition = ?1 AND r.blob_id = ?2 AND r.tbl = ?3 ORDER BY r.row_id LIMIT ?4"
}
