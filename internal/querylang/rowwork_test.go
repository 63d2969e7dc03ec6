package querylang

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
)

// balancedSum is n copies of term joined by + as a balanced tree: a
// shallow text of any length.
func balancedSum(term string, n int) string {
	if n == 1 {
		return term
	}
	return "(" + balancedSum(term, n/2) + " + " + balancedSum(term, n-n/2) + ")"
}

// rowWorkAttacks are texts every other static rule admits that run many
// calls or operators over one row's values (name → text, bind values).
func rowWorkAttacks() map[string]driver.Query {
	mib := strings.Repeat("a", 1<<20)
	return map[string]driver.Query{
		"2000-upper-calls":         {SQL: "SELECT id FROM todos WHERE " + balancedSum("length(upper(title))", 2000) + " > 0"},
		"3000-length-calls":        {SQL: "SELECT id FROM todos WHERE " + balancedSum("length(title)", 3000) + " > 0"},
		"concatenation-chain":      {SQL: "SELECT length(title" + strings.Repeat(" || ''", 3000) + ") AS n FROM todos"},
		"nested-calls":             {SQL: "SELECT length(" + strings.Repeat("upper(", 90) + "title" + strings.Repeat(")", 90) + ") AS n FROM todos"},
		"simple-case-500-whens":    {SQL: "SELECT CASE title " + strings.Repeat("WHEN 'a' THEN 1 ", 500) + "END AS n FROM todos"},
		"1000-comparisons":         {SQL: "SELECT id FROM todos WHERE " + strings.Repeat("title <> 'x' AND ", 999) + "title <> 'y'"},
		"bound-value-2000-calls":   {SQL: "SELECT id FROM todos WHERE " + balancedSum("length(upper(?1))", 2000) + " > 0", Args: []any{mib}},
		"derived-growth-consumed":  {SQL: "SELECT length(upper(x)) + length(upper(x)) AS n FROM (SELECT repeat(title, 100) AS x FROM todos)"},
		"cte-growth-consumed":      {SQL: "WITH c AS (SELECT title || title || title || title AS x FROM todos) SELECT id FROM c, todos WHERE " + balancedSum("length(upper(x))", 40) + " > 0"},
		"aggregate-consumed-twice": {SQL: "SELECT length(upper(g)) + length(upper(g)) AS n FROM (SELECT group_concat(title) AS g FROM todos)"},
		"window-and-order":         {SQL: "SELECT count(*) OVER (PARTITION BY " + strings.Repeat("upper(title), ", 99) + "title) AS n FROM todos"},
		"literal-built-value":      {SQL: "SELECT " + balancedSum("length(upper(zeroblob(10000000)))", 40) + " AS n FROM todos"},
		"bound-size-built-value":   {SQL: "SELECT " + balancedSum("length(upper(printf('%.*c', ?1, 'x')))", 2) + " AS n FROM todos", Args: []any{int64(1e8)}},
		"printf-width":             {SQL: "SELECT " + balancedSum("length(upper(printf('%100000000d', 1)))", 4) + " AS n FROM todos"},
		// Found by a hostile review: a correlated sub-query without a
		// table of its own, a parenthesized table, nested BETWEEN
		// (PostgreSQL evaluates x twice) and NULLIF (MariaDB evaluates
		// its first argument twice), aliases referenced again.
		"correlated-subquery-no-from": {SQL: "SELECT id FROM todos WHERE (SELECT " + balancedSum("length(upper(title))", 200) + ") > 0"},
		"exists-no-from":              {SQL: "SELECT id FROM todos WHERE EXISTS (SELECT 1 WHERE " + balancedSum("length(upper(title))", 200) + " > 0)"},
		"subquery-from-small-cte":     {SQL: "WITH s(k) AS (SELECT 1) SELECT id FROM todos WHERE (SELECT " + balancedSum("length(upper(todos.title))", 200) + " FROM s) > 0"},
		"subquery-values":             {SQL: "SELECT id FROM todos WHERE (SELECT " + balancedSum("length(upper(title))", 200) + " FROM (VALUES (1))) > 0"},
		"parenthesized-table":         {SQL: "SELECT id FROM (SELECT 1 AS k) s, (todos) WHERE " + balancedSum("length(upper(title))", 200) + " > 0"},
		"scalar-in-result":            {SQL: "SELECT (SELECT " + balancedSum("length(upper(title))", 200) + ") AS n FROM todos"},
		"nested-between":              {SQL: "SELECT id FROM todos WHERE " + strings.Repeat("CASE WHEN ", 12) + "length(upper(title))" + strings.Repeat(" BETWEEN 0 AND 2000000000 THEN 1 ELSE 0 END", 12) + " = 1"},
		"nested-nullif":               {SQL: "SELECT length(" + strings.Repeat("nullif(", 10) + "upper(title)" + strings.Repeat(", 'x')", 10) + ") AS n FROM todos"},
		"alias-referenced":            {SQL: "SELECT id, (title LIKE '%" + strings.Repeat("a", 90) + "b%') AS m FROM todos GROUP BY id HAVING " + strings.Repeat("m + ", 11) + "m > 0"},
		"alias-in-where-no-as":        {SQL: "SELECT id, upper(upper(upper(title))) u FROM todos WHERE " + strings.Repeat("u <> '' AND ", 30) + "u <> ''"},
		"in-list-of-columns":          {SQL: "SELECT id FROM todos WHERE title IN (" + strings.Repeat("upper(title), ", 499) + "title)"},
	}
}

