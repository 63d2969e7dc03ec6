package postgres

import "strings"

var blobRefsDDL = []string{
	`CREATE TABLE IF NOT EXISTS _sync_blob_refs (
	partition ` + textC + ` NOT NULL,
	blob_id ` + textC + ` NOT NULL,
	tbl ` + textC + ` NOT NULL,
	row_id ` + textC + ` NOT NULL,
	PRIMARY KEY (partition, blob_id, tbl, row_id))`,
	`CREATE INDEX IF NOT EXISTS _sync_blob_refs_by_row ON _sync_blob_refs (partition, tbl, row_id, blob_id)`,
}

func init() { infraDDL = append(infraDDL, blobRefsDDL...) }

const (
	// sqlBlobRefsClearRow: $1 partition, $2 table, $3 row id.
	sqlBlobRefsClearRow = `DELETE FROM _sync_blob_refs WHERE partition = $1 AND tbl = $2 AND row_id = $3`
	// sqlBlobRefsInsert: $1 partition, $2 table, $3 row id, $4 blob ids
	// (text[]); a repeated id is one reference.
	sqlBlobRefsInsert = `INSERT INTO _sync_blob_refs (partition, blob_id, tbl, row_id)
SELECT DISTINCT $1, u.id, $2, $3 FROM unnest($4::text[]) AS u(id)
ON CONFLICT DO NOTHING`
	// sqlBlobRefsClearTable: $1 table, every partition (a migration
	// retiring the table, in its transaction).
	sqlBlobRefsClearTable = `DELETE FROM _sync_blob_refs WHERE tbl = $1`
	// sqlBlobRefsListIDs: $1 partition, $2 after blob id (exclusive), $3
	// limit → distinct blob ids ascending bytewise (a walk of the key).
	sqlBlobRefsListIDs = `SELECT DISTINCT blob_id FROM _sync_blob_refs WHERE partition = $1 AND blob_id > $2 ORDER BY blob_id LIMIT $3`
)

// blobRowsSQL lists the existing rows of the table referencing a blob: $1
// partition, $2 blob id, $3 the table's name as a value, $4 limit → row
// id, then the scope columns in def.Scopes order; ascending by row id.
func (x *table) blobRowsSQL() string {
	cols := []string{"r.row_id"}
	for _, s := range x.def.Scopes {
		cols = append(cols, "t."+quote(s.Column))
	}
	return "SELECT " + strings.Join(cols, ", ") + " FROM _sync_blob_refs AS r JOIN " + quote(x.def.Name) + " AS t" +
		" ON t." + quote(partitionColumn) + " = r.partition AND t." + quote(x.def.PrimaryKey) + " = r.row_id" +
		" WHERE r.partition = $1 AND r.blob_id = $2 AND r.tbl = $3 ORDER BY r.row_id LIMIT $4"
}
