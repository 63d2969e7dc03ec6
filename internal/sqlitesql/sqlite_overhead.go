package sqlitesql

import (
	"slices"
	"strconv"
	"strings"
	gosync "sync"
	"unicode/utf8"

	"github.com/syncstore/syncstore/driver"
)

// Multi-row statements of the push path (the driver's own cost per
// commit). A commit's rows, changes and change-scope entries are each
// written with one INSERT of several VALUES tuples, the arguments bound
// directly, instead of one statement per row or a JSON array expanded by
// json_each in the engine (InsertChanges, InsertChangeScopes, which D1's
// batches keep using). What is stored is byte for byte the same
// (ChangeArgs documents how).
//
// Each statement text is fixed for its number of tuples n, so a driver
// prepares each size once; a larger batch is split into statements of at
// most the maximum size. Partition and seq are bound once per statement
// (?1, ?2); every other value is a bound parameter.

// MaxChangeRows is the largest number of tuples of InsertChangeRows (7
// parameters each); MaxChangeScopeRows of InsertChangeScopeRows (4 each).
const (
	MaxChangeRows      = 64
	MaxChangeScopeRows = 128
)

// maxUpsertParams bounds the parameters of one UpsertRows statement, far
// below SQLite's limit of 32,766.
const maxUpsertParams = 2000

var (
	multiMu          gosync.Mutex
	changeRowsSQL    [MaxChangeRows + 1]string
	changeScopesSQL  [MaxChangeScopeRows + 1]string
	changeRowsHead   = `INSERT INTO _sync_changes (partition, seq, idx, tbl, row_id, op, scopes, vals, row_version) VALUES `
	changeScopesHead = `INSERT INTO _sync_change_scopes (partition, tbl, variable, value, seq, idx) VALUES `
)

// tuples returns n tuples "(lead?k, ?k+1, …)" of width numbered
// parameters each, numbered from first; lead (e.g. "?1, ?2, ") opens each
// tuple.
func tuples(n, width, first int, lead string) string {
	var b strings.Builder
	k := first
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(" + lead)
		for j := 0; j < width; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("?" + strconv.Itoa(k))
			k++
		}
		b.WriteString(")")
	}
	return b.String()
}

// InsertChangeRows is the INSERT of n changes (1 ≤ n ≤ MaxChangeRows) of
// commit ?2 of partition ?1: then, per change, 7 parameters in the order
// of ChangeArgs.Changes (idx, table, row id, op, scopes JSON object,
// values text or NULL, row version). It stores what InsertChanges stores.
func InsertChangeRows(n int) string {
	multiMu.Lock()
	defer multiMu.Unlock()
	if changeRowsSQL[n] == "" {
		changeRowsSQL[n] = changeRowsHead + tuples(n, 7, 3, "?1, ?2, ")
	}
	return changeRowsSQL[n]
}

// InsertChangeScopeRows is the INSERT of n change-scope entries (1 ≤ n ≤
// MaxChangeScopeRows) of commit ?2 of partition ?1: then, per entry, 4
// parameters in the order of ChangeArgs.Scopes (table, variable, value,
// idx). It stores what InsertChangeScopes stores.
func InsertChangeScopeRows(n int) string {
	multiMu.Lock()
	defer multiMu.Unlock()
	if changeScopesSQL[n] == "" {
		var b strings.Builder
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			k := 3 + 4*i
			b.WriteString("(?1, ?" + strconv.Itoa(k) + ", ?" + strconv.Itoa(k+1) + ", ?" + strconv.Itoa(k+2) +
				", ?2, ?" + strconv.Itoa(k+3) + ")")
		}
		changeScopesSQL[n] = changeScopesHead + b.String()
	}
	return changeScopesSQL[n]
}

// ChangeArgs are the arguments of one commit's changes for
// InsertChangeRows and InsertChangeScopeRows (without ?1 and ?2).
type ChangeArgs struct {
	// Changes holds 7 values per change, in commit order: idx (int64,
	// its position), table, row id, op, scopes (the JSON object of its
	// scopes, keys sorted, as ChangesJSON writes it), values
	// (driver.EncodeValues text; NULL for a delete), row version (0 for a
	// delete) (WIN-6).
	Changes []any
	// Scopes holds 4 values per (change, scope variable), changes in
	// commit order and each change's variables sorted: table, variable,
	// value, idx.
	Scopes []any
}

// NChanges is the number of changes (tuples of Changes).
func (a ChangeArgs) NChanges() int { return len(a.Changes) / 7 }

// NScopes is the number of change-scope entries (see NChanges).
func (a ChangeArgs) NScopes() int { return len(a.Scopes) / 4 }

