package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/rxorder"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// The reactions capability (docs/contract.md RX-1…RX-10): both halves, over the
// SQL of internal/sqlitesql/reactions.go. Every write goes through the
// writer, so claims are serialized by SQLite's single writer: two claims
// can never lease the same row (RX-3). Input is already valid (sync).

var (
	_ driver.ReactionsConn       = (*Conn)(nil)
	_ driver.ReactionsTx         = (*Tx)(nil)
	_ driver.ReactionsAcrossConn = (*Conn)(nil)
)

// EnqueueReactions inserts reactions as pending rows of the Tx's partition
// in one statement (RX-1): they land with Commit and vanish with Rollback.
// A key already stored in the partition, or twice in the batch or the Tx,
// fails with CodeDuplicateReactionKey; SQLite rolls that statement back
// alone, so nothing of the batch is staged and the Tx stays usable.
func (t *Tx) EnqueueReactions(ctx context.Context, sourceCommitSeq int64, reactions []driver.ReactionInput) error {
	batch, err := sqlitesql.EncodeReactionBatch(reactions)
	if err != nil {
		return err
	}
	return t.op(ctx, func() error {
		if len(reactions) == 0 {
			return nil
		}
		err := t.st.exec(ctx, sqlitesql.EnqueueReactions, t.partition, sourceCommitSeq, batch)
		var se *sqlite.Error
		if errors.As(err, &se) && (se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE) {
			return &driver.Error{Code: driver.CodeDuplicateReactionKey, OpIndex: -1, Err: se,
				Message: "sqlite: enqueue reactions: a reaction key already exists in the partition", Rule: "RX-1"}
		}
		return err
	})
}

// ClaimReactions leases due reactions in one write transaction (RX-2):
// first the due rows at their attempts cap are dead-lettered (RX-4), then
// up to req.Limit other due rows are leased, walking the due index in
// claim order. The result is sorted by createdAt, then key.
func (c *Conn) ClaimReactions(ctx context.Context, partition string, req driver.ClaimRequest) ([]driver.Reaction, error) {
	types, err := sqlitesql.EncodeTypes(req.Types)
	if err != nil {
		return nil, err
	}
	var out []driver.Reaction
	err = c.writeTx(ctx, "sqlite: claim reactions", func(t *txStmts) error {
		if err := t.exec(ctx, sqlitesql.ClaimDeadLetterExhausted, partition, req.NowMs, types, sqlitesql.ExhaustedCode); err != nil {
			return err
		}
		rows, err := c.query(ctx, t, sqlitesql.ClaimLease, []any{partition, req.NowMs, req.Limit, types, req.Owner, req.NowMs + req.LeaseMs})
		if err != nil {
			return err
		}
		out, err = c.scanReactions(ctx, rows)
		return err
	})
	if err != nil {
		return nil, err
	}
	rxorder.Sort(out) // RX-2
	return out, nil
}

