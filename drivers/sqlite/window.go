package sqlite

import (
	"context"
	"database/sql"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/sqlitesql"
	"github.com/syncstore/syncstore/internal/storelayout"
)

// ReadCommitWindow returns the commits selected by q, oldest first
// (WIN-1…WIN-7), in one read transaction: its first statement reads the
// partition's horizon and max seq, so the cursor is checked in the
// snapshot the commits come from (HZ-4: below the horizon →
// CodeCursorExpired; WIN-8: beyond the head → CodeCursorAhead; no commit
// is returned with either), and a prune that commits meanwhile is not
// seen by any statement of the read. Candidates come only from the
// change-scope index, for the filter key with the fewest values (WIN-7):
//
//   - one value walks the index in (seq, idx) order, with no sort, and
//     stops reading as soon as the stop rule is met;
//   - a list of values (a JSON array, any length: V-6) reads in rounds:
//     WindowBound finds a seq bound such that each value has at most
//     about LimitChanges candidates below it, and WindowList sorts only
//     those; the next round starts after the bound. A round's cost never
//     depends on the size of the log.
//
// The other keys are checked against each candidate's stored scopes
// (WIN-3). A commit is appended whole, with only its matching changes in
// their original order (WIN-2), and reading stops after the commit that
// brings the matched changes to ≥ LimitChanges (WIN-4). Deletes carry no
// Values and RowVersion 0 (WIN-6). Errors: CodeUnknownTable,
// CodeCursorExpired, CodeCursorAhead.
func (c *Conn) ReadCommitWindow(ctx context.Context, partition string, q driver.WindowQuery) ([]driver.Commit, error) {
	if _, err := c.table(q.Table); err != nil {
		return nil, err
	}
	key, empty, ok := storelayout.PickKey(q.Filter)
	if !ok {
		return nil, driver.Errorf(driver.CodeScanRequiresScope, "window read requires a scope filter (V-6)")
	}
	vals := q.Filter[key]
	var list string
	if !empty && len(vals) > 1 {
		var err error
		if list, err = storelayout.JSONList(vals); err != nil {
			return nil, err
		}
	}
	w := &windowReader{c: c, q: q, match: storelayout.NewMatcher(q.Filter, key)}
	err := c.readTx(ctx, "sqlite: read commit window", func(r runner) error {
		maxSeq, horizon, err := c.partitionSeqs(ctx, r, partition)
		if err != nil {
			return err
		}
		if err := driver.CheckWindowCursor(q.AfterSeq, horizon, maxSeq); err != nil {
			return err
		}
		through := min(q.ThroughSeq, maxSeq)
		if empty || through <= q.AfterSeq {
			return nil
		}
		if len(vals) == 1 {
			return w.read(ctx, r, sqlitesql.WindowSingle, []any{partition, q.Table, key, vals[0], q.AfterSeq, through})
		}
		for after := q.AfterSeq; after < through && !w.done; {
			args := []any{partition, q.Table, key, list, after, through}
			var bound sql.NullInt64
			if err := c.queryRow(ctx, r, sqlitesql.WindowBound, append(args, q.LimitChanges), &bound); err != nil {
				return err
			}
			upTo := through
			if bound.Valid && bound.Int64 < upTo {
				upTo = bound.Int64
			}
			args[5] = upTo
			if err := w.read(ctx, r, sqlitesql.WindowList, args); err != nil {
				return err
			}
			after = upTo
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return w.out, nil
}

// windowReader groups candidate changes into commits and applies the stop
// rule across one or more reads of consecutive seq ranges.
type windowReader struct {
	c       *Conn
	q       driver.WindowQuery
	match   storelayout.Matcher
	out     []driver.Commit
	matched int
	done    bool // the stop rule was met
}

// read appends the commits of one candidate query (its rows ordered by
// seq, idx; whole commits only) until the stop rule is met.
func (w *windowReader) read(ctx context.Context, r runner, query string, args []any) error {
	rows, err := w.c.query(ctx, r, query, args)
	if err != nil {
		return err
	}
	defer rows.Close()
	var cur *driver.Commit
	flush := func() {
		if cur != nil && len(cur.Changes) > 0 {
			w.out = append(w.out, *cur)
		}
		cur = nil
	}
	for rows.Next() {
		var (
			seq, idx, rowVersion int64
			rowID, op, scopes    string
			vals                 sql.NullString
			meta                 driver.Commit
		)
		if err := rows.Scan(&seq, &idx, &rowID, &op, &scopes, &vals, &rowVersion,
			&meta.ClientID, &meta.ClientCommitID, &meta.ActorID, &meta.CreatedAtMs); err != nil {
			return w.c.mapErr(ctx, err, "sqlite: read commit window")
		}
		if cur == nil || cur.Seq != seq {
			flush()
			if w.matched >= w.q.LimitChanges {
				w.done = true // WIN-4: the previous commit reached the limit
				return nil
			}
			meta.Seq = seq
			cur = &meta
		}
		sc, err := storelayout.DecodeScopes(scopes)
		if err != nil {
			return err
		}
		if !w.match.Match(sc) {
			continue
		}
		ch := driver.Change{Table: w.q.Table, RowID: rowID, Op: driver.Op(op), Scopes: sc}
		if ch.Op == driver.OpUpsert {
			ch.RowVersion = rowVersion
			if vals.Valid {
				if ch.Values, err = driver.DecodeValues([]byte(vals.String)); err != nil {
					return driver.Wrap(driver.CodeInternal, err, "sqlite: decode stored change values")
				}
			}
		}
		cur.Changes = append(cur.Changes, ch)
		w.matched++
	}
	if err := rows.Err(); err != nil {
		return w.c.mapErr(ctx, err, "sqlite: read commit window")
	}
	flush()
	if w.matched >= w.q.LimitChanges {
		w.done = true
	}
	return nil
}
