package d1http

import (
	"bytes"
	"context"
	"slices"
	"strings"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/d1http/internal/d1sql"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// staged is the state a Tx gave one row: its new content, or deleted.
type staged struct {
	row     driver.Row
	deleted bool
	// tomb is a deleted row's tombstone (ROW-5) when known: the version
	// of the row the Tx itself had staged; else the delete removed a
	// committed row (or none), whose version D1 still holds.
	tomb      int64
	tombKnown bool
}

// copyRow returns a deep copy of the staged row (the caller may mutate it).
func (s *staged) copyRow() driver.Row { return copyRow(s.row) }

func copyRow(r driver.Row) driver.Row {
	out := driver.Row{ID: r.ID, ServerVersion: r.ServerVersion,
		Scopes: make(driver.Scopes, len(r.Scopes)), Values: make(driver.Values, len(r.Values))}
	for k, v := range r.Scopes {
		out.Scopes[k] = v
	}
	for k, v := range r.Values {
		if b, ok := v.([]byte); ok && b != nil {
			v = append([]byte{}, b...)
		}
		out.Values[k] = v
	}
	return out
}

// overlay is what a Tx staged, laid over what D1 returns (TX-3).
type overlay struct {
	rows    map[string]map[string]*staged // table → id → state
	results map[[2]string]driver.PushResult
}

func newOverlay() overlay {
	return overlay{rows: map[string]map[string]*staged{}, results: map[[2]string]driver.PushResult{}}
}

func (o *overlay) row(table, id string) (*staged, bool) {
	s, ok := o.rows[table][id]
	return s, ok
}

func (o *overlay) put(table string, row driver.Row) {
	if o.rows[table] == nil {
		o.rows[table] = map[string]*staged{}
	}
	o.rows[table][row.ID] = &staged{row: copyRow(row)}
}

func (o *overlay) del(table, id string) {
	if o.rows[table] == nil {
		o.rows[table] = map[string]*staged{}
	}
	next := &staged{deleted: true}
	if prev, ok := o.rows[table][id]; ok {
		switch {
		case !prev.deleted:
			next.tomb, next.tombKnown = prev.row.ServerVersion, true
		default:
			next.tomb, next.tombKnown = prev.tomb, prev.tombKnown
		}
	}
	o.rows[table][id] = next
}

// merge lays the staged rows of q.Table over a committed page read with
// a limit raised by their number: committed rows the Tx staged are
// replaced by their staged state, staged rows with id > q.AfterRowID
// that match are added; ascending by id, at most q.Limit.
func (o *overlay) merge(x *sqlitesql.Table, committed []driver.Row, q driver.ScanQuery, match func(driver.Row) bool) []driver.Row {
	st := o.rows[q.Table]
	out := make([]driver.Row, 0, len(committed)+len(st))
	for _, r := range committed {
		if _, ok := st[r.ID]; !ok {
			out = append(out, r)
		}
	}
	for id, s := range st {
		if !s.deleted && id > q.AfterRowID && match(s.row) {
			out = append(out, s.copyRow())
		}
	}
	slices.SortFunc(out, func(a, b driver.Row) int { return strings.Compare(a.ID, b.ID) })
	if len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out
}

// matchesFilter reports whether a staged row matches a scan filter: for
// every key, a scope variable of the table whose value is listed (WIN-3).
func matchesFilter(x *sqlitesql.Table, r driver.Row, f driver.ScopeFilter) bool {
	vars := map[string]bool{}
	for _, s := range x.Def.Scopes {
		vars[s.Variable] = true
	}
	for k, vals := range f {
		if !vars[k] || !slices.Contains(vals, r.Scopes[k]) {
			return false
		}
	}
	return len(f) > 0
}

// checkUnique fails with CodeConstraintViolation when row would collide
// on a declared unique index with another row of the partition as the
// Tx sees it: a committed row the Tx has not restaged, or a staged row
// (SCH-10). A NULL in an index column never collides. A collision with a
// row committed after the Tx began is CodeWriteConflict: the Tx lost a
// race and cannot commit anyway (TX-9).
func (t *Tx) checkUnique(ctx context.Context, x *sqlitesql.Table, row driver.Row) error {
	for _, ix := range x.Def.Indexes {
		if !ix.Unique {
			continue
		}
		cols := make([]driver.Column, len(ix.Columns))
		vals := make([]any, len(ix.Columns))
		hasNull := false
		for i, name := range ix.Columns {
			cols[i], _ = x.Def.Column(name)
			vals[i] = row.Values[name]
			hasNull = hasNull || vals[i] == nil
		}
		if hasNull {
			continue
		}
		collide := func() error {
			return &driver.Error{Code: driver.CodeConstraintViolation, OpIndex: -1,
				Message: "unique index " + ix.Name + " of table " + x.Def.Name + " already holds these values", Rule: "SCH-10"}
		}
		staged := t.ov.rows[x.Def.Name]
		for id, s := range staged {
			if id != row.ID && !s.deleted && sameValues(cols, vals, s.row.Values) {
				return collide()
			}
		}
		j, err := d1sql.D1Values(cols, vals)
		if err != nil {
			return err
		}
		// The probe reads the stamp in the same snapshot: a collision with
		// a row committed after Begin is a lost race (TX-9), not SCH-10.
		if err := t.c.check(); err != nil {
			return err
		}
		res, err := t.c.cl.read(ctx, "d1http: check a unique index", st(d1sql.D1BeginRead, t.partition),
			st(d1sql.D1UniqueProbe(x, ix), t.partition, j, row.ID, len(staged)+1))
		if err != nil {
			return err
		}
		for _, r := range res[1].Results.Rows {
			id, _ := rawString(r[0])
			if _, restaged := staged[id]; restaged {
				continue
			}
			if sr := res[0].Results.Rows; len(sr) == 1 {
				if now, err := rawInt(sr[0][0]); err == nil && now != t.stamp {
					return driver.Errorf(driver.CodeWriteConflict,
						"d1http: another transaction of the partition committed first; the Tx cannot commit (TX-9)")
				}
			}
			return collide()
		}
	}
	return nil
}

// sameValues reports whether other holds vals in cols, as SQLite compares them.
func sameValues(cols []driver.Column, vals []any, other driver.Values) bool {
	for i, c := range cols {
		a, b := vals[i], other[c.Name]
		if a == nil || b == nil {
			return false
		}
		switch x := a.(type) {
		case []byte:
			y, ok := b.([]byte)
			if !ok || !bytes.Equal(x, y) {
				return false
			}
		default:
			if a != b {
				return false
			}
		}
	}
	return true
}
