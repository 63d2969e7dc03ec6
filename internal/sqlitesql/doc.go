// Package sqlitesql is syncstore's SQLite SQL: every SQL text and
// SQL-building helper the SQLite-family drivers run (drivers/sqlite over
// modernc.org/sqlite, drivers/d1http over Cloudflare D1, which speaks
// SQLite), written once. It holds no connection and runs nothing; a
// driver executes what it builds. What only D1 runs is in
// drivers/d1http/internal/d1sql; the engine-neutral stored layout and
// codecs are internal/storelayout's; the portable query language of
// authoritative queries is internal/querylang's.
//
// # Storage layout
//
// Infrastructure tables are all prefixed "_sync_" (reserved: application
// identifiers can never start with "_sync", SCH-2):
//
//	_sync_meta           key → value: format version, schema version, canonical layout JSON
//	_sync_partitions     partition → max_seq (never drops, SEQ-5), horizon_seq (HZ-1)
//	_sync_commits        (partition, seq) → commit metadata; index (partition, created_at_ms, seq) (HZ-3)
//	_sync_changes        (partition, seq, idx) → table, row id, op, scopes JSON, values, row version
//	_sync_change_scopes  (partition, tbl, variable, value, seq, idx): the change-scope index;
//	                     window candidates come only from it (WIN-7)
//	_sync_push_results   (partition, client_id, client_commit_id) → driver.EncodePushResult text (PR-1),
//	                     recorded_at_ms; index (partition, recorded_at_ms, client_id, client_commit_id) (PR-7)
//	_sync_clients        (partition, client_id) → client record (CR-1); indexes
//	                     (partition, updated_at_ms, client_id) (ADM-1, CR-4), (partition, cursor, updated_at_ms) (CR-5)
//	_sync_registry       partition → epoch, epoch_required, updated_at_ms (REG)
//
// Every infrastructure table whose primary key is its access path is
// WITHOUT ROWID.
//
// Application tables are real tables (rowid tables: rows may be large, up
// to whole documents, which WITHOUT ROWID handles poorly) named as the
// application table:
// "_sync_partition" TEXT, "_sync_version" INTEGER, then every column with a
// real type (see ColumnSQLType), PRIMARY KEY ("_sync_partition", pk). Scope
// columns are non-nullable strings, so a row's scopes are its scope column
// values: one index ("_sync_partition", scope column, pk, "_sync_version",
// every other column) per scope column serves scans (SCAN-5) and covers
// the row, so a scan page never looks rows up in the table (Table.CreateSQL;
// a store created before the covers has (partition, scope column, pk)
// under the same names, and scans through it; on SQLite a migration
// appending a column re-creates a table's scope indexes as covers of the
// new row, MigrationSQL; on D1 they stay as they were). Declared indexes are on
// ("_sync_partition", columns…), so unique ones are unique per partition
// (SCH-9).
//
// Text compares with the BINARY collation (memcmp of UTF-8), so ids and
// partitions order bytewise (SCAN-1, REG-3).
package sqlitesql
