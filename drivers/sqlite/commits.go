package sqlite

import (
	"context"
	"database/sql"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/commitwindow"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// ReadCommits returns the whole commits selected by q, oldest first
// (LOG-1…LOG-4), in one read transaction: its first statement reads the
// partition's horizon and max seq, so the cursor is checked in the
// snapshot the commits come from (LOG-3: below the horizon →
// CodeCursorExpired, beyond the head → CodeCursorAhead, no commit
// returned), and sqlitesql.ReadCommits then walks the changes' primary key
// from q.AfterSeq through the commit that reaches q.LimitChanges (LOG-2).
func (c *Conn) ReadCommits(ctx context.Context, partition string, q driver.CommitsQuery) ([]driver.Commit, error) {
	const what = "sqlite: read commits"
	g := commitwindow.NewLog("sqlite", q)
	err := c.readTx(ctx, what, func(r runner) error {
		maxSeq, horizon, err := c.partitionSeqs(ctx, r, partition)
		if err != nil {
			return err
		}
		if err := driver.CheckWindowCursor(q.AfterSeq, horizon, maxSeq); err != nil {
			return err
		}
		through := min(q.ThroughSeq, maxSeq)
		if through <= q.AfterSeq {
			return nil
		}
		rows, err := c.query(ctx, r, sqlitesql.ReadCommits, []any{partition, q.AfterSeq, through, int64(q.LimitChanges)})
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				seq, rowVersion        int64
				tbl, rowID, op, scopes string
				vals                   sql.NullString
				meta                   driver.Commit
			)
			if err := rows.Scan(&seq, &tbl, &rowID, &op, &scopes, &vals, &rowVersion,
				&meta.ClientID, &meta.ClientCommitID, &meta.ActorID, &meta.CreatedAtMs); err != nil {
				return c.mapErr(ctx, err, what)
			}
			start, stop := g.Next(seq)
			if stop {
				return nil
			}
			if start {
				g.Start(seq, meta)
			}
			if err := g.Change(tbl, rowID, op, scopes, []byte(vals.String), vals.Valid, rowVersion); err != nil {
				return err
			}
		}
		if err := rows.Err(); err != nil {
			return c.mapErr(ctx, err, what)
		}
		g.End()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return g.Commits(), nil
}