func TestRowWorkRefusesManyCallsInOneRow(t *testing.T) {
	for name, q := range rowWorkAttacks() {
		_, err := AdmitQuery(q)
		var le *driver.QueryLimitError
		if !errors.As(err, &le) || le.Bound != driver.BoundRewrite {
			t.Errorf("%s: %v, want the rewrite bound (row work %d MiB)", name, err, rowWorkOf(q)>>20)
			continue
		}
		if le.Limit != RowWorkBudget(0) {
			t.Errorf("%s: Limit %d, want the budget %d", name, le.Limit, RowWorkBudget(0))
		}
	}
}

func rowWorkOf(q driver.Query) int64 {
	toks, _ := Tokenize(q.SQL)
	return RowWork(q.SQL, toks, q.Args)
}

// ordinaryQueries are texts a host writes; each must be admitted under
// the default Timeout, the first smallQueries of them under 1 s.
var ordinaryQueries = []driver.Query{
	{SQL: "SELECT id, title FROM todos WHERE done = ? ORDER BY id", Args: []any{true}},
	{SQL: "SELECT t.id, t.title, u.email FROM todos t JOIN users u ON u.id = t.owner_id WHERE t.done = ?", Args: []any{false}},
	{SQL: "SELECT * FROM todos LEFT JOIN users ON users.id = todos.owner_id WHERE todos.done = 0 ORDER BY todos.id LIMIT 10 OFFSET 5"},
	{SQL: "SELECT owner_id, count(*) AS n, sum(done) AS d, group_concat(title, ', ') AS titles FROM todos GROUP BY owner_id HAVING count(*) > 1"},
	{SQL: "SELECT id FROM todos WHERE id IN (" + strings.Repeat("?, ", 199) + "?)", Args: make([]any, 200)},
	{SQL: "SELECT upper(title) AS t, lower(title) AS l, length(title) AS n, substr(title, 1, 20) AS s FROM todos WHERE title LIKE ? ESCAPE '\\'", Args: []any{"%milk%"}},
	{SQL: "SELECT CASE status WHEN 'open' THEN 1 WHEN 'doing' THEN 2 WHEN 'review' THEN 3 WHEN 'done' THEN 4 ELSE 0 END AS rank FROM todos"},
	{SQL: "WITH open AS (SELECT id, owner_id FROM todos WHERE done = 0) SELECT u.email, count(o.id) AS n FROM users u LEFT JOIN open o ON o.owner_id = u.id GROUP BY u.email ORDER BY n DESC"},
	{SQL: "SELECT json_object('id', id, 'title', title, 'tags', json(tags)) AS doc FROM todos"},
	{SQL: "SELECT id, trim(title) AS t, trim(project_id) AS p FROM todos WHERE trim(owner_id) <> ''"},
	{SQL: "SELECT id || ',' || title || ',' || project_id || ',' || owner_id || ',' || done || ',' || updated_at || ',' || id AS line FROM todos"},
	{SQL: "SELECT id, lower(trim(title)) AS t FROM todos GROUP BY lower(trim(title)) ORDER BY lower(trim(title))"},
	{SQL: "SELECT id, coalesce(nullif(trim(title), ''), '(untitled)') AS t, substr(title, 1, 80) AS preview FROM todos WHERE owner_id = ? ORDER BY lower(title), id", Args: []any{"u1"}},
	{SQL: "SELECT id, title, done FROM todos WHERE project_id = ? AND done = 0 AND updated_at BETWEEN ? AND ? ORDER BY updated_at DESC, id LIMIT 50", Args: []any{"p", int64(1), int64(2)}},
	{SQL: "SELECT t.id FROM todos t WHERE EXISTS (SELECT 1 FROM todos u WHERE u.id = t.project_id AND u.owner_id = t.owner_id)"},
	{SQL: "SELECT owner_id, json_group_array(title) AS titles FROM todos GROUP BY owner_id"},
	{SQL: "SELECT id, json_extract(meta, '$.tags') AS tags, coalesce(note, '') || ' (' || title || ')' AS label FROM todos"},
	{SQL: "SELECT id, rank() OVER (PARTITION BY owner_id ORDER BY created_at DESC) AS r FROM todos"},
	{SQL: "SELECT t.id FROM todos t WHERE EXISTS (SELECT 1 FROM users u WHERE u.id = t.owner_id AND u.active = 1) AND t.title <> ''"},
	{SQL: "SELECT x FROM (SELECT title || title AS x FROM todos) AS d WHERE length(x) > 10"},
	{SQL: "SELECT length(x) AS n FROM (SELECT x||x AS x FROM (SELECT x||x AS x FROM (SELECT substr(title, 1, 1) AS x FROM todos) AS a) AS b) AS c"},
}

