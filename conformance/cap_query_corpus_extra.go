package conformance

// More attacks on the authoritative-query boundary (AQ-1…AQ-3), aimed at
// the drivers that rewrite a query instead of asking an engine authorizer
// (PostgreSQL, MySQL, D1). Same entry shape and outcomes as
// cap_query_corpus.go. Each entry names the engine trick it tries: a
// lexical rule of the target engine that SQLite does not share (MySQL's
// executable comments and `--` without a space, PostgreSQL's U&"…"
// escapes and `--` anywhere, backslash escapes, charset introducers),
// relations reached by other syntax (derived tables and CTEs named like a
// table, LATERAL, table functions, TABLE, strings as tables), statements
// and functions with side effects or information (INTO OUTFILE, FOR
// UPDATE, sequences, locks, sleeps, session variables, catalogs), and
// parameter numbering tricks.

// aqCorpusExtra returns the entries.
func aqCorpusExtra() []aqEntry {
	return []aqEntry{
		// ---- AQ-2: lexical rules of the target engine ----
		// The emitted text is re-read by PostgreSQL: a negative number glued
		// to a minus (1-0xFFFFFFFFFFFFFFFF is 1 - -1) must not become a
		// `--` comment that turns the rest of a string into SQL.
		{rule: "AQ-2", name: "negative-hex-must-not-open-a-comment", want: aqRows, rows: nil,
			sql: "SELECT id FROM todos WHERE 0 = 1-0xFFFFFFFFFFFFFFFF OR id = '\nUNION ALL SELECT id FROM public.todos --' ORDER BY id"},
		{rule: "AQ-2", name: "negative-hex-arithmetic", sql: `SELECT 1-0xFFFFFFFFFFFFFFFF AS v, id FROM todos WHERE id = 't1'`,
			want: aqRows, rows: [][]any{r(int64(2), "t1")}},
		// PostgreSQL reads U&"\0070ublic" as the name public.
		{rule: "AQ-2", name: "unicode-escaped-schema", sql: `SELECT id FROM U&"\0070ublic".todos ORDER BY id`, want: aqInvalid},
		{rule: "AQ-2", name: "unicode-escaped-schema-uescape-in-subquery", want: aqInvalid,
			sql: `SELECT id FROM todos WHERE id IN (SELECT id FROM u&"!0070ublic" UESCAPE '!' . "todos") ORDER BY id`},
		// MySQL runs /*! … */ and /*M! … */; every engine must see a comment.
		{rule: "AQ-2", name: "executable-comments-are-comments", want: aqRows, rows: aqIDs,
			sql: `SELECT id FROM todos WHERE 1 = 1 /*! AND 0 */ /*!50700 AND 0 */ /*M!100100 AND 0 */ ORDER BY id`},
		{rule: "AQ-2", name: "optimizer-hint-is-a-comment", want: aqRows, rows: aqIDs,
			sql: `SELECT /*+ SET_VAR(sql_mode='') MAX_EXECUTION_TIME(1) */ id FROM todos ORDER BY id`},
		// SQLite: --1 is a comment; MySQL would read done - -1 = 1.
		{rule: "AQ-2", name: "dash-dash-without-space-is-a-comment", sql: "SELECT id FROM todos WHERE done --1 = 1\nORDER BY id",
			want: aqRows, rows: [][]any{r("t2")}},
		{rule: "AQ-1", name: "hash-comment", sql: "SELECT id FROM todos # , users\nORDER BY id", want: aqInvalid},
		// A backslash ends nothing: '\' is a string of one backslash.
		{rule: "AQ-2", name: "backslash-quote-does-not-extend-a-string", want: aqRows, rows: [][]any{r("t1"), r("t3")},
			sql: `SELECT id FROM todos WHERE title = '\' OR owner_id = 'u1' ORDER BY id`},
		{rule: "AQ-1", name: "charset-introducers", want: aqInvalid,
			sql: `SELECT id FROM todos WHERE title = _binary 'two' OR title = _utf8mb4'one' OR title = N'one' OR title = b'1'`},
		{rule: "AQ-1", name: "odbc-escapes", sql: `SELECT {fn database()} AS d FROM todos {oj users}`, want: aqInvalid},
		{rule: "AQ-2", name: "hex-integer-is-a-number", sql: `SELECT id, 0x10 AS h FROM todos WHERE id = 't1'`, want: aqRows,
			rows: [][]any{r("t1", int64(16))}},
		{rule: "AQ-2", name: "quotes-inside-quoted-names", want: aqRows,
			sql:  "SELECT 1 AS `x``, (SELECT count(*) FROM users) AS ``y`, title AS [c\"d] FROM todos WHERE id = 't1'",
			cols: []string{"x`, (SELECT count(*) FROM users) AS `y", `c"d`}, rows: [][]any{r(int64(1), "one")}},
		{rule: "AQ-1", name: "nul-byte-in-the-text", sql: "SELECT id FROM todos\x00; DELETE FROM todos", want: aqInvalid},
		{rule: "AQ-1", name: "invalid-utf8-in-the-text", sql: "SELECT '\xff' AS x FROM todos", want: aqInvalid},

		// ---- AQ-2: names and the relations they resolve to ----
		{rule: "AQ-2", name: "unicode-look-alike-name", sql: `SELECT id FROM "todoѕ" ORDER BY id`, want: aqInvalid},
		{rule: "AQ-2", name: "unicode-case-folding-name", sql: `SELECT id FROM "TODOſ" ORDER BY id`, want: aqEither, rows: aqIDs},
		{rule: "AQ-2", name: "alias-named-like-an-undeclared-table", sql: `SELECT users.id AS id FROM todos AS users ORDER BY 1`,
			want: aqRows, rows: aqIDs},
		{rule: "AQ-2", name: "alias-named-like-a-database", sql: `SELECT mysql.id AS id FROM todos AS mysql ORDER BY mysql.id`,
			want: aqEither, rows: aqIDs},
		{rule: "AQ-2", name: "derived-table-named-like-the-table", want: aqRows, rows: [][]any{r("t1"), r("t3")},
			sql: `SELECT todos.id AS id FROM (SELECT id FROM todos WHERE id <> 't2') AS todos ORDER BY 1`},
		{rule: "AQ-2", name: "nested-cte-shadowing-the-table", want: aqEither,
			sql:  `SELECT id FROM (WITH todos AS (SELECT 'fake' AS id) SELECT id FROM todos) AS s UNION ALL SELECT id FROM todos ORDER BY id`,
			rows: [][]any{r("fake"), r("t1"), r("t2"), r("t3")}},
		{rule: "AQ-2", name: "recursive-cte-shadowing-the-table", want: aqInvalid,
			sql: `WITH RECURSIVE todos(id) AS (SELECT 'x' UNION ALL SELECT id FROM todos WHERE 1 = 0) SELECT id FROM todos`},
		{rule: "AQ-2", name: "cte-named-like-an-undeclared-table", want: aqRows,
			sql:  `WITH RECURSIVE users(id) AS (SELECT 'a' UNION ALL SELECT id FROM users WHERE 1 = 0) SELECT t.id AS id, u.id AS u FROM todos t, users u ORDER BY t.id`,
			rows: [][]any{r("t1", "a"), r("t2", "a"), r("t3", "a")}},
		{rule: "AQ-2", name: "system-databases-quoted", sql: `SELECT t.id FROM todos t, "MySQL".user u, sys."version" v`, want: aqInvalid},
		{rule: "AQ-2", name: "lateral-over-an-undeclared-table", want: aqInvalid,
			sql: `SELECT t.id, l.n FROM todos t, LATERAL (SELECT count(*) AS n FROM users) l`},
		{rule: "AQ-2", name: "table-statement-of-an-undeclared-table", sql: `SELECT id FROM todos UNION TABLE users`, want: aqInvalid},
		{rule: "AQ-2", name: "subquery-in-limit-reading-an-undeclared-table", want: aqInvalid,
			sql: `SELECT id FROM todos ORDER BY id LIMIT (SELECT count(*) FROM users)`},
		{rule: "AQ-2", name: "json-each-over-an-undeclared-table", want: aqInvalid,
			sql: `SELECT t.id FROM todos t, json_each((SELECT json_group_array(email) FROM users)) j`},
		{rule: "AQ-2", name: "table-functions", sql: `SELECT t.id FROM todos t, generate_series(1, 3) g, json_table('[1]', '$[*]' COLUMNS (v INT PATH '$')) j`,
			want: aqInvalid},
		{rule: "AQ-2", name: "record-function-with-a-column-list", want: aqInvalid,
			sql: `SELECT t.id FROM todos t, json_to_recordset('[{"a":1}]') AS (a int)`},
		{rule: "AQ-2", name: "eponymous-virtual-tables", want: aqInvalid,
			sql: "SELECT t.id FROM todos t, [PRAGMA_TABLE_LIST] p, `Sqlite_Schema` s, dbstat d"},
		{rule: "AQ-2", name: "string-as-table-after-comma", sql: `SELECT t.id FROM todos t, 'users' u`, want: aqInvalid},
		{rule: "AQ-2", name: "string-as-declared-table-after-join", tables: tTU, want: aqEither, rows: aqIDs,
			sql: `SELECT t.id AS id FROM todos t JOIN 'users' u ON u.id = t.owner_id ORDER BY t.id`},
		// PostgreSQL: the array type of regclass turns OIDs into catalog
		// names; aclitem's input looks role names up.
		{rule: "AQ-2", name: "oid-array-cast-to-catalog-names", want: aqEither, rows: [][]any{r(int64(0))},
			sql: `SELECT CAST(CAST('{1259}' AS _oid) AS _regclass) AS c FROM todos WHERE id = 't1'`},
		{rule: "AQ-2", name: "aclitem-typed-literal", sql: `SELECT aclitem 'postgres=r/postgres' AS a FROM todos`, want: aqInvalid},
		{rule: "AQ-2", name: "rowid-of-the-table", sql: `SELECT id, rowid AS r, _rowid_ AS o FROM todos`, want: aqInvalid},

		// ---- AQ-1: nothing written, nothing else run ----
		{rule: "AQ-1", name: "into-outfile", sql: `SELECT id FROM todos INTO OUTFILE '/tmp/aq-evil.txt'`, want: aqInvalid},
		{rule: "AQ-1", name: "locking-clauses", sql: `SELECT id FROM todos FOR UPDATE SKIP LOCKED`, want: aqInvalid},
		{rule: "AQ-1", name: "side-effect-functions", want: aqInvalid,
			sql: `SELECT get_lock('aq', 0) + release_lock('aq') + sleep(0) + benchmark(10, md5('x')) + nextval('s') + setval('s', 1) + set_config('search_path', 'pg_catalog', false) + last_insert_id(5) + pg_advisory_lock(1) + pg_sleep(0) AS x FROM todos`},
		{rule: "AQ-1", name: "unbounded-result-functions", want: aqInvalid,
			sql: `SELECT repeat('x', 1000000000) AS a, zeroblob(1000000000) AS b, randomblob(1000000000) AS c FROM todos`},
		{rule: "AQ-1", name: "session-variables", sql: `SELECT @@version AS v, id FROM todos`, want: aqInvalid},
		{rule: "AQ-2", name: "session-information-functions", want: aqInvalid,
			sql: `SELECT database() AS d, schema() AS s, version() AS v, connection_id() AS c, pg_backend_pid() AS p FROM todos`},
		{rule: "AQ-2", name: "session-information-keywords", want: aqInvalid,
			sql: `SELECT current_user AS a, session_user AS b, current_schema AS c, current_role AS d FROM todos`},
		{rule: "AQ-1", name: "parameter-glued-to-a-function-name", sql: `SELECT id FROM todos WHERE abs? = 1`,
			args: []any{int64(-1)}, want: aqInvalid},

		// ---- AQ-3: parameter numbering and values ----
		{rule: "AQ-3", name: "mixed-numbered-and-plain-parameters", want: aqRows, rows: [][]any{r("A", "B", "t1")},
			sql: `SELECT ?2 AS a, ? AS b, id FROM todos WHERE id = ?1`, args: []any{"t1", "A", "B"}},
		{rule: "AQ-3", name: "unused-first-parameter", sql: `SELECT id FROM todos WHERE id = ?2`, args: []any{"t3", "t1"},
			want: aqRows, rows: [][]any{r("t1")}},
		// SQLite numbers ?01 as 1 but names it "?01"; the portable dialect refuses it.
		{rule: "AQ-1", name: "leading-zero-parameter-number", sql: `SELECT ?01 AS a FROM todos WHERE id = 't1'`, args: []any{"v"},
			want: aqInvalid},
		{rule: "AQ-1", name: "parameter-zero", sql: `SELECT id FROM todos WHERE id = ?0`, args: []any{"t1"}, want: aqInvalid},
		{rule: "AQ-3", name: "question-mark-in-quoted-name", sql: "SELECT id AS `?` FROM todos WHERE owner_id = ? ORDER BY id",
			args: []any{"u2"}, want: aqRows, cols: []string{"?"}, rows: [][]any{r("t2")}},
		{rule: "AQ-3", name: "json-and-quote-characters-are-data", sql: `SELECT ? AS a, ?2 AS b FROM todos WHERE id = 't1'`,
			args: []any{`x"],'); -- /*`, `\"\u0000`}, want: aqRows, rows: [][]any{r(`x"],'); -- /*`, `\"\u0000`)}},
		{rule: "AQ-3", name: "nul-byte-in-a-bind-value", sql: `SELECT id FROM todos WHERE title = ?`,
			args: []any{"one\x00' OR 1=1 --"}, want: aqEither, rows: nil},
		{rule: "AQ-3", name: "text-bind-value-in-limit", sql: `SELECT id FROM todos ORDER BY id LIMIT ?`,
			args: []any{"1; DELETE FROM todos"}, want: aqEither, rows: [][]any{r("t1")}},

		// ---- AQ-2: a name spelling a declared table is not a read of it ----
		{rule: "AQ-2", name: "derived-table-alias-instead-of-the-table", want: aqInvalid,
			sql: `SELECT todos.id AS id FROM (SELECT 'fake' AS id) AS todos`},
		{rule: "AQ-2", name: "derived-table-alias-without-as", want: aqInvalid,
			sql: `SELECT todos.id AS id FROM (SELECT 'fake' AS id) todos`},
		{rule: "AQ-2", name: "column-alias-named-like-the-table", want: aqInvalid,
			sql: `SELECT 'fake' AS todos`},
		{rule: "AQ-2", name: "table-read-after-a-comma-of-from", want: aqRows, rows: [][]any{r("t1")},
			sql: `SELECT x.id FROM (SELECT 't1' AS k) AS y, todos AS x WHERE x.id = y.k`},
	}
}
