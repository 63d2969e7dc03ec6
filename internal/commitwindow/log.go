package commitwindow

import (
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/storelayout"
)

// Log is the engine-free half of ReadCommits every driver shares: it
// groups the changes a driver reads from its changes table, in (seq, idx)
// order, into whole commits — every change, of every table (LOG-1) — and
// applies the stop rule: reading stops after the commit that brings the
// changes to ≥ LimitChanges, a commit never split (LOG-2). Deletes carry no
// Values and RowVersion 0 (WIN-6). The reads and the cursor checks stay in
// the drivers (LOG-3). Its methods are Grouper's, with the change's table
// given per change.
type Log struct {
	engine string
	limit  int
	out    []driver.Commit
	cur    *driver.Commit
	n      int
	done   bool
}

// NewLog returns the Log of q; engine prefixes its errors ("sqlite").
func NewLog(engine string, q driver.CommitsQuery) *Log {
	return &Log{engine: engine, limit: q.LimitChanges}
}

// Next takes the next change, of commit seq. When seq starts a commit it
// ends the previous one and reports start: the caller then calls Start
// with seq's metadata before Change. stop: the previous commit brought
// the changes to LimitChanges (LOG-2); the read is done and the caller
// reads no further change.
func (g *Log) Next(seq int64) (start, stop bool) {
	if g.cur != nil && g.cur.Seq == seq {
		return false, false
	}
	g.flush()
	if g.n >= g.limit {
		g.done = true
		return false, true
	}
	return true, false
}

// Start begins commit seq with the metadata of meta (its Seq is set to
// seq).
func (g *Log) Start(seq int64, meta driver.Commit) {
	meta.Seq, meta.Changes = seq, nil
	g.cur = &meta
}

// Change adds a change of table to the commit begun last. An upsert
// carries version and, when hasValues, the stored values decoded; a delete
// neither (WIN-6). Errors: malformed scopes or values (CodeInternal).
func (g *Log) Change(table, rowID, op, scopes string, values []byte, hasValues bool, version int64) error {
	sc, err := storelayout.DecodeScopes(scopes)
	if err != nil {
		return err
	}
	ch := driver.Change{Table: table, RowID: rowID, Op: driver.Op(op), Scopes: sc}
	if ch.Op == driver.OpUpsert {
		ch.RowVersion = version
		if hasValues {
			if ch.Values, err = driver.DecodeValues(values); err != nil {
				return driver.Wrap(driver.CodeInternal, err, "%s: decode stored change values", g.engine)
			}
		}
	}
	g.cur.Changes = append(g.cur.Changes, ch)
	g.n++
	return nil
}

// End ends a read whose changes end with a whole commit: the commit being
// grouped is appended, and the read is done when the changes reached
// LimitChanges (LOG-2).
func (g *Log) End() {
	g.flush()
	if g.n >= g.limit {
		g.done = true
	}
}

// Flush appends the commit being grouped without applying the stop rule:
// a read that stops between two changes of one commit calls it at its
// very end only.
func (g *Log) Flush() { g.flush() }

func (g *Log) flush() {
	if g.cur != nil && len(g.cur.Changes) > 0 {
		g.out = append(g.out, *g.cur)
	}
	g.cur = nil
}

// Done reports whether the stop rule was met (LOG-2).
func (g *Log) Done() bool { return g.done }

// Count is the number of changes grouped so far.
func (g *Log) Count() int { return g.n }

// Commits returns the commits grouped, oldest first (LOG-1).
func (g *Log) Commits() []driver.Commit { return g.out }