const smallQueries = 8

func TestRowWorkAdmitsOrdinaryQueries(t *testing.T) {
	for i, q := range ordinaryQueries {
		if i < smallQueries {
			q.Limits.Timeout = time.Second
		}
		if _, err := AdmitQuery(q); err != nil {
			t.Errorf("%.80s (Timeout %v): %v (row work %d MiB)", q.SQL, q.Limits.Timeout, err, rowWorkOf(q)>>20)
		}
	}
}

// The budget follows the Timeout: the same text is admitted under a
// longer one.
func TestRowWorkBudgetFollowsTimeout(t *testing.T) {
	if RowWorkBudget(0) != RowWorkBudget(5*time.Second) || RowWorkBudget(5*time.Second) != 5*RowWorkBytesPerSecond {
		t.Errorf("budget under the default Timeout: %d, want %d", RowWorkBudget(0), 5*RowWorkBytesPerSecond)
	}
	if RowWorkBudget(time.Millisecond) != MinRowWorkBytes {
		t.Errorf("budget under 1 ms: %d, want the floor %d", RowWorkBudget(time.Millisecond), MinRowWorkBytes)
	}
	q := driver.Query{SQL: "SELECT id FROM todos WHERE " + balancedSum("length(upper(title))", 30) + " > 0"}
	w := rowWorkOf(q)
	if w <= RowWorkBudget(time.Second) || w > RowWorkBudget(0) {
		t.Fatalf("30 upper calls: row work %d, want between the 1 s and 5 s budgets", w)
	}
	if _, err := AdmitQuery(q); err != nil {
		t.Errorf("30 upper calls under the default Timeout: %v", err)
	}
	q.Limits.Timeout = time.Second
	if _, err := AdmitQuery(q); !errors.Is(err, driver.ErrQueryLimit) {
		t.Errorf("30 upper calls under a 1 s Timeout: %v, want the rewrite bound", err)
	}
}

