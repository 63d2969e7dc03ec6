package conformance

// The dialect-parity corpus of the authoritative-query capability (AQ-5:
// the same query text returns the same rows on every driver that declares
// the capability). Expected rows are SQLite's answer, written down here.
// Same entry shape and outcomes as cap_query_corpus.go.
//
// Every entry is an ordinary query over the seeded tables (aqSeed) whose
// answer commonly differs between engines: NULL ordering, integer
// division, division by zero, integer vs real results, bytewise string
// order, LIKE, ||, non-ASCII text, rounding, CAST, booleans, windows,
// compound selects, JSON. aqRows means every driver must return SQLite's
// rows. aqEither is used only for a construct outside the portable subset
// (docs/authoritative-query.md, "Portable subset"): a driver may refuse it
// with query_invalid — and if it answers, the answer must be SQLite's.

// aqParityCorpus returns the entries.
func aqParityCorpus() []aqEntry {
	tK := []string{tKinds}
	one := ` FROM todos WHERE id = 't1'`
	f := func(x float64) float64 { return x }
	return []aqEntry{
		// ---- NULL ordering: SQLite sorts NULL first on ASC, last on DESC ----
		{rule: "AQ-5", name: "null-first-on-asc", tables: tK, want: aqRows, sql: `SELECT id, s FROM kinds ORDER BY s, id`,
			rows: [][]any{r("k2", nil), r("k3", ""), r("k1", "héllo 👋 e\u0301"), r("k4", "\uFFFD")}},
		{rule: "AQ-5", name: "null-last-on-desc", tables: tK, want: aqRows, sql: `SELECT id FROM kinds ORDER BY i DESC`,
			rows: [][]any{r("k1"), r("k4"), r("k3"), r("k2")}},
		{rule: "AQ-5", name: "null-first-float-and-negative-zero", tables: tK, want: aqRows, sql: `SELECT id FROM kinds ORDER BY f, id`,
			rows: [][]any{r("k2"), r("k3"), r("k4"), r("k1")}},
		{rule: "AQ-5", name: "null-order-in-window", tables: tK, want: aqRows,
			sql:  `SELECT id, row_number() OVER (ORDER BY b DESC, id) AS rn FROM kinds ORDER BY id`,
			rows: [][]any{r("k1", int64(1)), r("k2", int64(4)), r("k3", int64(3)), r("k4", int64(2))}},
		{rule: "AQ-5", name: "null-order-by-ordinal-and-alias", tables: tK, want: aqRows,
			sql:  `SELECT id, i AS v FROM kinds ORDER BY 2 DESC, v`,
			rows: [][]any{r("k1", int64(9223372036854775807)), r("k4", int64(9007199254740993)), r("k3", int64(-9223372036854775808)), r("k2", nil)}},
		{rule: "AQ-5", name: "explicit-nulls-last", tables: tK, want: aqEither, sql: `SELECT id FROM kinds ORDER BY s NULLS LAST, id`,
			rows: [][]any{r("k3"), r("k1"), r("k4"), r("k2")}},
		{rule: "AQ-5", name: "min-max-count-skip-null", tables: tK, want: aqRows,
			sql:  `SELECT min(s) AS lo, max(s) AS hi, count(s) AS n, count(*) AS c, min(i) AS mi FROM kinds`,
			rows: [][]any{r("", "\uFFFD", int64(3), int64(4), int64(-9223372036854775808))}},

		// ---- integer vs real arithmetic ----
		{rule: "AQ-5", name: "integer-division-truncates", want: aqRows,
			sql:  `SELECT 7/2 AS a, -7/2 AS b, 7/-2 AS c, 1/3 AS d` + one,
			rows: [][]any{r(int64(3), int64(-3), int64(-3), int64(0))}},
		{rule: "AQ-5", name: "integer-modulo-signs", want: aqRows,
			sql:  `SELECT 7%3 AS a, -7%3 AS b, 7%-3 AS c, -7%-3 AS d` + one,
			rows: [][]any{r(int64(1), int64(-1), int64(1), int64(-1))}},
		{rule: "AQ-5", name: "integer-column-division", want: aqRows,
			sql:  `SELECT id, updated_at/4 AS q, updated_at%4 AS m, (updated_at+1)/2 AS h FROM todos ORDER BY id`,
			rows: [][]any{r("t1", int64(2), int64(2), int64(5)), r("t2", int64(5), int64(0), int64(10)), r("t3", int64(7), int64(2), int64(15))}},
		{rule: "AQ-5", name: "real-division", want: aqRows,
			sql:  `SELECT 7.0/2 AS a, 7/2.0 AS b, updated_at/4.0 AS c, -1/2.0 AS d` + one,
			rows: [][]any{r(3.5, 3.5, 2.5, -0.5)}},
		{rule: "AQ-5", name: "division-by-zero-is-null", want: aqRows,
			sql:  `SELECT 1/0 AS a, 1.5/0 AS b, 5%0 AS c, updated_at/(updated_at-10) AS d, 2/0.0 AS e` + one,
			rows: [][]any{r(nil, nil, nil, nil, nil)}},
		{rule: "AQ-5", name: "integer-plus-real-is-real", want: aqRows,
			sql:  `SELECT 1+1.0 AS a, 2*3 AS b, 0.1+0.2 AS c, 3-5 AS d, 1e2 AS e, 2.5*2 AS g` + one,
			rows: [][]any{r(2.0, int64(6), f(0.1)+f(0.2), int64(-2), 100.0, 5.0)}},
		{rule: "AQ-5", name: "sum-avg-types", want: aqRows,
			sql:  `SELECT sum(updated_at) AS s, avg(updated_at) AS a, count(*)/2 AS q, avg(updated_at + 1) AS b FROM todos`,
			rows: [][]any{r(int64(60), 20.0, int64(1), 21.0)}},
		{rule: "AQ-5", name: "aggregates-over-nothing", want: aqRows,
			sql:  `SELECT sum(updated_at) AS s, avg(updated_at) AS a, count(*) AS n, max(title) AS m FROM todos WHERE id = 'none'`,
			rows: [][]any{r(nil, nil, int64(0), nil)}},
		{rule: "AQ-5", name: "total-is-real", want: aqEither,
			sql:  `SELECT total(updated_at) AS t, total(updated_at) FILTER (WHERE id = 'none') AS z FROM todos`,
			rows: [][]any{r(60.0, 0.0)}},
		{rule: "AQ-5", name: "round-half-away-from-zero", want: aqEither,
			sql:  `SELECT round(2.5) AS a, round(-2.5) AS b, round(0.125, 2) AS c, round(7) AS d` + one,
			rows: [][]any{r(3.0, -3.0, 0.13, 7.0)}},
		{rule: "AQ-5", name: "cast-real-to-integer-truncates", want: aqRows,
			sql:  `SELECT CAST(2.7 AS INTEGER) AS a, CAST(-2.7 AS INTEGER) AS b, CAST(updated_at AS REAL) AS c, CAST('42' AS INTEGER) AS d, CAST('2.5' AS REAL) AS e` + one,
			rows: [][]any{r(int64(2), int64(-2), 10.0, int64(42), 2.5)}},
		{rule: "AQ-5", name: "cast-malformed-text", want: aqEither,
			sql:  `SELECT CAST('12abc' AS INTEGER) AS a, CAST('x' AS REAL) AS b, CAST('3.9' AS INTEGER) AS c` + one,
			rows: [][]any{r(int64(12), 0.0, int64(3))}},
		{rule: "AQ-5", name: "typeof", want: aqEither,
			sql:  `SELECT typeof(1) AS a, typeof(1.0) AS b, typeof('x') AS c, typeof(NULL) AS d` + one,
			rows: [][]any{r("integer", "real", "text", "null")}},

		// ---- strings: bytewise, ASCII-only case folding ----
		{rule: "AQ-5", name: "string-order-is-bytewise", want: aqRows,
			sql: `SELECT v.x AS x FROM todos t, (SELECT 'b' AS x UNION ALL SELECT 'B' UNION ALL SELECT 'a ' UNION ALL SELECT 'é'` +
				` UNION ALL SELECT 'É') AS v WHERE t.id = 't1' ORDER BY v.x`, // D1 allows 5 terms per compound
			rows: [][]any{r("B"), r("a "), r("b"), r("É"), r("é")}},
		{rule: "AQ-5", name: "string-comparison-is-bytewise", want: aqRows,
			sql:  `SELECT 'a' < 'B' AS a, 'é' > 'z' AS b, 'abc' = 'ABC' AS c, 'a ' = 'a' AS d, title > 'q' AS e` + one,
			rows: [][]any{r(int64(0), int64(1), int64(0), int64(0), int64(0))}},
		{rule: "AQ-5", name: "string-column-order", tables: tK, want: aqRows,
			sql:  `SELECT id FROM kinds WHERE s IS NOT NULL ORDER BY s DESC`,
			rows: [][]any{r("k4"), r("k1"), r("k3")}},
		{rule: "AQ-5", name: "min-max-strings", want: aqRows, sql: `SELECT min(title) AS lo, max(title) AS hi, max(owner_id) AS o FROM todos`,
			rows: [][]any{r("one", "two", "u2")}},
		{rule: "AQ-5", name: "like-is-ascii-case-insensitive", want: aqRows,
			sql: `SELECT id FROM todos WHERE title LIKE 'T%' OR title LIKE '_NE' ORDER BY id`, rows: aqIDs},
		{rule: "AQ-5", name: "like-does-not-fold-non-ascii", tables: tK, want: aqRows,
			sql:  `SELECT (SELECT count(*) FROM kinds WHERE s LIKE 'HÉ%') AS a, (SELECT count(*) FROM kinds WHERE s LIKE 'Hé_l%') AS b, (SELECT count(*) FROM kinds WHERE s NOT LIKE 'h%') AS c`,
			rows: [][]any{r(int64(0), int64(1), int64(2))}},
		{rule: "AQ-5", name: "like-backslash-is-no-escape", want: aqRows,
			sql:  `SELECT 'a\b' LIKE 'a\b' AS a, 'a%' LIKE 'a\%' AS b, 'ab' LIKE 'a\_' AS c` + one,
			rows: [][]any{r(int64(1), int64(0), int64(0))}},
		{rule: "AQ-5", name: "glob-is-case-sensitive", want: aqEither,
			sql: `SELECT id FROM todos WHERE title GLOB 't*' AND NOT title GLOB 'T*' ORDER BY id`, rows: [][]any{r("t2"), r("t3")}},
		{rule: "AQ-5", name: "concat-with-null-is-null", tables: tK, want: aqRows,
			sql:  `SELECT id, 'a' || s AS c, s || NULL AS n FROM kinds ORDER BY id`,
			rows: [][]any{r("k1", "ahéllo 👋 e\u0301", nil), r("k2", nil, nil), r("k3", "a", nil), r("k4", "a\uFFFD", nil)}},
		{rule: "AQ-5", name: "length-substr-instr-count-characters", tables: tK, want: aqRows,
			sql:  `SELECT length(s) AS l, substr(s, 2, 3) AS a, instr(s, '👋') AS p, instr(s, 'zz') AS q, substr(s, 7) AS t FROM kinds WHERE id = 'k1'`,
			rows: [][]any{r(int64(10), "éll", int64(7), int64(0), "👋 e\u0301")}},
		{rule: "AQ-5", name: "lower-upper-fold-ascii-only", tables: tK, want: aqRows,
			sql:  `SELECT upper(s) AS u, lower('ÉA') AS l, upper('ßé') AS v FROM kinds WHERE id = 'k1'`,
			rows: [][]any{r("HéLLO 👋 E\u0301", "Éa", "ßé")}},
		{rule: "AQ-5", name: "replace-trim-are-exact", want: aqRows,
			sql:  `SELECT replace(title, 'O', 'x') AS a, replace(title, 'o', 'x') AS b, trim('  é ') AS c, rtrim(title || '  ') AS d` + one,
			rows: [][]any{r("one", "xne", "é", "one")}},
		{rule: "AQ-5", name: "trim-character-set", want: aqEither,
			sql:  `SELECT ltrim('xyxa', 'yx') AS a, rtrim('abba', 'ab') AS b, trim('xaxx', 'x') AS c` + one,
			rows: [][]any{r("a", "", "a")}},

		// ---- NULL handling and conditionals ----
		{rule: "AQ-5", name: "coalesce-nullif-case", tables: tK, want: aqRows,
			sql: `SELECT id, coalesce(s, 'none') AS a, nullif(i, -9223372036854775808) AS n,` +
				` CASE WHEN b THEN 'y' WHEN NOT b THEN 'n' ELSE '?' END AS c FROM kinds ORDER BY id`,
			rows: [][]any{r("k1", "héllo 👋 e\u0301", int64(9223372036854775807), "y"), r("k2", "none", nil, "?"),
				r("k3", "", nil, "n"), r("k4", "\uFFFD", int64(9007199254740993), "y")}},
		{rule: "AQ-5", name: "iif", want: aqEither, sql: `SELECT id, iif(done, 'yes', 'no') AS d FROM todos ORDER BY id`,
			rows: [][]any{r("t1", "no"), r("t2", "yes"), r("t3", "no")}},
		{rule: "AQ-5", name: "null-comparisons", want: aqRows,
			sql:  `SELECT NULL = NULL AS a, NULL IS NULL AS b, 1 IN (NULL, 1) AS c, 2 IN (NULL, 1) AS d, NULL <> 1 AS e` + one,
			rows: [][]any{r(nil, int64(1), int64(1), nil, nil)}},
		{rule: "AQ-5", name: "not-in-with-null-matches-nothing", tables: tK, want: aqRows,
			sql: `SELECT id FROM kinds WHERE i NOT IN (SELECT i FROM kinds WHERE id IN ('k2', 'k3'))`, rows: nil},

		// ---- booleans ----
		{rule: "AQ-5", name: "boolean-column-and-predicates", want: aqRows,
			sql:  `SELECT id, done, NOT done AS nd, title = 'two' AS eq FROM todos ORDER BY id`,
			rows: [][]any{r("t1", false, int64(1), int64(0)), r("t2", true, int64(0), int64(1)), r("t3", false, int64(1), int64(0))}},
		{rule: "AQ-5", name: "boolean-where-and-sum", want: aqRows,
			sql:  `SELECT sum(done) AS n, count(*) AS c, (SELECT id FROM todos WHERE done) AS d FROM todos WHERE NOT done OR done`,
			rows: [][]any{r(int64(1), int64(3), "t2")}},
		{rule: "AQ-5", name: "boolean-in-arithmetic", want: aqEither,
			sql:  `SELECT id, done + 0 AS n, done = 1 AS e FROM todos ORDER BY id`,
			rows: [][]any{r("t1", int64(0), int64(0)), r("t2", int64(1), int64(1)), r("t3", int64(0), int64(0))}},
		{rule: "AQ-5", name: "boolean-group-by", tables: tK, want: aqRows, sql: `SELECT b, count(*) AS n FROM kinds GROUP BY b ORDER BY b`,
			rows: [][]any{r(nil, int64(1)), r(false, int64(1)), r(true, int64(2))}},

		// ---- grouping, limits, compounds, sub-queries ----
		{rule: "AQ-5", name: "group-by-having-count-distinct", want: aqRows,
			sql:  `SELECT owner_id AS o, count(*) AS n, count(DISTINCT project_id) AS p FROM todos GROUP BY owner_id HAVING count(*) > 1`,
			rows: [][]any{r("u1", int64(2), int64(2))}},
		{rule: "AQ-5", name: "limit-offset", want: aqRows, sql: `SELECT id FROM todos ORDER BY id DESC LIMIT 2 OFFSET 1`,
			rows: [][]any{r("t2"), r("t1")}},
		{rule: "AQ-5", name: "limit-comma-form", want: aqEither, sql: `SELECT id FROM todos ORDER BY id LIMIT 1, 2`,
			rows: [][]any{r("t2"), r("t3")}},
		{rule: "AQ-5", name: "union-sorted", want: aqRows,
			sql:  `SELECT owner_id AS x FROM todos UNION SELECT project_id FROM todos ORDER BY x`,
			rows: [][]any{r("alpha"), r("beta"), r("u1"), r("u2")}},
		{rule: "AQ-5", name: "union-all-desc", want: aqRows,
			sql:  `SELECT updated_at AS v FROM todos UNION ALL SELECT 20 ORDER BY v DESC`,
			rows: [][]any{r(int64(30)), r(int64(20)), r(int64(20)), r(int64(10))}},
		{rule: "AQ-5", name: "intersect", tables: tTU, want: aqRows,
			sql: `SELECT owner_id FROM todos INTERSECT SELECT id FROM users ORDER BY 1`, rows: [][]any{r("u1"), r("u2")}},
		{rule: "AQ-5", name: "except", tables: tTU, want: aqRows,
			sql: `SELECT id FROM users EXCEPT SELECT owner_id FROM todos ORDER BY 1`, rows: [][]any{r("u3")}},
		{rule: "AQ-5", name: "correlated-subquery", want: aqRows,
			sql:  `SELECT id, (SELECT count(*) FROM todos u WHERE u.updated_at < t.updated_at) AS n FROM todos t ORDER BY id`,
			rows: [][]any{r("t1", int64(0)), r("t2", int64(1)), r("t3", int64(2))}},
		{rule: "AQ-5", name: "distinct-order", want: aqRows, sql: `SELECT DISTINCT project_id FROM todos ORDER BY project_id DESC`,
			rows: [][]any{r("beta"), r("alpha")}},

		// ---- window functions ----
		{rule: "AQ-5", name: "rank-and-lag", want: aqRows,
			sql: `SELECT id, rank() OVER (ORDER BY project_id) AS r, lag(title) OVER (ORDER BY id) AS p,` +
				` lead(updated_at, 2) OVER (ORDER BY id) AS q FROM todos ORDER BY id`,
			rows: [][]any{r("t1", int64(1), nil, int64(30)), r("t2", int64(1), "one", nil), r("t3", int64(3), "two", nil)}},
		{rule: "AQ-5", name: "lag-with-default", want: aqEither,
			sql:  `SELECT id, lag(title, 1, 'none') OVER (ORDER BY id) AS q FROM todos ORDER BY id`,
			rows: [][]any{r("t1", "none"), r("t2", "one"), r("t3", "two")}},
		{rule: "AQ-5", name: "window-sums", want: aqRows,
			sql:  `SELECT id, sum(updated_at) OVER (PARTITION BY project_id) AS p, sum(updated_at) OVER (ORDER BY updated_at) AS r FROM todos ORDER BY id`,
			rows: [][]any{r("t1", int64(30), int64(10)), r("t2", int64(30), int64(30)), r("t3", int64(30), int64(60))}},

		// ---- JSON ----
		{rule: "AQ-5", name: "json-each-literal-array", want: aqRows,
			sql:  `SELECT j.key AS k, j.value AS v FROM todos t, json_each('[10, 20, 30]') AS j WHERE t.id = 't1' ORDER BY j.key DESC`,
			rows: [][]any{r(int64(2), int64(30)), r(int64(1), int64(20)), r(int64(0), int64(10))}},
		{rule: "AQ-5", name: "json-each-literal-mixed", want: aqEither,
			sql:  `SELECT j.key AS k, j.value AS v FROM todos t, json_each('[10, "x", null, 2.5, true]') AS j WHERE t.id = 't1' ORDER BY j.key`,
			rows: [][]any{r(int64(0), int64(10)), r(int64(1), "x"), r(int64(2), nil), r(int64(3), 2.5), r(int64(4), int64(1))}},
		{rule: "AQ-5", name: "json-each-over-column", tables: tK, want: aqEither,
			sql:  `SELECT k.id AS id, e.key AS k, e.value AS v FROM kinds k, json_each(k.j) AS e WHERE k.id = 'k1' AND e.key = 'b'`,
			rows: [][]any{r("k1", "b", int64(1))}},
		{rule: "AQ-5", name: "json-extract", tables: tK, want: aqEither,
			sql:  `SELECT json_extract(j, '$.b') AS b, json_extract(j, '$.a[1]') AS a, j ->> '$.b' AS c FROM kinds WHERE id = 'k1'`,
			rows: [][]any{r(int64(1), int64(2), int64(1))}},
		// A recursion past 1,000 steps runs to its end (MariaDB stops at
		// max_recursive_iterations silently unless the driver lifts it).
		{rule: "AQ-5", name: "recursive-cte-past-a-thousand-steps", want: aqRows,
			sql: `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5000)
				SELECT count(*) AS n, max(x) AS m FROM c WHERE x > (SELECT count(*) FROM todos)`,
			rows: [][]any{r(int64(4997), int64(5000))}},
	}
}
