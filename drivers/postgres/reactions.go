package postgres

import (
	"context"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/rxorder"
)

// The reactions capability (docs/contract.md RX-1…RX-10): both halves, over
// the SQL of sql_reactions.go. Input is already valid (sync checks group
// V before a driver is called).

var (
	_ driver.ReactionsConn       = (*Conn)(nil)
	_ driver.ReactionsTx         = (*Tx)(nil)
	_ driver.ReactionsAcrossConn = (*Conn)(nil)
)

// EnqueueReactions buffers one insert of every reaction as a pending row
// of the Tx's partition (RX-1); it is sent in the Tx's next pipeline, so
// a push that enqueues reactions costs no extra round trip. The rows land
// with Commit and vanish with Rollback. A key already stored in the
// partition, or twice in the batch or the Tx, fails the Tx with
// CodeDuplicateReactionKey — reported by the call that sends the
// pipeline (a later read, upsert or Commit); the Tx is then rolled back
// and nothing of it is written.
func (t *Tx) EnqueueReactions(ctx context.Context, sourceCommitSeq int64, reactions []driver.ReactionInput) error {
	return t.op(ctx, func() error {
		n := len(reactions)
		if n == 0 {
			return nil
		}
		keys, types, payloads := make([]string, n), make([]string, n), make([]string, n)
		maxAttempts, created, versions := make([]int32, n), make([]int64, n), make([]int64, n)
		clients, commits := make([]string, n), make([]string, n)
		for i, r := range reactions {
			keys[i], types[i], payloads[i] = r.Key, r.Type, string(r.Payload)
			maxAttempts[i], created[i] = int32(min(r.MaxAttempts, 1<<31-1)), r.CreatedAtMs
			versions[i], clients[i], commits[i] = r.Version, r.SourceClientID, r.SourceClientCommitID
		}
		t.pending = append(t.pending, stmt{sqlEnqueueReactions,
			[]any{t.partition, sourceCommitSeq, keys, types, payloads, maxAttempts, created, versions, clients, commits}})
		return nil
	})
}

// ClaimReactions leases up to req.Limit due reactions of partition in one
// statement and one round trip (RX-2): the due rows at their attempts cap
// are dead-lettered first (RX-4), then other due rows are leased walking
// the due index in claim order, both with FOR UPDATE SKIP LOCKED, so
// concurrent claimers never wait for each other nor lease the same row
// (RX-3). The result is sorted by createdAt, then key (bytewise).
func (c *Conn) ClaimReactions(ctx context.Context, partition string, req driver.ClaimRequest) ([]driver.Reaction, error) {
	out, err := c.reactionRows(ctx, "postgres: claim reactions", sqlClaim,
		partition, req.NowMs, typesArg(req.Types), int64(req.Limit), req.Owner, req.NowMs+req.LeaseMs)
	if err != nil {
		return nil, err
	}
	rxorder.Sort(out) // RX-2
	return out, nil
}