// What each shape costs, checked against the measure CheckRowWork
// documents (in units of a column value, C).
func TestRowWorkMeasure(t *testing.T) {
	const c = RowWorkColumnBytes
	for _, tc := range []struct {
		sql  string
		args []any
		want int64
	}{
		{"SELECT title FROM todos", nil, 0},                                // a result column
		{"SELECT id FROM todos WHERE title = 'x'", nil, c},                 // compared once
		{"SELECT length(title) AS n FROM todos", nil, c},                   // read once
		{"SELECT upper(title) AS u FROM todos", nil, c},                    // read once
		{"SELECT title || title || title AS x FROM todos", nil, 2*c + 3*c}, // each || copies what the chain holds
		{"SELECT CASE title WHEN 'a' THEN 1 WHEN 'b' THEN 2 END AS n FROM todos", nil, 2 * c},
		{"SELECT id FROM todos WHERE length(?) > 0", []any{strings.Repeat("a", 100)}, 100},
		{"SELECT replace(title, 'a', 'aaa') AS r FROM todos", nil, 3 * 2 * c}, // grows 3×, a 1-byte pattern
		{"SELECT replace(title, ?, ?) AS r FROM todos", []any{"a", "aaa"}, 3 * 2 * c},
		{"SELECT id FROM todos WHERE title LIKE '%' || ? || '%'", []any{"abcdefghijklm"}, 5 * c}, // 3 + 13 + 3 bytes: 1 + 4 copies
		{"SELECT instr(title, ?) AS i FROM todos", []any{"abcdef"}, 2 * c},
		{"SELECT length(substr(title, 1, 2)) AS n FROM todos", nil, c + 16},
		{"SELECT upper(x) AS u FROM (SELECT substr(title, 1, 2) AS x FROM todos) AS d", nil, 2*c + 48}, // x's expression again (a flattener copies it), x is 16
		{"SELECT id FROM todos WHERE upper(title) IN ('a', 'b', 'c')", nil, c + 3*c},                   // upper once, compared with a halving per item
		{"SELECT id FROM todos WHERE upper(title) IN ('a', id)", nil, 2*c + 3*c + c},                   // upper per item (x = 'a' OR x = id), the item id compared
		{"SELECT CASE upper(title) WHEN 1 THEN 1 WHEN 'a' THEN 2 END AS n FROM todos", nil, 2*c + 2*c}, // upper per WHEN type, the value per WHEN
		{"SELECT count(*) AS n FROM todos", nil, 0},
	} {
		toks, err := Tokenize(tc.sql)
		if err != nil {
			t.Fatal(err)
		}
		// Literals and numbers add their bytes (8 at least): under 1 KiB.
		if got := RowWork(tc.sql, toks, tc.args); got < tc.want || got >= tc.want+1024 {
			t.Errorf("%s: row work %d, want %d (+ under 1 KiB of literals)", tc.sql, got, tc.want)
		}
	}
}

// The rule runs in a pass per level of derived tables: the costly texts
// of the rewriters are priced in a bounded number of passes.
func TestRowWorkPassesAreBounded(t *testing.T) {
	for name, sql := range CostlyQueries() {
		toks, err := Tokenize(sql)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		v := newSigText(sql, toks, nil)
		_, passes := rowWorkPasses(v)
		if passes > MaxQueryDepth+2 {
			t.Errorf("%s: %d passes, over the nesting bound", name, passes)
		}
	}
}

// A refused text's error names the Timeout that would admit it, and that
// Timeout does.
func TestRowWorkErrorNamesTheTimeout(t *testing.T) {
	q := driver.Query{SQL: "SELECT id FROM todos WHERE " + balancedSum("length(upper(title))", 30) + " > 0",
		Limits: driver.QueryLimits{Timeout: time.Second}}
	_, err := AdmitQuery(q)
	if err == nil {
		t.Fatal("thirty upper() calls admitted under 1 s")
	}
	ms := (rowWorkOf(q)*1000 + RowWorkBytesPerSecond - 1) / RowWorkBytesPerSecond
	want := time.Duration(ms) * time.Millisecond
	if !strings.Contains(err.Error(), "a Timeout of "+want.String()+" would admit it") {
		t.Fatalf("%v: does not name the Timeout %v", err, want)
	}
	q.Limits.Timeout = want
	if _, err := AdmitQuery(q); err != nil {
		t.Errorf("under the Timeout the error named (%v): %v", want, err)
	}
	q.Limits.Timeout = want - time.Millisecond
	if _, err := AdmitQuery(q); err == nil {
		t.Errorf("admitted under %v, a millisecond less than the Timeout the error named", q.Limits.Timeout)
	}
	huge := driver.Query{SQL: "SELECT id FROM todos WHERE " + balancedSum("length(upper(title))", 6000) + " > 0"}
	if _, err := AdmitQuery(huge); err == nil || !strings.Contains(err.Error(), "no Timeout admits it") {
		t.Errorf("6,000 upper() calls: %v, want the error to say no Timeout admits it", err)
	}
}
