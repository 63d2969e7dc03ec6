package conformance

// The hostile corpus of the authoritative-query capability (AQ-1…AQ-3,
// AQ-5). Every entry runs against partition p1 of a store seeded by
// aqSeed, where p2 holds look-alike rows (the same ids, owners and
// emails with other values), and must either return exactly p1's rows or
// be rejected with sync.storage.query_invalid; afterwards nothing may have
// been written (aqCheckUnchanged). The expected rows are written down here,
// not computed from a driver, so they are the same for every driver (AQ-5).
//
// Outcomes:
//   - rows: the query is valid and returns exactly cols/rows (in order).
//   - invalid: the driver must refuse it with CodeQueryInvalid.
//   - either: the dialect leaves room (a schema-qualified name, an alias
//     spelled like a schema, an unterminated comment): a refusal is fine,
//     and so are exactly p1's rows — never another partition's.

// aqOutcome is what a corpus entry must produce.
type aqOutcome int

const (
	aqRows aqOutcome = iota
	aqInvalid
	aqEither
)

// aqEntry is one query of the corpus.
type aqEntry struct {
	rule   string // the rule the entry checks (its case is "<rule>/corpus/<name>")
	name   string
	sql    string
	args   []any
	tables []string // nil means {"todos"}
	want   aqOutcome
	cols   []string // checked when not nil
	rows   [][]any  // for aqRows and aqEither
}

// r is a row of expected values.
func r(vals ...any) []any { return vals }

// aqIDs are the todos ids of p1 in order, one per row.
var aqIDs = [][]any{r("t1"), r("t2"), r("t3")}

var (
	tT  = []string{tTodos}
	tTU = []string{tTodos, tUsers}
)

