package d1sql

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// Guarded writes (driver.GuardedTx, GW-1…GW-3): a push written without
// reading its rows first. A D1 transaction's writes are one batch, so a
// guard is a statement of the batch, placed before the writes it guards:
// it sees every write staged before it (TX-3) and, when its condition is
// false, fails the whole batch on GuardConstraint — nothing is written.

// GuardConstraint is the name of the CHECK constraint whose failure means
// "a guarded write's condition did not hold" (GW-2): the driver reports
// CodeWriteConflict. It differs from ConflictConstraint so that the driver
// can tell a guard that failed (the partition's stamp held: the batch got
// past its stamp guard, the first statement) from a lost race.
const GuardConstraint = "sync_guard_failed"

// D1RowGuard returns the guard statement of guarded upserts of table x:
// ?1 partition, ?2 a JSON array with one entry per guarded row, built by
// D1RowGuardEntry: [id, base version as decimal text, each scope column's
// new value]. It fails the batch on GuardConstraint unless every entry's
// row, as the batch has it at that point, is at its base version — 0: no
// row — and, for base > 0, holds the entry's scope values (GW-1). One
// statement guards the rows of one multi-row upsert (D1Upserts), placed
// right before it: the driver guards its updates (base > 0) so, its
// creates by an INSERT without ON CONFLICT (D1Upserts.InsertSQL). The rows' ids must be distinct and none written earlier
// in that upsert, so the state before the statement is the state each row
// replaces. Each entry is one primary-key lookup.
func D1RowGuard(x *sqlitesql.Table) string {
	const e = "_sync_g.value"
	t := x.Def
	// The current row's version when its scope columns hold the entry's
	// values, -1 when they do not (never a base), no row when missing.
	match := make([]string, len(t.Scopes))
	for i, s := range t.Scopes {
		match[i] = sqlitesql.Quote(s.Column) + " IS (" + e + " ->> " + strconv.Itoa(i+2) + ")"
	}
	cond := "1"
	if len(match) > 0 {
		cond = strings.Join(match, " AND ")
	}
	current := "coalesce((SELECT CASE WHEN " + cond + " THEN " + sqlitesql.Quote(sqlitesql.VersionColumn) + " ELSE -1 END FROM " +
		sqlitesql.Quote(t.Name) + " WHERE " + sqlitesql.Quote(sqlitesql.PartitionColumn) + " = ?1 AND " +
		sqlitesql.Quote(t.PrimaryKey) + " = (" + e + " ->> 0)), 0)"
	return `INSERT INTO _sync_d1_write_guard (id, ok) VALUES (1, NOT EXISTS (SELECT 1 FROM json_each(?2) AS _sync_g WHERE ` +
		current + ` <> CAST(` + e + ` ->> 1 AS INTEGER)))
ON CONFLICT (id) DO UPDATE SET ok = excluded.ok`
}

// D1RowGuardEntry returns the JSON text of row's entry in D1RowGuard's
// array: its id, base (decimal text: exact beyond 2^53) and the new
// values of x's scope columns.
func D1RowGuardEntry(x *sqlitesql.Table, row driver.Row, base int64) ([]byte, error) {
	out := make([]any, 0, 2+len(x.Def.Scopes))
	out = append(out, row.ID, strconv.FormatInt(base, 10))
	for _, s := range x.Def.Scopes {
		col, _ := x.Def.Column(s.Column)
		v, err := D1Text(col.Name, col.Type, row.Values[s.Column])
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, driver.Wrap(driver.CodeInternal, err, "encode a row guard")
	}
	return b, nil
}

// D1InsertPushResultGuarded is sqlitesql.InsertPushResult without its ON
// CONFLICT clause: a result stored or staged earlier in the batch under
// the key fails the batch on the results' primary key (GW-3), which the
// driver reports as a failed guard. ?1 partition, ?2 client id, ?3 client
// commit id, ?4 the result's JSON text.
var D1InsertPushResultGuarded = strings.TrimSuffix(sqlitesql.InsertPushResult,
	" ON CONFLICT (partition, client_id, client_commit_id) DO NOTHING")

// PushResultsKeyCollision is the text of an engine error that names the
// push results' primary key: the failure of D1InsertPushResultGuarded.
const PushResultsKeyCollision = "_sync_push_results.partition"

// D1GuardNoTombstones is the guard of guarded creates (GW-1: base 0 is a
// row id with no row and no tombstone, ROW-5): ?1 partition, ?2 table
// name, ?3 a JSON array of the ids of one create run. It fails the batch
// on GuardConstraint when one of them has a tombstone; the INSERT of the
// run after it fails on the primary key when one has a row.
const D1GuardNoTombstones = `INSERT INTO _sync_d1_write_guard (id, ok) VALUES (1, NOT EXISTS (SELECT 1 FROM json_each(?3) AS _sync_g` +
	` JOIN _sync_tombstones AS _sync_t ON _sync_t.partition = ?1 AND _sync_t.tbl = ?2 AND _sync_t.row_id = _sync_g.value))
ON CONFLICT (id) DO UPDATE SET ok = excluded.ok`
