package sqlite

import (
	"context"
	"database/sql"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/commitwindow"
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
	key, empty, err := commitwindow.Key(q, c.state.Table)
	if err != nil {
		return nil, err
	}
	vals := q.Filter[key]
	var list string
	if !empty && len(vals) > 1 {
		var err error
		if list, err = storelayout.JSONList(vals); err != nil {
			return nil, err
		}
	}
	w := commitwindow.New("sqlite", q, key)
	err = c.readTx(ctx, "sqlite: read commit window", func(r runner) error {
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
			return c.windowRead(ctx, r, w, sqlitesql.WindowSingle, []any{partition, q.Table, key, vals[0], q.AfterSeq, through})
		}
		for after := q.AfterSeq; after < through && !w.Done(); {
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
			if err := c.windowRead(ctx, r, w, sqlitesql.WindowList, args); err != nil {
				return err
			}
			after = upTo
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return w.Commits(), nil
}

// windowRead feeds w the candidates of one query (its rows ordered by
// seq, idx; whole commits only) until the stop rule is met.
func (c *Conn) windowRead(ctx context.Context, r runner, w *commitwindow.Grouper, query string, args []any) error {
	rows, err := c.query(ctx, r, query, args)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			seq, idx, rowVersion int64
			rowID, op, scopes    string
			vals                 sql.NullString
			meta                 driver.Commit
		)
		if err := rows.Scan(&seq, &idx, &rowID, &op, &scopes, &vals, &rowVersion,
			&meta.ClientID, &meta.ClientCommitID, &meta.ActorID, &meta.CreatedAtMs); err != nil {
			return c.mapErr(ctx, err, "sqlite: read commit window")
		}
		start, stop := w.Next(seq)
		if stop {
			return nil // WIN-4: the previous commit reached the limit
		}
		if start {
			w.Start(seq, meta)
		}
		if err := w.Change(rowID, op, scopes, []byte(vals.String), vals.Valid, rowVersion); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return c.mapErr(ctx, err, "sqlite: read commit window")
	}
	w.End()
	return nil
}
