package d1sql

import (
	"strconv"
	"strings"
	gosync "sync"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// The D1 push path's multi-row upsert: the adjacent upserts a
// transaction stages into one table go to the engine as ONE statement of
// several VALUES tuples, one JSON parameter per row (D1RowArgs), instead of
// one D1Upsert each — D1 parses (and bills) every statement of a batch.
// The SQLite driver's counterpart is UpsertRows (sqlite_overhead.go); D1's
// differs in the row encoding (values inside one JSON array per row,
// floats as exact [m, e], bytes as hex: D1Param) and in its bounds.

// D1 bounds one statement of a batch: at most D1MaxParams bound
// parameters and D1MaxStatementBytes bytes of SQL text (Cloudflare's
// documented limits: 100 parameters, 100,000 bytes).
const (
	D1MaxParams         = 100
	D1MaxStatementBytes = 100_000
)

// d1MaxUpsertRows caps the rows of one D1UpsertRows statement whatever
// the table: the parameter bound (?1 is the partition) leaves 99.
const d1MaxUpsertRows = D1MaxParams - 1

// D1Upserts holds a table's D1UpsertRows texts, each built once. It is
// safe for concurrent use. Build it with NewD1Upserts.
type D1Upserts struct {
	head, tail string
	tuple      func(p string) string // the VALUES tuple of the row in parameter p
	maxRows    int

	guard string // D1RowGuard of the table

	mu      gosync.Mutex
	texts   []string // n → text, "" until built
	inserts []string // n → InsertSQL(n), "" until built
}

// NewD1Upserts returns the multi-row upsert texts of x.
func NewD1Upserts(x *sqlitesql.Table) *D1Upserts {
	t := x.Def
	names := []string{sqlitesql.Quote(sqlitesql.PartitionColumn), sqlitesql.Quote(sqlitesql.VersionColumn)}
	sets := []string{sqlitesql.Quote(sqlitesql.VersionColumn) + " = excluded." + sqlitesql.Quote(sqlitesql.VersionColumn)}
	for _, c := range t.Columns {
		names = append(names, sqlitesql.Quote(c.Name))
		if c.Name != t.PrimaryKey {
			sets = append(sets, sqlitesql.Quote(c.Name)+" = excluded."+sqlitesql.Quote(c.Name))
		}
	}
	u := &D1Upserts{
		// The alias keeps "excluded" the row proposed for a table named
		// excluded (sqlitesql.UpsertAlias).
		head: "INSERT INTO " + sqlitesql.Quote(t.Name) + " AS " + sqlitesql.UpsertAlias + " (" + strings.Join(names, ", ") + ") VALUES ",
		tail: " ON CONFLICT (" + sqlitesql.Quote(sqlitesql.PartitionColumn) + ", " + sqlitesql.Quote(t.PrimaryKey) + ") DO UPDATE SET " + strings.Join(sets, ", "),
		tuple: func(p string) string {
			params := []string{"?1", D1Param(p, 0, driver.TypeInteger)}
			for i, c := range t.Columns {
				params = append(params, D1Param(p, i+1, c.Type))
			}
			return "(" + strings.Join(params, ", ") + ")"
		},
	}
	u.guard = D1RowGuard(x)
	// The largest n whose text fits D1MaxStatementBytes (at least 1: a
	// table too wide for one row per statement fails at the engine, as
	// D1Upsert would).
	size := len(u.head) + len(u.tail)
	for n := 1; n <= d1MaxUpsertRows; n++ {
		size += len(u.tuple("?" + strconv.Itoa(n+1)))
		if n > 1 {
			size += len(", ")
		}
		if size > D1MaxStatementBytes && n > 1 {
			break
		}
		u.maxRows = n
	}
	u.texts = make([]string, u.maxRows+1)
	u.inserts = make([]string, u.maxRows+1)
	return u
}

// MaxRows is the largest number of rows of one SQL statement: at most 99
// (D1MaxParams), fewer for a table so wide that the text would exceed
// D1MaxStatementBytes; at least 1.
func (u *D1Upserts) MaxRows() int { return u.maxRows }

// Guard is D1RowGuard of the table: the guard statement of the guarded
// rows of one SQL(n) statement.
func (u *D1Upserts) Guard() string { return u.guard }

// SQL is D1Upsert for n rows (1 ≤ n ≤ MaxRows) in one statement: ?1 the
// partition, then ?2…?(n+1) each one row's JSON array as D1RowArgs
// builds it (its second argument). Rows are applied in order, as n
// D1Upsert statements would be: a later row with the same id replaces an
// earlier one; each replaces only on its own primary key, and a collision
// on a declared unique index fails the statement, and so the whole batch
// (SCH-10). SQL(1) is D1Upsert.
func (u *D1Upserts) SQL(n int) string { return u.text(u.texts, n, u.tail) }

// InsertSQL is SQL(n) without its ON CONFLICT clause: n rows that must
// all be new. A row whose key is taken — stored, or written earlier in
// the batch — fails the statement on the table's primary key, and so the
// whole batch (the guard of guarded creates, GW-1).
func (u *D1Upserts) InsertSQL(n int) string { return u.text(u.inserts, n, "") }

func (u *D1Upserts) text(texts []string, n int, tail string) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	if texts[n] == "" {
		var b strings.Builder
		b.WriteString(u.head)
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(u.tuple("?" + strconv.Itoa(i+2)))
		}
		b.WriteString(tail)
		texts[n] = b.String()
	}
	return texts[n]
}
