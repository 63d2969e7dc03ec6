package d1sql

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/querylang"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// FuzzD1QueryRewrite fuzzes the D1 authoritative-query rewriter (AQ-1,
// AQ-2) with host text:
//
//	go test ./drivers/d1http/internal/d1sql -run '^$' -fuzz '^FuzzD1QueryRewrite$' -fuzztime 10m
//
// Invariants, for any text and any number of string bind values: it never
// panics; an error is CodeQueryInvalid without the text in its message;
// an accepted statement tokenizes, is one statement, binds exactly ?1 and
// ?2 (never another or a named parameter) with one JSON element per host
// parameter, qualifies names with main. only in its own CTE bodies, and
// names nothing starting with sqlite_, pragma_, _sync, _cf_ or d1_ except
// its own "_sync_partition" predicates, an alias (after AS) or a
// qualifier; it holds no keyword of a writing statement.
func FuzzD1QueryRewrite(f *testing.F) {
	for _, s := range querylang.SeedQueries {
		f.Add(s, uint8(0))
	}
	for _, s := range d1FuzzSeeds {
		f.Add(s, uint8(2))
	}
	f.Fuzz(func(t *testing.T, sql string, nargs uint8) {
		text, err := querylang.CheckQueryText(sql)
		if err != nil {
			return
		}
		args := make([]any, int(nargs)%8)
		for i := range args {
			args[i] = "v"
		}
		q, err := RewriteD1Query(text.SQL, args, d1TestTables)
		if err != nil {
			if driver.CodeOf(err) != driver.CodeQueryInvalid {
				t.Fatalf("error %v, want code %s", err, driver.CodeQueryInvalid)
			}
			if len(sql) >= 8 && strings.Contains(err.Error(), sql) {
				t.Fatalf("the error message repeats the query text: %v", err)
			}
			return
		}
		checkD1Rewrite(t, q, len(args))
	})
}

// d1FuzzSeeds are hostile corpus shapes (conformance/cap_query_corpus.go)
// with two parameters where they bind any.
var d1FuzzSeeds = []string{
	`SELECT sqlite_master.id AS id FROM todos AS sqlite_master ORDER BY 1`,
	`SELECT t.id AS id, u.email AS email FROM todos t, users u WHERE t.owner_id = u.id ORDER BY t.id`,
	`WITH todos AS (SELECT 'fake' AS id) SELECT id FROM todos`,
	`WITH todos AS (SELECT id FROM todos) SELECT id FROM todos ORDER BY id`,
	`WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 3) SELECT count(*) AS c FROM n, todos`,
	`SELECT t.id FROM todos t, "_SYNC_META" m`,
	`SELECT t.id FROM todos t JOIN pragma_table_info('todos') p ON p.name = 'id'`,
	`SELECT (SELECT count(*) FROM sqlite_schema) AS n, id FROM todos`,
	`SELECT _sync_partition AS p FROM todos`,
	`WITH x AS (SELECT 1) DELETE FROM todos`,
	`WITH x AS (SELECT * FROM todos) INSERT INTO users (id, org, email) SELECT id, 'o1', id FROM x`,
	`WITH x AS (SELECT 1) REPLACE INTO users (id) VALUES (?1)`,
	`SELECT replace(title, ?1, ?2) AS r FROM todos`,
	`SELECT t.id AS id, j.value AS v FROM todos t, json_each('[1, 2]') AS j WHERE t.id = 't1' ORDER BY v`,
	`SELECT ?2 AS a, id FROM todos WHERE owner_id = ?1 ORDER BY id`,
	`SELECT id FROM todos WHERE owner_id = ? OR title = ? ORDER BY id`,
	`SELECT id FROM 'todos' WHERE x = ?2 AND y = ?1`,
	`SELECT load_extension('aq_evil') AS x FROM todos`,
	"SELECT id FROM todos -- ; DELETE FROM todos\nORDER BY id",
	`SELECT id FROM todos ORDER BY id /* ; DELETE FROM todos`,
}

// checkD1Rewrite checks the invariants of FuzzD1QueryRewrite on q.
func checkD1Rewrite(t *testing.T, q D1Query, params int) {
	t.Helper()
	var elems []any
	if err := json.Unmarshal([]byte(q.Args), &elems); err != nil || len(elems) != params || q.Params != params {
		t.Fatalf("Args %s (%v) / Params %d, want %d elements", q.Args, err, q.Params, params)
	}
	toks, err := querylang.Tokenize(q.SQL)
	if err != nil {
		t.Fatalf("the rewritten statement does not tokenize: %v\n%s", err, q.SQL)
	}
	if text, err := querylang.CheckQueryText(strings.ReplaceAll(q.SQL, "main.", "")); err != nil || text.Params != 2 {
		t.Fatalf("the rewritten statement is not one statement binding 2 parameters (%v)\n%s", err, q.SQL)
	}
	// The declared tables' CTE bodies: the only place main. may appear.
	own := 0
	var prev []querylang.Token
	for i, tk := range toks {
		s := q.SQL[tk.Start:tk.End]
		switch tk.Kind {
		case querylang.TokNamedParam, querylang.TokSemi:
			t.Fatalf("token %q in the rewritten statement\n%s", s, q.SQL)
		case querylang.TokParam:
			if s != "?1" && s != "?2" {
				t.Fatalf("parameter %s in the rewritten statement\n%s", s, q.SQL)
			}
		case querylang.TokWord, querylang.TokQuotedID:
			name := strings.ToLower(s)
			if tk.Kind == querylang.TokQuotedID {
				name = strings.ToLower(querylang.UnquoteIdent(s))
			}
			if tk.Kind == querylang.TokWord && d1RefusedWords[name] && name != "replace" {
				t.Fatalf("keyword %s in the rewritten statement\n%s", s, q.SQL)
			}
			if j := nextSignificant(toks, i+1); name == "main" && j >= 0 && q.SQL[toks[j].Start:toks[j].End] == "." {
				if !strings.HasPrefix(q.SQL[tk.Start:], `main."todos" WHERE "_sync_partition" = ?2)`) {
					t.Fatalf("main. outside the partition CTEs\n%s", q.SQL)
				}
				own++
			}
			if D1QueryRefusedName(name) && name != sqlitesql.PartitionColumn {
				alias := len(prev) > 0 && strings.EqualFold(q.SQL[prev[len(prev)-1].Start:prev[len(prev)-1].End], "as")
				if j := nextSignificant(toks, i+1); !alias && (j < 0 || q.SQL[toks[j].Start:toks[j].End] != ".") {
					t.Fatalf("the rewritten statement names %s\n%s", s, q.SQL)
				}
			}
			if name == sqlitesql.PartitionColumn && !strings.HasPrefix(q.SQL[tk.Start:], `"_sync_partition" = ?2)`) {
				t.Fatalf("%s outside the partition CTEs\n%s", s, q.SQL)
			}
		}
		if tk.Kind != querylang.TokSpace {
			prev = append(prev, tk)
		}
	}
	if own != len(d1TestTables) {
		t.Fatalf("%d partition CTEs, want %d\n%s", own, len(d1TestTables), q.SQL)
	}
}

func nextSignificant(toks []querylang.Token, from int) int {
	for i := from; i < len(toks); i++ {
		if toks[i].Kind != querylang.TokSpace {
			return i
		}
	}
	return -1
}