// ClaimDueReactions leases due reactions across partitions (RX-12) in one
// statement and one round trip whatever the number of partitions
// (sqlClaimAcross): exhausted rows dead-lettered first (RX-4), then up to
// req.Limit due rows ranked fairly between partitions, locked with FOR
// UPDATE SKIP LOCKED (RX-3). The result is sorted by partition,
// createdAt, key.
func (c *Conn) ClaimDueReactions(ctx context.Context, req driver.DueClaimRequest) ([]driver.PartitionReaction, error) {
	const what = "postgres: claim due reactions"
	if err := c.check(); err != nil {
		return nil, err
	}
	rows, err := c.pool.Query(ctx, sqlClaimAcross, req.NowMs, typesArg(req.Types), int64(req.Limit), req.Owner,
		req.NowMs+req.LeaseMs, typesArg(req.Partitions))
	if err != nil {
		return nil, c.mapErr(ctx, err, what)
	}
	defer rows.Close()
	var out []driver.PartitionReaction
	for rows.Next() {
		var p driver.PartitionReaction
		if p.Reaction, err = scanReactionAfter(rows, &p.Partition); err != nil {
			return nil, c.mapErr(ctx, err, what)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, c.mapErr(ctx, err, what)
	}
	rxorder.SortAcross(out) // RX-12
	return out, nil
}

// CompleteReaction marks a reaction leased to owner completed (RX-5).
func (c *Conn) CompleteReaction(ctx context.Context, partition, key, owner string, nowMs int64) (bool, error) {
	n, err := c.exec(ctx, "postgres: complete reaction", sqlCompleteReaction, partition, key, owner, nowMs)
	return n == 1, err
}

// ExtendReactionLease moves the lease of a reaction leased to owner to
// nowMs + leaseMs (RX-5).
func (c *Conn) ExtendReactionLease(ctx context.Context, partition, key, owner string, nowMs, leaseMs int64) (bool, error) {
	n, err := c.exec(ctx, "postgres: extend reaction lease", sqlExtendReactionLease, partition, key, owner, nowMs, nowMs+leaseMs)
	return n == 1, err
}

// FailReaction records a failed attempt of a reaction leased to owner:
// pending at RetryAtMs with Retry, else dead letter at NowMs (RX-6).
func (c *Conn) FailReaction(ctx context.Context, partition, key, owner string, req driver.FailRequest) (bool, error) {
	var details any
	if req.Details != "" {
		details = string(req.Details)
	}
	var n int64
	var err error
	if req.Retry {
		n, err = c.exec(ctx, "postgres: fail reaction", sqlFailReactionRetry, partition, key, owner, req.NowMs, req.RetryAtMs, req.Code, details)
	} else {
		n, err = c.exec(ctx, "postgres: fail reaction", sqlFailReactionDead, partition, key, owner, req.NowMs, req.Code, details)
	}
	return n == 1, err
}

// RetryReaction turns a dead letter into pending with attempts 0 (RX-7).
func (c *Conn) RetryReaction(ctx context.Context, partition, key string, nowMs int64) (bool, error) {
	n, err := c.exec(ctx, "postgres: retry reaction", sqlRetryReaction, partition, key, nowMs)
	return n == 1, err
}

// ListReactions lists committed reactions newest first (createdAt desc,
// key desc), each status read from the list index, at most q.Limit (RX-8).
func (c *Conn) ListReactions(ctx context.Context, partition string, q driver.ReactionListQuery) ([]driver.Reaction, error) {
	f := rxorder.StatusFlags(q.Statuses)
	afterKey, afterAt := keyAboveAll, int64(math.MaxInt64)
	if q.AfterKey != "" {
		afterKey, afterAt = q.AfterKey, q.AfterCreatedAtMs
	}
	return c.reactionRows(ctx, "postgres: list reactions", sqlListReactions,
		partition, f[0], f[1], f[2], f[3], typesArg(q.Types), int64(q.Limit), afterKey, afterAt)
}

// GetReaction reads one committed reaction by its primary key (RX-11).
func (c *Conn) GetReaction(ctx context.Context, partition, key string) (driver.Reaction, bool, error) {
	rs, err := c.reactionRows(ctx, "postgres: read a reaction", sqlGetReaction, partition, key)
	if err != nil || len(rs) == 0 {
		return driver.Reaction{}, false, err
	}
	return rs[0], true, nil
}

// PruneReactions deletes at most req.Limit terminal reactions, oldest
// first, in one statement, and counts them per status (RX-9). It touches
// nothing but reactions (RX-10).
func (c *Conn) PruneReactions(ctx context.Context, partition string, req driver.ReactionPruneRequest) (map[driver.ReactionStatus]int64, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	const what = "postgres: prune reactions"
	rows, err := c.pool.Query(ctx, sqlPruneReactions, partition, req.CompletedBeforeMs, req.DeadLetterBeforeMs, int64(req.Limit))
	if err != nil {
		return nil, c.mapErr(ctx, err, what)
	}
	defer rows.Close()
	out := map[driver.ReactionStatus]int64{driver.ReactionCompleted: 0, driver.ReactionDeadLetter: 0}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, c.mapErr(ctx, err, what)
		}
		out[driver.ReactionStatus(s)]++
	}
	if err := rows.Err(); err != nil {
		return nil, c.mapErr(ctx, err, what)
	}
	return out, nil
}

// reactionRows runs one autocommit statement returning reactionColumns.
func (c *Conn) reactionRows(ctx context.Context, what, q string, args ...any) ([]driver.Reaction, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	rows, err := c.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, c.mapErr(ctx, err, what)
	}
	defer rows.Close()
	var out []driver.Reaction
	for rows.Next() {
		r, err := scanReaction(rows)
		if err != nil {
			return nil, c.mapErr(ctx, err, what)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, c.mapErr(ctx, err, what)
	}
	return out, nil
}

// scanReaction reads one row of reactionColumns.
func scanReaction(rows pgx.Rows) (driver.Reaction, error) { return scanReactionAfter(rows) }

// scanReactionAfter reads one row of lead's columns, then reactionColumns.
func scanReactionAfter(rows pgx.Rows, lead ...any) (driver.Reaction, error) {
	var r driver.Reaction
	var payload, status string
	var attempts, maxAttempts int32
	var code, details *string
	var failedAt, completedAt *int64
	if err := rows.Scan(append(lead, &r.Key, &r.Type, &payload, &status, &attempts, &maxAttempts, &r.SourceCommitSeq,
		&r.CreatedAtMs, &r.AvailableAtMs, &r.LeaseOwner, &r.LeaseExpiresAtMs, &code, &details, &failedAt,
		&r.UpdatedAtMs, &r.Version, &r.SourceClientID, &r.SourceClientCommitID, &completedAt)...); err != nil {
		return r, err
	}
	if completedAt != nil {
		r.CompletedAtMs = *completedAt
	}
	r.Payload, r.Status = driver.JSON(payload), driver.ReactionStatus(status)
	r.Attempts, r.MaxAttempts = int(attempts), int(maxAttempts)
	if code != nil {
		f := &driver.ReactionFailure{Code: *code}
		if details != nil {
			f.Details = driver.JSON(*details)
		}
		if failedAt != nil {
			f.AtMs = *failedAt
		}
		r.LastFailure = f
	}
	return r, nil
}

// typesArg is a type filter as a text[] parameter: nil (SQL NULL, every
// type) when types is empty.
func typesArg(types []string) []string {
	if len(types) == 0 {
		return nil
	}
	return types
}
