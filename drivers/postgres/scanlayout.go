package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/schemaplan"
	"github.com/syncstore/syncstore/internal/storelayout"
)

// A scope's scan page (SCAN-1…SCAN-5) is served from the index alone.
//
// The rows of an application table lie in the heap in the order they were
// written (commit order), so a page of one scope value's rows through the
// plain scope index (partition, column, id) reads one heap page for about
// every four rows when the scope has twenty values: about 240 scattered
// heap pages for a 1,000-row page at 5,000,000 rows, from the device
// once the table outgrows shared_buffers. Each scope column therefore has
// a pair of partial indexes beside its scope index:
//
//   - the cover, (partition, column, id) INCLUDE (the version and every
//     other column), over the rows whose values fit in a B-tree entry (the
//     inline predicate: their variable-width columns hold at most
//     inlineBudget bytes in all). A page of those rows is an index-only
//     scan: the entries of one scope value lie together, so a 1,000-row
//     page reads about 15 index pages.
//   - the rest, (partition, column, id), over the rows that do not fit
//     (PUSH-17 stores rows of megabytes, which no B-tree entry holds; an
//     entry is at most about 2,700 bytes).
//
// A scan reads both, each in id order up to the limit (a Merge Append of
// two index ranges), so its cost stays O(limit) whatever the table's size
// and whichever rows are large. An index-only scan skips the heap for the
// pages the visibility map marks all-visible (set by VACUUM: autovacuum
// visits a table after every 1,000 + 20% inserts or changes); on a page
// not marked, it reads the heap as a plain index scan does ("Heap
// Fetches"), so a store never vacuumed reads what it read before the cover,
// plus the cover's own pages.
//
// The pair's names carry a hash of the cover's definition (its columns and
// predicate), so a table whose columns changed (SCH-6) never uses a pair
// built for other columns: migrationSQL replaces it, and a scope whose
// pair is missing or not valid (a table created by an earlier release, an
// interrupted CREATE INDEX CONCURRENTLY) is scanned through its scope
// index alone, as before (coverSQL gives the statements that add a pair to
// a live store without blocking writes: Conn.CreateScanIndexes). A table with more columns than an
// index may include (INDEX_MAX_KEYS = 32) or whose fixed-width columns
// leave too little room for values has no pair.

// btreeEntryBudget is what the inline predicate allows one cover entry:
// below PostgreSQL's largest B-tree entry (BTMaxItemSize, 2,704 bytes for
// 8 KiB pages), with room for the entry's header and null bitmap.
const btreeEntryBudget = 2600

// minInlineBudget: a table whose fixed overhead leaves less than this for
// its values has no cover (few of its rows would fit).
const minInlineBudget = 512

// maxIndexColumns is PostgreSQL's INDEX_MAX_KEYS: key and included
// columns of one index together.
const maxIndexColumns = 32

// cover is the index pair of one scope column of one table.
type cover struct {
	inline    string // predicate: the row's entry fits in the cover
	index     string // name of the cover: (partition, column, id) INCLUDE (…) WHERE inline
	rest      string // name of the rest: (partition, column, id) WHERE NOT inline
	createSQL [2]string
}

// isVariable reports whether a column type is stored with a length
// (text, json as text, bytea).
func isVariable(t driver.ColumnType) bool {
	switch t {
	case driver.TypeInteger, driver.TypeFloat, driver.TypeBoolean:
		return false
	}
	return true
}

// coverOf returns the pair of scope column col of table t, false when the
// table cannot have one (too many columns, too little room).
func coverOf(t driver.Table, col string) (cover, bool) {
	var include []string
	for _, c := range t.Columns {
		if c.Name != t.PrimaryKey && c.Name != col {
			include = append(include, quote(c.Name))
		}
	}
	keys := 3
	if col == t.PrimaryKey {
		keys = 2 // (partition, id, id) is written (partition, id)
	}
	if keys+1+len(include) > maxIndexColumns {
		return cover{}, false
	}
	// Room for values: the budget less the partition (V-1: ≤ 255 bytes)
	// and each column's worst-case header and alignment (8 bytes of
	// padding and datum for a fixed-width value; a 4-byte length and 3
	// bytes of padding for a variable one).
	room := btreeEntryBudget - 255 - 8
	var lens []string
	for _, c := range t.Columns {
		if isVariable(c.Type) {
			room -= 8
			lens = append(lens, "coalesce(octet_length("+quote(c.Name)+"), 0)")
		} else {
			room -= 16
		}
	}
	if room < minInlineBudget {
		return cover{}, false
	}
	inline := "(0)"
	if len(lens) > 0 {
		inline = "(" + strings.Join(lens, " + ") + ")"
	}
	inline += " <= " + strconv.Itoa(room)
	keyCols := quote(partitionColumn) + ", " + quote(col)
	if keys == 3 {
		keyCols += ", " + quote(t.PrimaryKey)
	}
	incl := quote(versionColumn)
	if len(include) > 0 {
		incl += ", " + strings.Join(include, ", ")
	}
	body := " ON " + quote(t.Name) + " (" + keyCols + ") INCLUDE (" + incl + ") WHERE " + inline
	sum := sha256.Sum256([]byte(body))
	h := hex.EncodeToString(sum[:4])
	cv := cover{
		inline: inline,
		index:  pgName("_sync_sc_" + strconv.Itoa(len(t.Name)) + "_" + t.Name + "_" + col + "_" + h),
		rest:   pgName("_sync_sr_" + strconv.Itoa(len(t.Name)) + "_" + t.Name + "_" + col + "_" + h),
	}
	cv.createSQL = [2]string{
		quote(cv.index) + body,
		quote(cv.rest) + " ON " + quote(t.Name) + " (" + keyCols + ") WHERE NOT (" + inline + ")",
	}
	return cv, true
}

