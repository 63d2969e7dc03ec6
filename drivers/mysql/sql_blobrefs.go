package mysql

import "strings"

var blobRefsDDL = []string{
	`CREATE TABLE IF NOT EXISTS _sync_blob_refs (
	p VARBINARY(255) NOT NULL,
	blob_id VARBINARY(255) NOT NULL,
	tbl VARBINARY(64) NOT NULL,
	row_id VARBINARY(255) NOT NULL,
	PRIMARY KEY (p, blob_id, tbl, row_id),
	KEY _sync_blob_refs_by_row (p, tbl, row_id, blob_id)
)` + tableOpts,
}

func init() { infraDDL = append(infraDDL, blobRefsDDL...) }

// Blob-refs statements.
const (
	// blobRefsClearRow: p, tbl, row id.
	blobRefsClearRow = `DELETE FROM _sync_blob_refs WHERE p = ? AND tbl = ? AND row_id = ?`
	// blobRefsClearTable: tbl; every partition (a retired table, SCH-6).
	blobRefsClearTable = `DELETE FROM _sync_blob_refs WHERE tbl = ?`
	// blobRefsListIDs: p, after (exclusive), limit → distinct blob ids,
	// ascending bytewise (a walk of the primary key).
	blobRefsListIDs = `SELECT DISTINCT blob_id FROM _sync_blob_refs WHERE p = ? AND blob_id > ? ORDER BY blob_id LIMIT ?`
)

// blobRefsInsert returns the INSERT of n references (4 parameters each:
// p, blob_id, tbl, row_id).
func blobRefsInsert(n int) string {
	return `INSERT INTO _sync_blob_refs (p, blob_id, tbl, row_id) VALUES ` + placeholders(n, 4)
}

// blobRefsRows returns the listing of the existing rows of x that
// reference a blob: p, blob id, the table's name, limit → row id, then
// the scope columns in Def.Scopes order, ascending by row id. Both sides
// of the join are primary-key lookups; the join keeps existing rows only.
func (x *table) blobRefsRows() string {
	cols := []string{"r.row_id"}
	for _, s := range x.def.Scopes {
		cols = append(cols, "t."+quoteIdent(s.Column))
	}
	return "SELECT " + strings.Join(cols, ", ") + " FROM _sync_blob_refs AS r STRAIGHT_JOIN " + quoteIdent(x.def.Name) + " AS t" +
		" ON t." + quoteIdent(partitionColumn) + " = r.p AND t." + quoteIdent(x.def.PrimaryKey) + " = r.row_id" +
		" WHERE r.p = ? AND r.blob_id = ? AND r.tbl = ? ORDER BY r.row_id LIMIT ?"
}
