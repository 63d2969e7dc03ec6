package postgres

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