// coverSQL returns the statements that create the scope columns' index
// pairs of t (each "CREATE INDEX " + concurrently + …), distinct columns
// in scope order.
func coverSQL(t driver.Table, concurrently string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range t.Scopes {
		if seen[s.Column] {
			continue
		}
		seen[s.Column] = true
		if cv, ok := coverOf(t, s.Column); ok {
			for _, q := range cv.createSQL {
				out = append(out, "CREATE INDEX "+concurrently+q)
			}
		}
	}
	return out
}

// coverNames returns the names of every index pair of schema's tables.
func coverNames(tables []driver.Table) []string {
	var out []string
	for _, t := range tables {
		for _, s := range t.Scopes {
			if cv, ok := coverOf(t, s.Column); ok {
				out = append(out, cv.index, cv.rest)
			}
		}
	}
	return out
}

// tableOfLayout is the driver.Table a stored layout table describes (its
// columns, key and scopes: what a cover depends on).
func tableOfLayout(lt storelayout.LayoutTable) driver.Table {
	t := driver.Table{Name: lt.Name, PrimaryKey: lt.PrimaryKey}
	for _, c := range lt.Columns {
		t.Columns = append(t.Columns, driver.Column{Name: c.Name, Type: c.Type, Nullable: c.Nullable})
	}
	for _, s := range lt.Scopes {
		t.Scopes = append(t.Scopes, driver.Scope{Variable: s.Variable, Column: s.Column})
	}
	return t
}

// sqlValidIndexes returns which of the index names in $1 (text[]) exist
// in the store's schema and are valid (a CREATE INDEX CONCURRENTLY that
// did not finish leaves an index no plan may use).
const sqlValidIndexes = `SELECT coalesce(array_agg(c.relname::text), '{}') FROM pg_class AS c
JOIN pg_index AS i ON i.indexrelid = c.oid JOIN pg_namespace AS ns ON ns.oid = c.relnamespace
WHERE c.relname = ANY($1::text[]) AND i.indisvalid AND ns.nspname = current_schema()`

// CreateScanIndexes adds the missing index pairs of the ensured schema's
// tables (scanlayout.go) to a live store: a store whose tables were
// created by a release without them, which scans through its scope indexes
// alone until then. Each index is built with CREATE INDEX CONCURRENTLY,
// which never blocks the table's reads or writes (it waits for the
// transactions already running and reads the table twice: minutes for
// millions of rows), on a connection of the pool in autocommit — one
// statement at a time, so PgBouncer in transaction mode serves it too. An
// invalid index of the same name (a build that was cancelled or failed)
// is dropped first (DROP INDEX CONCURRENTLY). When it returns nil, this
// Conn's scans use the pairs; other Conns on the store use them from
// their next EnsureSchema. Two calls at once are safe: the later one
// finds the index built, or waits for the first build and builds again.
// It fails with CodeUnavailable on a standby (the primary's pairs reach it
// by replay), CodeUnknownTable before EnsureSchema, and with the engine's
// mapped error otherwise (a valid index is never dropped).
func (c *Conn) CreateScanIndexes(ctx context.Context) error {
	if err := c.check(); err != nil {
		return err
	}
	if c.replica {
		return driver.Errorf(driver.CodeUnavailable, "postgres: create the scan index pairs on the primary")
	}
	e := c.state.Load()
	if e == nil {
		return driver.Errorf(driver.CodeUnknownTable, "postgres: no schema ensured yet (SCH-8)")
	}
	var schema driver.Schema
	for _, x := range e.Tables {
		schema.Tables = append(schema.Tables, x.def)
	}
	sort.Slice(schema.Tables, func(i, j int) bool { return schema.Tables[i].Name < schema.Tables[j].Name })
	valid, err := c.validIndexes(ctx, schema.Tables)
	if err != nil {
		return err
	}
	for _, t := range schema.Tables {
		for _, s := range t.Scopes {
			cv, ok := coverOf(t, s.Column)
			if !ok {
				continue
			}
			for i, name := range []string{cv.index, cv.rest} {
				if valid[name] {
					continue
				}
				// An invalid leftover of the same name would make IF NOT
				// EXISTS a no-op; names are derived, never input.
				for _, q := range []string{"DROP INDEX CONCURRENTLY IF EXISTS " + quote(name), "CREATE INDEX CONCURRENTLY IF NOT EXISTS " + cv.createSQL[i]} {
					if _, err := c.pool.Exec(ctx, q, pgx.QueryExecModeSimpleProtocol); err != nil {
						return c.mapErr(ctx, err, "postgres: create the scan index pairs")
					}
				}
				valid[name] = true
			}
		}
	}
	if valid, err = c.validIndexes(ctx, schema.Tables); err != nil {
		return err
	}
	c.state.Store(schemaplan.NewEnsured(schema, e.Layout, func(t driver.Table) *table { return newTableWith(t, valid) }, struct{}{}))
	return nil
}

// validIndexes returns which index pair names of tables are valid in the store.
func (c *Conn) validIndexes(ctx context.Context, tables []driver.Table) (map[string]bool, error) {
	var names []string
	if err := c.queryRow(ctx, c.pool, sqlValidIndexes, []any{coverNames(tables)}, &names); err != nil {
		return nil, c.mapErr(ctx, err, "postgres: read the scan index pairs")
	}
	have := make(map[string]bool, len(names))
	for _, n := range names {
		have[n] = true
	}
	return have, nil
}
