package postgres

import (
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgtype"
)

// sumBoolDDL gives PostgreSQL SQLite's sum over a boolean (true counts
// 1), so `sum(x IS NULL)` means the same on both (AQ-5). It lives in the
// store's schema; NULLs are skipped and an all-NULL sum is NULL, as in SQL.
//
// Both are created only when missing (a DO block checking pg_proc in the
// current schema), so opening a store never needs to own them — the same
// rule as the CREATE TABLE IF NOT EXISTS of the other infrastructure.
var sumBoolDDL = []string{
	`DO $sync$ BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_proc WHERE proname = '_sync_sum_bool' AND pronamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())) THEN
		CREATE FUNCTION _sync_sum_bool(acc bigint, x boolean) RETURNS bigint
		LANGUAGE sql IMMUTABLE PARALLEL SAFE AS 'SELECT CASE WHEN x IS NULL THEN acc ELSE coalesce(acc, 0) + x::int END';
	END IF;
	IF NOT EXISTS (SELECT 1 FROM pg_proc WHERE proname = 'sum' AND prokind = 'a' AND pronamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())
			AND proargtypes = '16'::oidvector) THEN
		CREATE AGGREGATE sum(boolean) (SFUNC = _sync_sum_bool, STYPE = bigint);
	END IF;
END $sync$`,
}

// valueCheckSQL wraps the host's rewritten statement stmt, whose result
// columns' type OIDs are oids, so that the server refuses a result value
// longer than the bound bound as parameter $param, in bytes, before
// sending it (AQ-6, value_bytes): every text, varchar, char, bytea or
// json column is checked with octet_length (a string's UTF-8 bytes, a
// bytea's bytes: the sizes driver.QueryValueSize counts), and a longer
// value calls chr(0), which fails with SQLSTATE 54000 (the value_bytes
// bound of queryErr). chr's argument depends on the value, so the planner
// never folds the call. Other columns (numbers, booleans, jsonb, …) are
// checked by the client as they arrive. The wrapper only filters the
// host's subquery, whose order PostgreSQL's subquery scan keeps; the
// columns are renamed c1…cN (duplicate or unnamed host columns cannot be
// referenced otherwise), and the driver reports the host's names.
// Without any checked column, stmt is returned as is.
func valueCheckSQL(stmt string, oids []uint32, param int) string {
	var checks []string
	for i, oid := range oids {
		col := `"_sync_r"."c` + strconv.Itoa(i+1) + `"`
		switch oid {
		case pgtype.TextOID, pgtype.VarcharOID, pgtype.BPCharOID, pgtype.ByteaOID, pgtype.NameOID:
		case pgtype.JSONOID:
			col += `::text`
		default:
			continue
		}
		n := `pg_catalog.octet_length(` + col + `)`
		checks = append(checks, `CASE WHEN `+n+` > $`+strconv.Itoa(param)+` THEN pg_catalog.chr((`+n+` * 0)::int) IS NULL ELSE true END`)
	}
	if len(checks) == 0 {
		return stmt
	}
	names := make([]string, len(oids))
	for i := range oids {
		names[i] = `"c` + strconv.Itoa(i+1) + `"`
	}
	return `SELECT * FROM (` + stmt + `) AS "_sync_r"(` + strings.Join(names, ", ") + `) WHERE ` + strings.Join(checks, " AND ")
}