// NewChangeArgs encodes the changes of one commit. It fails with
// CodeInvalidValue for a value driver.EncodeValues rejects, before
// anything is written.
//
// What is stored equals what InsertChanges/InsertChangeScopes store from
// ChangesJSON: the scopes object is the same text (SQLite's "->" returns
// a minified object's text unchanged), values the EncodeValues text, and
// each scope variable and value the string itself — as json_each returns
// it, so a string with invalid UTF-8 is stored with each bad byte
// replaced by U+FFFD, as the JSON text carried it (sync rejects such
// strings before a driver sees them, V-3).
func NewChangeArgs(changes []driver.Change) (ChangeArgs, error) {
	nScopes := 0
	for _, ch := range changes {
		nScopes += len(ch.Scopes)
	}
	a := ChangeArgs{Changes: make([]any, 0, 7*len(changes)), Scopes: make([]any, 0, 4*nScopes)}
	var keys []string
	buf := make([]byte, 0, 512)
	for i, ch := range changes {
		idx := int64(i)
		keys = keys[:0]
		for k := range ch.Scopes {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		buf = append(buf[:0], '{')
		for j, k := range keys {
			if j > 0 {
				buf = append(buf, ',')
			}
			buf = driver.AppendJSONString(buf, k)
			buf = append(buf, ':')
			buf = driver.AppendJSONString(buf, ch.Scopes[k])
			a.Scopes = append(a.Scopes, ch.Table, asJSONText(k), asJSONText(ch.Scopes[k]), idx)
		}
		buf = append(buf, '}')
		scopes := string(buf)
		var vals any
		var version int64
		if ch.Op == driver.OpUpsert {
			b, err := driver.AppendValues(buf[:0], ch.Values)
			if err != nil {
				return ChangeArgs{}, err
			}
			buf = b
			vals, version = string(b), ch.RowVersion
		}
		a.Changes = append(a.Changes, idx, ch.Table, ch.RowID, string(ch.Op), scopes, vals, version)
	}
	return a, nil
}

// asJSONText returns s as it reads back from JSON text that
// driver.AppendJSONString wrote: s itself when it is valid UTF-8,
// otherwise with each invalid byte replaced by U+FFFD.
func asJSONText(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// MaxUpsertRows is the largest number of rows of one UpsertRows statement
// of the table: at most 64, fewer for a table so wide that 64 rows would
// bind more than 2,000 parameters.
func (x *Table) MaxUpsertRows() int {
	return max(1, min(64, maxUpsertParams/(1+len(x.Def.Columns))))
}

// UpsertRows is Upsert for n rows (1 ≤ n ≤ MaxUpsertRows) in one
// statement: ?1 the partition, then per row its UpsertRowArgs (row
// version, each column in order). Rows are applied in order, as n Upsert
// statements would be: a later row with the same id replaces an earlier
// one. A collision on a declared unique index fails the whole statement
// (nothing of it is written, SCH-10), without telling which row collided.
func (x *Table) UpsertRows(n int) string {
	x.upsertMu.Lock()
	defer x.upsertMu.Unlock()
	if x.upsertRows[n] == "" {
		x.upsertRows[n] = x.upsertHead + tuples(n, 1+len(x.Def.Columns), 2, "?1, ") + x.upsertTail
	}
	return x.upsertRows[n]
}

// AppendUpsertRowArgs appends the arguments of one row of UpsertRows to
// dst: its version, then each column's value converted by ToSQL. A value
// of the wrong Go type fails with CodeInvalidValue naming the column
// (V-3, V-10); dst is then returned unextended.
func (x *Table) AppendUpsertRowArgs(dst []any, row driver.Row) ([]any, error) {
	start := len(dst)
	dst = append(dst, row.ServerVersion)
	for _, c := range x.Def.Columns {
		v, err := ToSQL(c.Name, c.Type, row.Values[c.Name])
		if err != nil {
			return dst[:start], err
		}
		dst = append(dst, v)
	}
	return dst, nil
}

// Batchable reports whether the table's upserts may be staged and written
// later as UpsertRows: only when no declared index is unique, so an upsert
// of a valid row cannot fail on a constraint (SCH-10 must report a
// collision from the UpsertRow that caused it).
func (x *Table) Batchable() bool {
	for _, ix := range x.Def.Indexes {
		if ix.Unique {
			return false
		}
	}
	return true
}

// HasNullInRequired reports whether row has NULL (or no value) for a
// column that is not nullable: such a row is written on its own, so the
// engine's NOT NULL error comes from the UpsertRow that caused it.
func (x *Table) HasNullInRequired(row driver.Row) bool {
	for _, c := range x.Def.Columns {
		if !c.Nullable && row.Values[c.Name] == nil {
			return true
		}
	}
	return false
}
