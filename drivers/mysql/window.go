package mysql

import (
	"context"
	"math"
	"strings"

	"github.com/syncstore/syncstore/driver"
	d "github.com/syncstore/syncstore/internal/sqlitedialect"
)

// windowCols are the columns every window candidate query returns.
const windowCols = `cs.seq, cs.idx, ch.row_id, ch.op, ch.scopes, ch.vals, ch.row_version,
	c.client_id, c.client_commit_id, c.actor_id, c.created_at_ms`

// windowRange is the candidate range of one scope value after a (seq,
// idx) cursor: p, tbl, variable, value, lastSeq, throughSeq, lastSeq,
// lastIdx. Served by _sync_change_scopes' primary key in (seq, idx)
// order.
const windowRange = `cs.p = ? AND cs.tbl = ? AND cs.variable = ? AND cs.value = ? AND cs.seq >= ? AND cs.seq <= ?
	AND (cs.seq > ? OR cs.idx > ?)`

// windowJoin joins candidates to their change and commit by primary key,
// in that order (STRAIGHT_JOIN pins it: candidates come only from the
// change-scope index, WIN-7).
const windowJoin = `
STRAIGHT_JOIN _sync_changes AS ch ON ch.p = cs.p AND ch.seq = cs.seq AND ch.idx = cs.idx
STRAIGHT_JOIN _sync_commits AS c ON c.p = cs.p AND c.seq = cs.seq`

// windowSingle: the candidates of one value, windowRange's arguments plus
// the round size.
const windowSingle = `SELECT ` + windowCols + `
FROM _sync_change_scopes AS cs` + windowJoin + `
WHERE ` + windowRange + `
ORDER BY cs.seq, cs.idx LIMIT ?`

// windowList returns the candidate query of n values: a UNION ALL of each
// value's range, each cut at the round size, merged and cut again.
// Arguments: windowRange's and the round size per value, then the round
// size.
func windowList(n int) string {
	one := `(SELECT cs.p, cs.seq, cs.idx FROM _sync_change_scopes AS cs WHERE ` + windowRange + ` ORDER BY cs.seq, cs.idx LIMIT ?)`
	parts := make([]string, n)
	for i := range parts {
		parts[i] = one
	}
	return `SELECT ` + windowCols + `
FROM (` + strings.Join(parts, " UNION ALL ") + `) AS cs` + windowJoin + `
ORDER BY cs.seq, cs.idx LIMIT ?`
}

// windowJSON is the candidate query of a long value list bound as one
// JSON array: each value is a range read of the change-scope index from
// the cursor; the candidates are merged by a sort. Arguments: the list,
// then windowRange's without the value, then the round size.
func (c *Conn) windowJSON() string {
	return `SELECT ` + windowCols + `
FROM ` + c.jsonValues() + `
STRAIGHT_JOIN _sync_change_scopes AS cs ON cs.p = ? AND cs.tbl = ? AND cs.variable = ? AND cs.value = j.` + jsonValueColumn + `
	AND cs.seq >= ? AND cs.seq <= ? AND (cs.seq > ? OR cs.idx > ?)` + windowJoin + `
ORDER BY cs.seq, cs.idx LIMIT ?`
}

// roundHeadroom is added to the number of changes still wanted to size a
// round: a few more candidates finish the last commit or replace those
// the other filter keys reject.
const roundHeadroom = 64