// aqCorpus returns the hostile corpus.
func aqCorpus() []aqEntry {
	return []aqEntry{
		// ---- AQ-2: relations resolve to declared tables restricted to p ----
		{rule: "AQ-2", name: "plain-select", sql: `SELECT id, title FROM todos ORDER BY id`, want: aqRows,
			cols: []string{"id", "title"}, rows: [][]any{r("t1", "one"), r("t2", "two"), r("t3", "three")}},
		{rule: "AQ-2", name: "star-is-the-app-columns-only", sql: `SELECT * FROM todos WHERE id = 't2'`, want: aqRows,
			cols: []string{"id", "title", "done", "project_id", "owner_id", "updated_at"},
			rows: [][]any{r("t2", "two", true, "alpha", "u2", int64(20))}},
		{rule: "AQ-2", name: "same-id-in-another-partition", sql: `SELECT id, title, done FROM todos WHERE id = 't1'`, want: aqRows,
			rows: [][]any{r("t1", "one", false)}},
		{rule: "AQ-2", name: "other-partition-only-id", sql: `SELECT id FROM todos WHERE id = 'x9' OR title LIKE 'p2%'`, want: aqRows,
			rows: nil},
		{rule: "AQ-2", name: "upper-case-name", sql: `SELECT id FROM TODOS ORDER BY id`, want: aqRows, rows: aqIDs},
		{rule: "AQ-2", name: "mixed-case-keywords-and-names", sql: `select Id AS id from ToDoS order by ID`, want: aqRows,
			cols: []string{"id"}, rows: aqIDs},
		{rule: "AQ-2", name: "double-quoted-name", sql: `SELECT id FROM "todos" ORDER BY id`, want: aqRows, rows: aqIDs},
		{rule: "AQ-2", name: "bracket-quoted-name", sql: `SELECT id FROM [todos] ORDER BY id`, want: aqRows, rows: aqIDs},
		{rule: "AQ-2", name: "backtick-quoted-name", sql: "SELECT id FROM `todos` ORDER BY id", want: aqRows, rows: aqIDs},
		{rule: "AQ-2", name: "quoted-other-case-name", sql: `SELECT id FROM "TODOS" ORDER BY id`, want: aqEither, rows: aqIDs},
		{rule: "AQ-2", name: "alias-named-like-a-catalog", sql: `SELECT sqlite_master.id AS id FROM todos AS sqlite_master ORDER BY 1`,
			want: aqRows, rows: aqIDs},
		{rule: "AQ-2", name: "alias-named-main", sql: `SELECT main.id AS id FROM todos AS main ORDER BY main.id`, want: aqEither, rows: aqIDs},
		{rule: "AQ-2", name: "comma-join", tables: tTU, want: aqRows,
			sql:  `SELECT t.id AS id, u.email AS email FROM todos t, users u WHERE t.owner_id = u.id ORDER BY t.id`,
			rows: [][]any{r("t1", "a@x"), r("t2", "b@x"), r("t3", "a@x")}},
		{rule: "AQ-2", name: "self-comma-join", want: aqRows,
			sql:  `SELECT a.id AS a, b.id AS b FROM todos a, todos b WHERE a.id < b.id ORDER BY 1, 2`,
			rows: [][]any{r("t1", "t2"), r("t1", "t3"), r("t2", "t3")}},
		{rule: "AQ-2", name: "left-join-group-by", tables: tTU, want: aqRows,
			sql:  `SELECT u.id AS id, count(t.id) AS n FROM users u LEFT JOIN todos t ON t.owner_id = u.id GROUP BY u.id ORDER BY u.id`,
			rows: [][]any{r("u1", int64(2)), r("u2", int64(1)), r("u3", int64(0))}},
		{rule: "AQ-2", name: "subquery-in-where", tables: tTU, want: aqRows,
			sql:  `SELECT id FROM todos WHERE owner_id IN (SELECT id FROM users WHERE email = 'a@x') ORDER BY id`,
			rows: [][]any{r("t1"), r("t3")}},
		{rule: "AQ-2", name: "subquery-in-from", sql: `SELECT n FROM (SELECT count(*) AS n FROM todos) AS s`, want: aqRows,
			rows: [][]any{r(int64(3))}},
		{rule: "AQ-2", name: "scalar-subquery", sql: `SELECT (SELECT count(*) FROM todos) AS n`, want: aqRows,
			rows: [][]any{r(int64(3))}},
		{rule: "AQ-2", name: "exists-subquery", tables: tTU, want: aqRows,
			sql:  `SELECT count(*) AS n FROM users u WHERE EXISTS (SELECT 1 FROM todos t WHERE t.owner_id = u.id AND t.done)`,
			rows: [][]any{r(int64(1))}},
		{rule: "AQ-2", name: "aggregates", sql: `SELECT count(*) AS n, sum(updated_at) AS s, max(title) AS m FROM todos`, want: aqRows,
			rows: [][]any{r(int64(3), int64(60), "two")}},
		{rule: "AQ-2", name: "group-by", sql: `SELECT project_id AS p, count(*) AS n FROM todos GROUP BY project_id ORDER BY p`,
			want: aqRows, rows: [][]any{r("alpha", int64(2)), r("beta", int64(1))}},
		{rule: "AQ-2", name: "window-function", sql: `SELECT id, row_number() OVER (ORDER BY updated_at DESC) AS rn FROM todos ORDER BY id`,
			want: aqRows, rows: [][]any{r("t1", int64(3)), r("t2", int64(2)), r("t3", int64(1))}},
		{rule: "AQ-2", name: "cte", want: aqRows,
			sql:  `WITH mine AS (SELECT id FROM todos WHERE owner_id = 'u1') SELECT id FROM mine ORDER BY id`,
			rows: [][]any{r("t1"), r("t3")}},
		{rule: "AQ-2", name: "recursive-cte-joined", want: aqRows,
			sql:  `WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 3) SELECT count(*) AS c FROM n, todos`,
			rows: [][]any{r(int64(9))}},
		{rule: "AQ-2", name: "cte-shadowing-the-table-with-a-constant", want: aqInvalid,
			sql: `WITH todos AS (SELECT 'fake' AS id) SELECT id FROM todos`},
		{rule: "AQ-2", name: "cte-shadowing-the-table-reading-itself", want: aqEither, rows: aqIDs,
			sql: `WITH todos AS (SELECT id FROM todos) SELECT id FROM todos ORDER BY id`},
		{rule: "AQ-2", name: "cte-shadowing-the-table-reading-main", want: aqEither, rows: aqIDs,
			sql: `WITH todos AS (SELECT id FROM main.todos) SELECT id FROM todos ORDER BY id`},
		{rule: "AQ-2", name: "union", tables: tTU, want: aqRows, sql: `SELECT id FROM todos UNION SELECT id FROM users ORDER BY id`,
			rows: [][]any{r("t1"), r("t2"), r("t3"), r("u1"), r("u2"), r("u3")}},
		{rule: "AQ-2", name: "union-all-with-main-qualified", want: aqEither,
			sql:  `SELECT id FROM todos UNION ALL SELECT id FROM main.todos ORDER BY id`,
			rows: [][]any{r("t1"), r("t1"), r("t2"), r("t2"), r("t3"), r("t3")}},
		{rule: "AQ-2", name: "except-main-qualified", want: aqEither, rows: nil,
			sql: `SELECT id FROM main.todos EXCEPT SELECT id FROM todos`},
		{rule: "AQ-2", name: "schema-qualified-main", sql: `SELECT id FROM main.todos ORDER BY id`, want: aqEither, rows: aqIDs},
		{rule: "AQ-2", name: "schema-qualified-quoted", sql: `SELECT id FROM "main"."todos" ORDER BY id`, want: aqEither, rows: aqIDs},
		{rule: "AQ-2", name: "schema-qualified-comment-split", sql: `SELECT id FROM main/**/./**/todos ORDER BY id`, want: aqEither,
			rows: aqIDs},
		{rule: "AQ-2", name: "schema-qualified-temp", sql: `SELECT id FROM temp.todos ORDER BY id`, want: aqEither, rows: aqIDs},
		{rule: "AQ-2", name: "schema-qualified-in-subquery", want: aqEither, rows: [][]any{r(int64(0))},
			sql: `SELECT count(*) AS n FROM todos WHERE EXISTS (SELECT 1 FROM main.todos m WHERE m.id = 'x9')`},
		{rule: "AQ-2", name: "temp-unknown-table", sql: `SELECT t.id FROM todos t, temp.x`, want: aqInvalid},
		{rule: "AQ-2", name: "infrastructure-table", sql: `SELECT count(*) AS n FROM _sync_commits`, want: aqInvalid},
		{rule: "AQ-2", name: "infrastructure-table-in-subquery", want: aqInvalid,
			sql: `SELECT id FROM todos WHERE EXISTS (SELECT 1 FROM _sync_partitions) ORDER BY id`},
		{rule: "AQ-2", name: "infrastructure-table-joined", want: aqInvalid,
			sql: `SELECT t.id FROM todos t JOIN _sync_changes c ON c.row_id = t.id`},
		{rule: "AQ-2", name: "infrastructure-meta-quoted", sql: `SELECT t.id FROM todos t, "_SYNC_META" m`, want: aqInvalid},
		{rule: "AQ-2", name: "sqlite-master", sql: `SELECT t.id FROM todos t, sqlite_master m WHERE m.name = 'todos'`, want: aqInvalid},
		{rule: "AQ-2", name: "sqlite-schema", sql: `SELECT (SELECT count(*) FROM sqlite_schema) AS n, id FROM todos`, want: aqInvalid},
		{rule: "AQ-2", name: "sqlite-temp-schema", sql: `SELECT t.id FROM todos t WHERE EXISTS (SELECT 1 FROM sqlite_temp_schema)`,
			want: aqInvalid},
		{rule: "AQ-2", name: "main-sqlite-master", sql: `SELECT id FROM todos WHERE id IN (SELECT name FROM main.sqlite_master)`,
			want: aqInvalid},
		{rule: "AQ-2", name: "pragma-table-valued-function", want: aqInvalid,
			sql: `SELECT t.id FROM todos t JOIN pragma_table_info('todos') p ON p.name = 'id'`},
		{rule: "AQ-2", name: "information-schema", sql: `SELECT t.id FROM todos t, information_schema.tables i`, want: aqInvalid},
		{rule: "AQ-2", name: "pg-catalog", sql: `SELECT t.id FROM todos t, pg_catalog.pg_tables c`, want: aqInvalid},
		{rule: "AQ-2", name: "undeclared-table", sql: `SELECT id FROM users ORDER BY id`, want: aqInvalid},
		{rule: "AQ-2", name: "declared-but-unused-table", sql: `SELECT id FROM todos ORDER BY id`, tables: tTU, want: aqInvalid},
		{rule: "AQ-2", name: "unknown-table", sql: `SELECT id FROM nope`, want: aqInvalid},
		{rule: "AQ-2", name: "hidden-partition-column", sql: `SELECT _sync_partition AS p FROM todos`, want: aqInvalid},
		{rule: "AQ-2", name: "hidden-version-column", sql: `SELECT _sync_version AS v FROM todos`, want: aqInvalid},
		{rule: "AQ-2", name: "json-each-is-data", want: aqRows,
			sql:  `SELECT t.id AS id, j.value AS v FROM todos t, json_each('[1, 2]') AS j WHERE t.id = 't1' ORDER BY v`,
			rows: [][]any{r("t1", int64(1)), r("t1", int64(2))}},

		// ---- AQ-1: one SELECT, nothing else, nothing written ----
		{rule: "AQ-1", name: "attach", sql: `ATTACH DATABASE 'aq-evil.db' AS evil`, want: aqInvalid},
		{rule: "AQ-1", name: "detach", sql: `DETACH DATABASE temp`, want: aqInvalid},
		{rule: "AQ-1", name: "pragma-read", sql: `PRAGMA table_info(todos)`, want: aqInvalid},
		{rule: "AQ-1", name: "pragma-write", sql: `PRAGMA query_only = 0`, want: aqInvalid},
		{rule: "AQ-1", name: "insert", want: aqInvalid,
			sql: `INSERT INTO todos (id, title, done, project_id, owner_id, updated_at) VALUES ('t9', 'evil', 0, 'alpha', 'u1', 1)`},
		{rule: "AQ-1", name: "insert-returning", want: aqInvalid,
			sql: `INSERT INTO todos (id, title, done, project_id, owner_id, updated_at) VALUES ('t9', 'evil', 0, 'alpha', 'u1', 1) RETURNING id`},
		{rule: "AQ-1", name: "update", sql: `UPDATE todos SET title = 'evil'`, want: aqInvalid},
		{rule: "AQ-1", name: "update-returning", sql: `UPDATE todos SET title = 'evil' WHERE id = 't1' RETURNING id, title`, want: aqInvalid},
		{rule: "AQ-1", name: "delete", sql: `DELETE FROM todos`, want: aqInvalid},
		{rule: "AQ-1", name: "delete-returning", sql: `DELETE FROM todos RETURNING *`, want: aqInvalid},
		{rule: "AQ-1", name: "delete-inside-with", sql: `WITH x AS (SELECT 1) DELETE FROM todos`, want: aqInvalid},
		{rule: "AQ-1", name: "insert-select-inside-with", tables: tTU, want: aqInvalid,
			sql: `WITH x AS (SELECT * FROM todos) INSERT INTO users (id, org, email) SELECT id, 'o1', id FROM x`},
		{rule: "AQ-1", name: "replace", tables: []string{tUsers}, want: aqInvalid,
			sql: `REPLACE INTO users (id, org, email) VALUES ('u1', 'o1', 'evil@x')`},
		{rule: "AQ-1", name: "create-table-as-select", sql: `CREATE TABLE evil AS SELECT * FROM todos`, want: aqInvalid},
		{rule: "AQ-1", name: "create-temp-view-shadowing", sql: `CREATE TEMP VIEW todos AS SELECT * FROM main.todos`, want: aqInvalid},
		{rule: "AQ-1", name: "drop-table", sql: `DROP TABLE todos`, want: aqInvalid},
		{rule: "AQ-1", name: "alter-table", sql: `ALTER TABLE todos ADD COLUMN evil TEXT`, want: aqInvalid},
		{rule: "AQ-1", name: "vacuum-into", sql: `VACUUM INTO 'aq-evil-copy.db'`, want: aqInvalid},
		{rule: "AQ-1", name: "explain", sql: `EXPLAIN SELECT id FROM todos`, want: aqInvalid},
		{rule: "AQ-1", name: "explain-query-plan", sql: `EXPLAIN QUERY PLAN SELECT id FROM todos`, want: aqInvalid},
		{rule: "AQ-1", name: "values", sql: `VALUES (1)`, want: aqInvalid},
		{rule: "AQ-1", name: "begin", sql: `BEGIN IMMEDIATE`, want: aqInvalid},
		{rule: "AQ-1", name: "savepoint", sql: `SAVEPOINT evil`, want: aqInvalid},
		{rule: "AQ-1", name: "empty", sql: ` ; `, want: aqInvalid},
		{rule: "AQ-1", name: "select-then-delete", sql: `SELECT id FROM todos; DELETE FROM todos`, want: aqInvalid},
		{rule: "AQ-1", name: "two-selects", sql: `SELECT id FROM todos; SELECT id FROM todos`, want: aqInvalid},
		{rule: "AQ-1", name: "select-then-commit", sql: `SELECT id FROM todos; COMMIT`, want: aqInvalid},
		{rule: "AQ-1", name: "second-statement-after-comment", sql: `SELECT id FROM todos /* x */; DROP TABLE users`, want: aqInvalid},
		{rule: "AQ-1", name: "semicolon-in-block-comment", sql: `SELECT id FROM todos /* ; DELETE FROM todos */ ORDER BY id`,
			want: aqRows, rows: aqIDs},
		{rule: "AQ-1", name: "semicolon-in-line-comment", sql: "SELECT id FROM todos -- ; DELETE FROM todos\nORDER BY id",
			want: aqRows, rows: aqIDs},
		{rule: "AQ-1", name: "line-comment-at-the-end", sql: "SELECT id FROM todos ORDER BY id -- ; DELETE FROM todos",
			want: aqRows, rows: aqIDs},
		{rule: "AQ-1", name: "unterminated-block-comment", sql: `SELECT id FROM todos ORDER BY id /* ; DELETE FROM todos`,
			want: aqEither, rows: aqIDs},
		{rule: "AQ-1", name: "trailing-semicolon", sql: "SELECT id FROM todos ORDER BY id;\n", want: aqEither, rows: aqIDs},
		{rule: "AQ-1", name: "semicolon-in-string", sql: `SELECT 'a;b' AS s, id FROM todos WHERE id = 't1'`, want: aqRows,
			rows: [][]any{r("a;b", "t1")}},
		{rule: "AQ-1", name: "semicolon-in-quoted-identifier", sql: `SELECT id AS "x; DELETE FROM todos" FROM todos WHERE id = 't1'`,
			want: aqRows, cols: []string{"x; DELETE FROM todos"}, rows: [][]any{r("t1")}},
		{rule: "AQ-1", name: "doubled-quote-in-string", sql: `SELECT 'it''s; DROP TABLE todos' AS s FROM todos WHERE id = 't1'`,
			want: aqRows, rows: [][]any{r("it's; DROP TABLE todos")}},
		{rule: "AQ-1", name: "backslash-is-not-an-escape", sql: `SELECT 'a\' AS s, id FROM todos WHERE id = 't1'`, want: aqRows,
			rows: [][]any{r(`a\`, "t1")}},
		{rule: "AQ-1", name: "load-extension", sql: `SELECT load_extension('aq_evil') AS x FROM todos`, want: aqInvalid},
		{rule: "AQ-1", name: "writefile", sql: `SELECT writefile('aq-evil.txt', title) AS w FROM todos`, want: aqInvalid},
		{rule: "AQ-1", name: "readfile", sql: `SELECT readfile('/etc/passwd') AS f FROM todos`, want: aqInvalid},
		{rule: "AQ-1", name: "named-parameter", sql: `SELECT id FROM todos WHERE id = :id`, args: []any{"t1"}, want: aqInvalid},
		{rule: "AQ-1", name: "dollar-parameter", sql: `SELECT id FROM todos WHERE id = $id`, args: []any{"t1"}, want: aqInvalid},
		{rule: "AQ-1", name: "at-parameter", sql: `SELECT id FROM todos WHERE id = @id`, args: []any{"t1"}, want: aqInvalid},
		{rule: "AQ-1", name: "too-few-bind-values", sql: `SELECT id FROM todos WHERE id = ? OR id = ?`, args: []any{"t1"},
			want: aqInvalid},
		{rule: "AQ-1", name: "too-many-bind-values", sql: `SELECT id FROM todos WHERE id = ?`, args: []any{"t1", "t2"},
			want: aqInvalid},

		// ---- AQ-3: bind values are values only ----
		{rule: "AQ-3", name: "injection-text-is-data", sql: `SELECT id FROM todos WHERE title = ?`, args: []any{"' OR 1=1 --"},
			want: aqRows, rows: nil},
		{rule: "AQ-3", name: "drop-text-is-data", sql: `SELECT id FROM todos WHERE owner_id = ?1 OR title = ?1`,
			args: []any{"x'; DROP TABLE todos; --"}, want: aqRows, rows: nil},
		{rule: "AQ-3", name: "comment-text-is-data", sql: `SELECT id FROM todos WHERE title = ? ORDER BY id`,
			args: []any{"one' /*"}, want: aqRows, rows: nil},
		{rule: "AQ-3", name: "numbered-parameters", sql: `SELECT ?2 AS a, id FROM todos WHERE owner_id = ?1 ORDER BY id`,
			args: []any{"u2", "x"}, want: aqRows, rows: [][]any{r("x", "t2")}},
		{rule: "AQ-3", name: "repeated-numbered-parameter", sql: `SELECT id FROM todos WHERE owner_id = ?1 OR title = ?1 ORDER BY id`,
			args: []any{"two"}, want: aqRows, rows: [][]any{r("t2")}},
		{rule: "AQ-3", name: "question-mark-in-string-is-not-a-parameter",
			sql:  `SELECT id FROM todos WHERE title <> '?' AND owner_id = ? ORDER BY id`,
			args: []any{"u2"}, want: aqRows, rows: [][]any{r("t2")}},
		{rule: "AQ-3", name: "like-pattern-is-a-value", sql: `SELECT id FROM todos WHERE title LIKE ? ORDER BY id`,
			args: []any{"t%"}, want: aqRows, rows: [][]any{r("t2"), r("t3")}},
		{rule: "AQ-3", name: "typed-values", want: aqRows,
			sql:  `SELECT id FROM todos WHERE updated_at > ? AND title <> ? AND ? IS NULL ORDER BY id`,
			args: []any{int64(15), "three", nil}, rows: [][]any{r("t2")}},
		{rule: "AQ-3", name: "float-value", sql: `SELECT count(*) AS n FROM todos WHERE updated_at < ?`, args: []any{20.5},
			want: aqRows, rows: [][]any{r(int64(2))}},
	}
}
