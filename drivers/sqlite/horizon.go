package sqlite

import (
	"context"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/commitwindow"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// SetHorizonSeq raises the horizon to seq (HZ-1): a seq at or below the
// current horizon is a no-op; a seq above MaxCommitSeq → CodeInvalidHorizon.
func (c *Conn) SetHorizonSeq(ctx context.Context, partition string, seq int64) error {
	return c.writeTx(ctx, "sqlite: set horizon", func(t *txStmts) error {
		maxSeq, horizon, err := c.partitionSeqs(ctx, t, partition)
		if err != nil {
			return err
		}
		if raise, err := commitwindow.RaiseHorizon(seq, maxSeq, horizon); !raise {
			return err
		}
		return t.exec(ctx, sqlitesql.SetHorizon, partition, seq)
	})
}

// PruneCommitsThrough deletes the commits ≤ seq with their changes and
// change-scope entries in one transaction and returns how many commits it
// removed; seq > horizon → CodeInvalidHorizon. Rows, push results, client
// records and max seq are untouched (HZ-2).
func (c *Conn) PruneCommitsThrough(ctx context.Context, partition string, seq int64) (int64, error) {
	var n int64
	err := c.writeTx(ctx, "sqlite: prune commits", func(t *txStmts) error {
		_, horizon, err := c.partitionSeqs(ctx, t, partition)
		if err != nil {
			return err
		}
		if seq > horizon {
			return driver.Errorf(driver.CodeInvalidHorizon, "prune bound %d is past the horizon %d (HZ-2)", seq, horizon)
		}
		if err := t.exec(ctx, sqlitesql.PruneChangeScopes, partition, seq); err != nil {
			return err
		}
		if err := t.exec(ctx, sqlitesql.PruneChanges, partition, seq); err != nil {
			return err
		}
		n, err = t.execResult(ctx, sqlitesql.PruneCommits, partition, seq)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}