// ReadCommitWindow returns the commits selected by q, oldest first
// (WIN-1…WIN-7). Candidates come only from the change-scope index, for
// the filter key with the fewest values (WIN-7), in rounds that resume
// after the last (seq, idx) read: one value walks its index range in
// order; several values walk each range, each cut at the round size, and
// merge them, so a round costs O(values × round) whatever the size of the
// log. The other keys are checked against each candidate's stored scopes
// (WIN-3). A commit is appended whole, with only its matching changes in
// their original order (WIN-2), and reading stops after the commit that
// brings the matched changes to ≥ LimitChanges (WIN-4). Deletes carry no
// Values and RowVersion 0 (WIN-6). Errors: CodeUnknownTable.
func (c *Conn) ReadCommitWindow(ctx context.Context, partition string, q driver.WindowQuery) ([]driver.Commit, error) {
	if _, err := c.table(q.Table); err != nil {
		return nil, err
	}
	if q.LimitChanges < 1 {
		return nil, driver.Errorf(driver.CodeInvalidLimit, "window limit must be 1…10000 (V-5)")
	}
	key, empty, ok := d.PickKey(q.Filter)
	if !ok {
		return nil, driver.Errorf(driver.CodeScanRequiresScope, "window read requires a scope filter (V-6)")
	}
	if empty || q.ThroughSeq <= q.AfterSeq {
		return nil, nil
	}
	w := &windowReader{c: c, q: q, match: d.NewMatcher(q.Filter, key)}
	vals := dedupe(q.Filter[key])
	lastSeq, lastIdx := q.AfterSeq, int64(math.MaxInt32)
	var list string
	if len(vals) > maxInlineValues {
		var err error
		if list, err = d.JSONList(vals); err != nil {
			return nil, err
		}
	}
	for {
		size := int64(max(q.LimitChanges-w.matched, 0) + roundHeadroom)
		var query string
		var args []any
		if len(vals) == 1 {
			query = windowSingle
			args = []any{partition, q.Table, key, vals[0], lastSeq, q.ThroughSeq, lastSeq, lastIdx, size}
		} else if len(vals) > maxInlineValues {
			query = c.windowJSON()
			args = []any{list, partition, q.Table, key, lastSeq, q.ThroughSeq, lastSeq, lastIdx, size}
		} else {
			query = windowList(len(vals))
			for _, v := range vals {
				args = append(args, partition, q.Table, key, v, lastSeq, q.ThroughSeq, lastSeq, lastIdx, size)
			}
			args = append(args, size)
		}
		n, err := w.read(ctx, query, args, &lastSeq, &lastIdx)
		if err != nil {
			return nil, err
		}
		if w.done || n < size {
			w.flush()
			return w.out, nil
		}
	}
}

// windowReader groups candidate changes into commits and applies the stop
// rule across rounds.
type windowReader struct {
	c       *Conn
	q       driver.WindowQuery
	match   d.Matcher
	out     []driver.Commit
	cur     *driver.Commit
	matched int
	done    bool // the stop rule was met
}

func (w *windowReader) flush() {
	if w.cur != nil && len(w.cur.Changes) > 0 {
		w.out = append(w.out, *w.cur)
	}
	w.cur = nil
}

// read consumes one round (rows ordered by seq, idx), advancing the
// cursor, and returns how many rows it read.
func (w *windowReader) read(ctx context.Context, query string, args []any, lastSeq, lastIdx *int64) (int64, error) {
	rows, err := w.c.query(ctx, nil, query, args, "mysql: read commit window")
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var n int64
	for rows.Next() {
		n++
		var (
			seq, idx, rowVersion int64
			rowID, op            string
			scopes, vals         []byte
			meta                 driver.Commit
		)
		if err := rows.Scan(&seq, &idx, &rowID, &op, &scopes, &vals, &rowVersion,
			&meta.ClientID, &meta.ClientCommitID, &meta.ActorID, &meta.CreatedAtMs); err != nil {
			return 0, w.c.mapErr(ctx, err, "mysql: read commit window")
		}
		*lastSeq, *lastIdx = seq, idx
		if w.cur == nil || w.cur.Seq != seq {
			w.flush()
			if w.matched >= w.q.LimitChanges {
				w.done = true // WIN-4: the previous commit reached the limit
				return n, nil
			}
			meta.Seq = seq
			w.cur = &meta
		}
		sc, err := d.DecodeScopes(string(scopes))
		if err != nil {
			return 0, err
		}
		if !w.match.Match(sc) {
			continue
		}
		ch := driver.Change{Table: w.q.Table, RowID: rowID, Op: driver.Op(op), Scopes: sc}
		if ch.Op == driver.OpUpsert {
			ch.RowVersion = rowVersion
			if vals != nil {
				if ch.Values, err = driver.DecodeValues(vals); err != nil {
					return 0, driver.Wrap(driver.CodeInternal, err, "mysql: decode stored change values")
				}
			}
		}
		w.cur.Changes = append(w.cur.Changes, ch)
		w.matched++
	}
	if err := rows.Err(); err != nil {
		return 0, w.c.mapErr(ctx, err, "mysql: read commit window")
	}
	return n, nil
}
