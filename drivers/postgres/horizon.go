package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/commitwindow"
)

// SetHorizonSeq raises the horizon to seq (HZ-1): a seq at or below the
// current horizon is a no-op; a seq above MaxCommitSeq → CodeInvalidHorizon.
// It locks the partition's row, so it waits for an open Tx of the
// partition.
func (c *Conn) SetHorizonSeq(ctx context.Context, partition string, seq int64) error {
	return c.inTx(ctx, "postgres: set horizon", func(tx pgx.Tx) error {
		var maxSeq, horizon int64
		err := tx.QueryRow(ctx, sqlSelectSeqs+" FOR UPDATE", partition).Scan(&maxSeq, &horizon)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if raise, err := commitwindow.RaiseHorizon(seq, maxSeq, horizon); !raise {
			return err
		}
		_, err = tx.Exec(ctx, sqlSetHorizon, partition, seq)
		return err
	})
}

// PruneCommitsThrough deletes the commits ≤ seq with their changes and
// change-scope entries in one transaction and returns how many commits it
// removed; seq > horizon → CodeInvalidHorizon. Rows, push results, client
// records, reactions and max seq are untouched (HZ-2). It takes no
// partition lock: pushes append above the horizon and never conflict.
func (c *Conn) PruneCommitsThrough(ctx context.Context, partition string, seq int64) (int64, error) {
	var n int64
	err := c.inTx(ctx, "postgres: prune commits", func(tx pgx.Tx) error {
		var maxSeq, horizon int64
		err := tx.QueryRow(ctx, sqlSelectSeqs, partition).Scan(&maxSeq, &horizon)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if seq > horizon {
			return driver.Errorf(driver.CodeInvalidHorizon, "prune bound %d is past the horizon %d (HZ-2)", seq, horizon)
		}
		b := &pgx.Batch{}
		b.Queue(sqlPruneChangeScopes, partition, seq)
		b.Queue(sqlPruneChanges, partition, seq)
		b.Queue(sqlPruneCommits, partition, seq).Exec(func(ct pgconn.CommandTag) error { n = ct.RowsAffected(); return nil })
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}