// ClaimDueReactions leases due reactions across partitions (RX-12) in one
// write transaction of two statements, whatever the number of partitions:
// the due rows at their attempts cap are dead-lettered first (RX-4), then
// up to req.Limit other due rows are leased, ranked fairly between
// partitions. Claims are serialized by the writer (RX-3). The result is
// sorted by partition, createdAt, key.
func (c *Conn) ClaimDueReactions(ctx context.Context, req driver.DueClaimRequest) ([]driver.PartitionReaction, error) {
	types, err := sqlitesql.EncodeTypes(req.Types)
	if err != nil {
		return nil, err
	}
	parts, err := sqlitesql.EncodeTypes(req.Partitions)
	if err != nil {
		return nil, err
	}
	var out []driver.PartitionReaction
	err = c.writeTx(ctx, "sqlite: claim due reactions", func(t *txStmts) error {
		if err := t.exec(ctx, sqlitesql.ClaimDeadLetterExhaustedAcross, req.NowMs, types, sqlitesql.ExhaustedCode, parts); err != nil {
			return err
		}
		rows, err := c.query(ctx, t, sqlitesql.ClaimLeaseAcross, []any{req.NowMs, req.Limit, types, req.Owner, req.NowMs + req.LeaseMs, parts})
		if err != nil {
			return err
		}
		out, err = scanRows(ctx, c, rows, true, func(p string, r driver.Reaction) driver.PartitionReaction {
			return driver.PartitionReaction{Partition: p, Reaction: r}
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	rxorder.SortAcross(out) // RX-12
	return out, nil
}

// CompleteReaction marks a reaction leased to owner completed (RX-5).
func (c *Conn) CompleteReaction(ctx context.Context, partition, key, owner string, nowMs int64) (bool, error) {
	return c.writeChanged(ctx, "sqlite: complete reaction", sqlitesql.CompleteReaction, partition, key, owner, nowMs)
}

// ExtendReactionLease moves the lease of a reaction leased to owner to
// nowMs + leaseMs (RX-5).
func (c *Conn) ExtendReactionLease(ctx context.Context, partition, key, owner string, nowMs, leaseMs int64) (bool, error) {
	return c.writeChanged(ctx, "sqlite: extend reaction lease", sqlitesql.ExtendReactionLease, partition, key, owner, nowMs, nowMs+leaseMs)
}

// FailReaction records a failed attempt of a reaction leased to owner:
// pending at RetryAtMs with Retry, else dead letter at NowMs (RX-6).
func (c *Conn) FailReaction(ctx context.Context, partition, key, owner string, req driver.FailRequest) (bool, error) {
	var details any
	if req.Details != "" {
		details = string(req.Details)
	}
	if req.Retry {
		return c.writeChanged(ctx, "sqlite: fail reaction", sqlitesql.FailReactionRetry, partition, key, owner, req.NowMs, req.RetryAtMs, req.Code, details)
	}
	return c.writeChanged(ctx, "sqlite: fail reaction", sqlitesql.FailReactionDead, partition, key, owner, req.NowMs, req.Code, details)
}

// RetryReaction turns a dead letter into pending with attempts 0 (RX-7).
func (c *Conn) RetryReaction(ctx context.Context, partition, key string, nowMs int64) (bool, error) {
	return c.writeChanged(ctx, "sqlite: retry reaction", sqlitesql.RetryReaction, partition, key, nowMs)
}

// ListReactions lists reactions newest first, per status from the list
// index, merged (RX-8). It reads committed data through the readers.
func (c *Conn) ListReactions(ctx context.Context, partition string, q driver.ReactionListQuery) ([]driver.Reaction, error) {
	args, err := sqlitesql.ListArgs(partition, q)
	if err != nil {
		return nil, err
	}
	rows, err := c.query(ctx, c.reader(), sqlitesql.ListReactions, args)
	if err != nil {
		return nil, err
	}
	return c.scanReactions(ctx, rows)
}

// GetReaction reads one reaction through the readers (committed data),
// found by its primary key (RX-11).
func (c *Conn) GetReaction(ctx context.Context, partition, key string) (driver.Reaction, bool, error) {
	rows, err := c.query(ctx, c.reader(), sqlitesql.GetReaction, []any{partition, key})
	if err != nil {
		return driver.Reaction{}, false, err
	}
	rs, err := c.scanReactions(ctx, rows)
	if err != nil || len(rs) == 0 {
		return driver.Reaction{}, false, err
	}
	return rs[0], true, nil
}

// PruneReactions deletes at most req.Limit terminal reactions, oldest
// first, in one statement, and counts them per status (RX-9). It touches
// nothing but reactions (RX-10).
func (c *Conn) PruneReactions(ctx context.Context, partition string, req driver.ReactionPruneRequest) (map[driver.ReactionStatus]int64, error) {
	out := map[driver.ReactionStatus]int64{driver.ReactionCompleted: 0, driver.ReactionDeadLetter: 0}
	err := c.writeTx(ctx, "sqlite: prune reactions", func(t *txStmts) error {
		rows, err := c.query(ctx, t, sqlitesql.PruneReactions, []any{partition, req.CompletedBeforeMs, req.DeadLetterBeforeMs, req.Limit})
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				return c.mapErr(ctx, err, "sqlite: prune reactions")
			}
			out[driver.ReactionStatus(s)]++
		}
		return c.mapErr(ctx, rows.Err(), "sqlite: prune reactions")
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// writeChanged runs one autocommit write on the writer and reports whether
// it changed a row (the owner operations' true/false, RX-5).
func (c *Conn) writeChanged(ctx context.Context, what, q string, args ...any) (bool, error) {
	n, err := c.writeCount(ctx, what, q, args...)
	return n == 1, err
}

// scanReactions reads rows of sqlitesql.ReactionColumns and closes them.
func (c *Conn) scanReactions(ctx context.Context, rows *sql.Rows) ([]driver.Reaction, error) {
	return scanRows(ctx, c, rows, false, func(_ string, r driver.Reaction) driver.Reaction { return r })
}

// scanRows reads rows of sqlitesql.ReactionColumns, led by the partition
// when withPartition, and closes them.
func scanRows[T any](ctx context.Context, c *Conn, rows *sql.Rows, withPartition bool, as func(string, driver.Reaction) T) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		var r driver.Reaction
		var partition, payload, status string
		var attempts, maxAttempts int64
		var code, details sql.NullString
		var failedAt, completedAt sql.NullInt64
		dest := []any{&r.Key, &r.Type, &payload, &status, &attempts, &maxAttempts, &r.SourceCommitSeq,
			&r.CreatedAtMs, &r.AvailableAtMs, &r.LeaseOwner, &r.LeaseExpiresAtMs, &code, &details, &failedAt,
			&r.UpdatedAtMs, &r.Version, &r.SourceClientID, &r.SourceClientCommitID, &completedAt}
		if withPartition {
			dest = append([]any{&partition}, dest...)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, c.mapErr(ctx, err, "sqlite: read reactions")
		}
		r.Payload, r.Status = driver.JSON(payload), driver.ReactionStatus(status)
		r.Attempts, r.MaxAttempts = int(attempts), int(maxAttempts)
		r.CompletedAtMs = completedAt.Int64
		if code.Valid {
			r.LastFailure = &driver.ReactionFailure{Code: code.String, Details: driver.JSON(details.String), AtMs: failedAt.Int64}
		}
		out = append(out, as(partition, r))
	}
	if err := rows.Err(); err != nil {
		return nil, c.mapErr(ctx, err, "sqlite: read reactions")
	}
	return out, nil
}
