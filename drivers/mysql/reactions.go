package mysql

import (
	"context"
	"database/sql"
	"math"
	"sort"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/rxorder"
)

// The reactions capability (docs/contract.md RX-1…RX-10): both halves, over the
// SQL of sql_reactions.go. Input is already valid (sync).
//
// MySQL has no UPDATE … RETURNING, so a claim is one short transaction:
// SELECT … FOR UPDATE SKIP LOCKED of the due rows in claim order, then an
// UPDATE of exactly those rows by primary key. SKIP LOCKED never waits: a
// row another claimer holds is skipped, so two claims can never lease the
// same row (RX-3) and claimers never wait for each other. Every Conn-level
// write runs through Conn.retry/writeTx: a deadlock (1213) or lock-wait
// timeout (1205) — possible only between a prune, a claim's dead-lettering
// and an owner operation on the same rows — retries the whole statement or
// transaction and never reaches the caller.

var (
	_ driver.ReactionsConn = (*Conn)(nil)
	_ driver.ReactionsTx   = (*Tx)(nil)
)

// EnqueueReactions inserts reactions as pending rows of the Tx's partition
// (RX-1): attempts 0, available at createdAt, source commit
// sourceCommitSeq. They land with Commit and vanish with Rollback. A key
// already stored in the partition, or twice in the batch, fails with
// CodeDuplicateReactionKey and stages nothing of the batch (InnoDB rolls
// back the failed statement; a batch of several statements is rolled back
// to a savepoint); the Tx stays usable.
func (t *Tx) EnqueueReactions(ctx context.Context, sourceCommitSeq int64, reactions []driver.ReactionInput) error {
	return t.op(ctx, func() error {
		if len(reactions) == 0 {
			return nil
		}
		if err := t.savepointFirst(ctx); err != nil { // TX-8 discards these too
			return err
		}
		multi := len(reactions) > enqueueBatchRows
		if multi {
			if _, err := t.tx.ExecContext(ctx, "SAVEPOINT syncstore_rx"); err != nil {
				return t.c.mapErr(ctx, err, "mysql: enqueue reactions")
			}
		}
		for rest := reactions; len(rest) > 0; {
			part := rest[:min(len(rest), enqueueBatchRows)]
			rest = rest[len(part):]
			args := make([]any, 0, enqueueRowArgs*len(part))
			for _, r := range part {
				args = append(args, t.partition, r.Key, r.Type, string(r.Payload), r.MaxAttempts, sourceCommitSeq,
					r.CreatedAtMs, r.CreatedAtMs, r.CreatedAtMs, r.CreatedAtMs, r.Version, r.SourceClientID, r.SourceClientCommitID)
			}
			if _, err := t.c.execArgs(ctx, t.tx, enqueueReactions(len(part)), args); err != nil {
				if multi && errNumber(err) == erDupEntry {
					if _, rerr := t.tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT syncstore_rx"); rerr != nil {
						return t.c.mapErr(ctx, rerr, "mysql: enqueue reactions")
					}
				}
				if errNumber(err) == erDupEntry {
					return &driver.Error{Code: driver.CodeDuplicateReactionKey, OpIndex: -1,
						Message: "mysql: enqueue reactions: a reaction key already exists in the partition", Rule: "RX-1"}
				}
				return t.c.mapErr(ctx, err, "mysql: enqueue reactions")
			}
		}
		return nil
	})
}

// ClaimReactions leases due reactions in one transaction (RX-2): first the
// due rows at their attempts cap are dead-lettered (RX-4), then up to
// req.Limit other due rows (pending with availableAt ≤ now, leased with
// expiry ≤ now; of req.Types, never empty through sync) are locked in claim order —
// due time, createdAt, key — skipping rows other claims hold, and leased
// for req.Owner until NowMs+LeaseMs with attempts+1. The result is sorted
// by createdAt, then key (bytewise). Deadlocks and lock waits are retried
// inside (never returned); other errors: CodeUnavailable, CodeInternal.
func (c *Conn) ClaimReactions(ctx context.Context, partition string, req driver.ClaimRequest) ([]driver.Reaction, error) {
	types := make([]any, len(req.Types))
	for i, ty := range req.Types {
		types[i] = ty
	}
	expiry := req.NowMs + req.LeaseMs
	var out []driver.Reaction
	err := c.writeTx(ctx, "mysql: claim reactions", func(tx *sql.Tx) error {
		out = nil
		keys, err := c.queryKeys(ctx, tx, claimSelectExhausted(len(types)), append([]any{partition, req.NowMs}, types...))
		if err != nil {
			return err
		}
		for _, part := range keyChunks(keys) {
			args := append([]any{req.NowMs, exhaustedCode, req.NowMs, req.NowMs, partition}, part...)
			if _, err := c.execArgs(ctx, tx, claimDeadLetter(len(part)), args); err != nil {
				return err
			}
		}
		args := append(append([]any{partition, req.NowMs}, types...), int64(req.Limit))
		rows, err := c.queryRaw(ctx, tx, claimSelect(len(types)), args)
		if err != nil {
			return err
		}
		if out, err = scanReactionRows(rows); err != nil {
			return err
		}
		leased := make([]string, len(out))
		for i, r := range out {
			leased[i] = r.Key
		}
		for _, part := range keyChunks(leased) {
			args := append([]any{req.Owner, expiry, expiry, req.NowMs, partition}, part...)
			if _, err := c.execArgs(ctx, tx, claimLease(len(part)), args); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i := range out {
		markLeased(&out[i], req.Owner, expiry, req.NowMs)
	}
	rxorder.Sort(out) // RX-2
	return out, nil
}

var _ driver.ReactionsAcrossConn = (*Conn)(nil)

// ClaimDueReactions leases due reactions across partitions (RX-12). One
// statement without locks finds the candidates (claimDueCandidates): on
// an idle store that is the whole claim, whatever the number of
// partitions. Otherwise one transaction dead-letters the exhausted
// candidates (RX-4), locks the others still due with SKIP LOCKED (RX-3)
// and leases up to req.Limit of them in rank order (fair between
// partitions). A claim racing another may lease fewer rows than are due.
// The result is sorted by partition, createdAt, key. Deadlocks and lock
// waits are retried inside.
func (c *Conn) ClaimDueReactions(ctx context.Context, req driver.DueClaimRequest) ([]driver.PartitionReaction, error) {
	const what = "mysql: claim due reactions"
	filter := make([]any, 0, len(req.Types)+len(req.Partitions))
	for _, ty := range req.Types {
		filter = append(filter, ty)
	}
	for _, p := range req.Partitions {
		filter = append(filter, p)
	}
	args := append(append(append(append([]any{req.NowMs}, filter...), req.NowMs), filter...), int64(2*req.Limit))
	rows, err := c.query(ctx, nil, claimDueCandidates(len(req.Types), len(req.Partitions)), args, what)
	if err != nil {
		return nil, err
	}
	type cand struct {
		p, k string
		rk   int64
	}
	var dead, live []cand
	for rows.Next() {
		var x cand
		if err := rows.Scan(&x.p, &x.k, &x.rk); err != nil {
			rows.Close()
			return nil, c.mapErr(ctx, err, what)
		}
		if x.rk == 0 {
			dead = append(dead, x)
		} else {
			live = append(live, x)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, c.mapErr(ctx, err, what)
	}
	if len(dead) == 0 && len(live) == 0 {
		return nil, nil
	}
	// pairs groups candidates by partition for pairsIn: the key counts and
	// the arguments (p, keys…) in that order.
	pairs := func(cs []cand) ([]int, []any) {
		var counts []int
		var args []any
		at := map[string]int{}
		byPart := map[string][]any{}
		for _, x := range cs {
			if _, ok := at[x.p]; !ok {
				at[x.p] = len(counts)
				counts = append(counts, 0)
			}
			counts[at[x.p]]++
			byPart[x.p] = append(byPart[x.p], x.k)
		}
		parts := make([]string, len(counts))
		for p, i := range at {
			parts[i] = p
		}
		for _, p := range parts {
			args = append(append(args, p), byPart[p]...)
		}
		return counts, args
	}
	expiry := req.NowMs + req.LeaseMs
	rank := make(map[[2]string]int, len(live))
	for i, x := range live {
		rank[[2]string{x.p, x.k}] = i
	}
	var out []driver.PartitionReaction
	err = c.writeTx(ctx, what, func(tx *sql.Tx) error {
		out = nil
		for start := 0; start < len(dead); start += maxKeyChunk {
			counts, pa := pairs(dead[start:min(start+maxKeyChunk, len(dead))])
			if _, err := c.execArgs(ctx, tx, claimDueDeadLetter(counts), append([]any{req.NowMs, exhaustedCode, req.NowMs, req.NowMs, req.NowMs}, pa...)); err != nil {
				return err
			}
		}
		if len(live) == 0 {
			return nil
		}
		counts, pa := pairs(live)
		rows, err := c.queryRaw(ctx, tx, claimDueLock(counts), append([]any{req.NowMs}, pa...))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var p driver.PartitionReaction
			if p.Reaction, err = scanReactionRow(rows, &p.Partition); err != nil {
				return err
			}
			out = append(out, p)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows.Close()
		sort.Slice(out, func(i, j int) bool {
			return rank[[2]string{out[i].Partition, out[i].Key}] < rank[[2]string{out[j].Partition, out[j].Key}]
		})
		out = out[:min(len(out), req.Limit)]
		if len(out) == 0 {
			return nil
		}
		leased := make([]cand, len(out))
		for i, r := range out {
			leased[i] = cand{p: r.Partition, k: r.Key}
		}
		counts, pa = pairs(leased)
		_, err = c.execArgs(ctx, tx, claimDueLease(counts), append([]any{req.Owner, expiry, expiry, req.NowMs}, pa...))
		return err
	})
	if err != nil {
		return nil, err
	}
	for i := range out {
		markLeased(&out[i].Reaction, req.Owner, expiry, req.NowMs)
	}
	rxorder.SortAcross(out) // RX-12
	return out, nil
}

// erDupKeyName: the index exists (another process added it first).
const erDupKeyName = 1061

// ensureReactionIndexes adds RX-12's store-wide indexes to a store
// created before them (reactionIndexes); a concurrent opener adding the
// same index first is not an error.
func (c *Conn) ensureReactionIndexes(ctx context.Context) error {
	for _, ix := range reactionIndexes {
		var n int
		if err := c.db.QueryRowContext(ctx, selectReactionIndex, ix.name).Scan(&n); err != nil {
			return c.mapErr(ctx, err, "mysql: initialize the store")
		}
		if n > 0 {
			continue
		}
		if _, err := c.db.ExecContext(ctx, ix.add); err != nil && errNumber(err) != erDupKeyName {
			return c.mapErr(ctx, err, "mysql: initialize the store")
		}
	}
	return nil
}

// CompleteReaction marks a reaction leased to owner completed (RX-5).
func (c *Conn) CompleteReaction(ctx context.Context, partition, key, owner string, nowMs int64) (bool, error) {
	return c.changed(ctx, "mysql: complete reaction", completeReaction, nowMs, partition, key, owner)
}

// ExtendReactionLease moves the lease of a reaction leased to owner to
// nowMs + leaseMs (RX-5).
func (c *Conn) ExtendReactionLease(ctx context.Context, partition, key, owner string, nowMs, leaseMs int64) (bool, error) {
	expiry := nowMs + leaseMs
	return c.changed(ctx, "mysql: extend reaction lease", extendReactionLease, expiry, expiry, nowMs, partition, key, owner)
}

// FailReaction records a failed attempt of a reaction leased to owner:
// pending at RetryAtMs with Retry, else dead letter at NowMs; attempts
// unchanged, the failure kept (RX-6).
func (c *Conn) FailReaction(ctx context.Context, partition, key, owner string, req driver.FailRequest) (bool, error) {
	var details any
	if req.Details != "" {
		details = string(req.Details)
	}
	if req.Retry {
		return c.changed(ctx, "mysql: fail reaction", failReactionRetry,
			req.RetryAtMs, req.RetryAtMs, req.Code, details, req.NowMs, req.NowMs, partition, key, owner)
	}
	return c.changed(ctx, "mysql: fail reaction", failReactionDead,
		req.NowMs, req.Code, details, req.NowMs, req.NowMs, partition, key, owner)
}

// RetryReaction turns a dead letter into pending with attempts 0 (RX-7).
func (c *Conn) RetryReaction(ctx context.Context, partition, key string, nowMs int64) (bool, error) {
	return c.changed(ctx, "mysql: retry reaction", retryReaction, nowMs, nowMs, nowMs, partition, key)
}

// ListReactions lists committed reactions newest first (createdAt desc,
// key desc), filtered by statuses and types (empty = all), at most
// q.Limit (RX-8).
func (c *Conn) ListReactions(ctx context.Context, partition string, q driver.ReactionListQuery) ([]driver.Reaction, error) {
	include := rxorder.StatusFlags(q.Statuses) // one UNION branch per status, in rxorder.Statuses' order
	afterKey, afterAt := keyAboveAll, int64(math.MaxInt64)
	if q.AfterKey != "" {
		afterKey, afterAt = q.AfterKey, q.AfterCreatedAtMs
	}
	var statuses []string
	var args []any
	for i, s := range rxorder.Statuses {
		if !include[i] {
			continue
		}
		statuses = append(statuses, string(s))
		args = append(args, partition, string(s))
		for _, ty := range q.Types {
			args = append(args, ty)
		}
		args = append(args, afterAt, afterAt, afterKey, int64(q.Limit))
	}
	if len(statuses) == 0 {
		return nil, nil
	}
	rows, err := c.query(ctx, nil, listReactions(statuses, len(q.Types)), append(args, int64(q.Limit)), "mysql: list reactions")
	if err != nil {
		return nil, err
	}
	return c.scanReactions(ctx, rows)
}

// PruneReactions deletes at most req.Limit terminal reactions, oldest
// first — completed with updatedAt < CompletedBeforeMs, dead letters with
// updatedAt < DeadLetterBeforeMs — and counts them per status (RX-9).
// Each candidate is deleted only if it still has its status: a retry that
// commits first keeps its row, one that comes later finds none. It
// touches nothing but reactions (RX-10).
func (c *Conn) PruneReactions(ctx context.Context, partition string, req driver.ReactionPruneRequest) (map[driver.ReactionStatus]int64, error) {
	var out map[driver.ReactionStatus]int64
	err := c.writeTx(ctx, "mysql: prune reactions", func(tx *sql.Tx) error {
		out = map[driver.ReactionStatus]int64{driver.ReactionCompleted: 0, driver.ReactionDeadLetter: 0}
		limit := int64(req.Limit)
		rows, err := c.queryRaw(ctx, tx, pruneCandidates, []any{partition, req.CompletedBeforeMs, limit,
			partition, req.DeadLetterBeforeMs, limit, limit})
		if err != nil {
			return err
		}
		byStatus := map[string][]string{}
		for rows.Next() {
			var k, s string
			var at int64
			if err := rows.Scan(&k, &s, &at); err != nil {
				rows.Close()
				return err
			}
			byStatus[s] = append(byStatus[s], k)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		cutoff := map[string]int64{string(driver.ReactionCompleted): req.CompletedBeforeMs,
			string(driver.ReactionDeadLetter): req.DeadLetterBeforeMs}
		for s, keys := range byStatus {
			for _, part := range keyChunks(keys) {
				res, err := c.execArgs(ctx, tx, pruneDelete(len(part)), append([]any{partition, s, cutoff[s]}, part...))
				if err != nil {
					return err
				}
				n, err := res.RowsAffected()
				if err != nil {
					return err
				}
				out[driver.ReactionStatus(s)] += n
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// changed runs one autocommit write, retried on lock conflicts, and
// reports whether it matched a row (the owner operations' result, RX-5).
func (c *Conn) changed(ctx context.Context, what, q string, args ...any) (bool, error) {
	if err := c.check(); err != nil {
		return false, err
	}
	var n int64
	err := c.retry(ctx, func() error {
		res, err := c.exec(ctx, nil, q, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return false, c.mapErr(ctx, err, what)
	}
	return n == 1, nil
}

// queryKeys runs a query returning one string column; errors unmapped.
func (c *Conn) queryKeys(ctx context.Context, tx *sql.Tx, q string, args []any) ([]string, error) {
	rows, err := c.queryRaw(ctx, tx, q, args)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// maxKeyChunk is the largest IN list of keys one statement carries.
const maxKeyChunk = 4096

// keyChunks splits keys into IN lists of at most maxKeyChunk, each padded
// to a power of two by repeating its last key (a repeat matches nothing
// more), so at most a dozen statement texts of each kind exist.
func keyChunks(keys []string) [][]any {
	var out [][]any
	for len(keys) > 0 {
		n := min(len(keys), maxKeyChunk)
		size := 1
		for size < n {
			size *= 2
		}
		part := make([]any, size)
		for i := range part {
			part[i] = keys[min(i, n-1)]
		}
		out = append(out, part)
		keys = keys[n:]
	}
	return out
}

// GetReaction reads one committed reaction by its primary key (RX-11).
func (c *Conn) GetReaction(ctx context.Context, partition, key string) (driver.Reaction, bool, error) {
	rows, err := c.query(ctx, nil, getReaction, []any{partition, key}, "mysql: read a reaction")
	if err != nil {
		return driver.Reaction{}, false, err
	}
	rs, err := c.scanReactions(ctx, rows)
	if err != nil || len(rs) == 0 {
		return driver.Reaction{}, false, err
	}
	return rs[0], true, nil
}

// scanReactions reads rows of reactionColumns and closes them; errors
// mapped.
func (c *Conn) scanReactions(ctx context.Context, rows *sql.Rows) ([]driver.Reaction, error) {
	out, err := scanReactionRows(rows)
	if err != nil {
		return nil, c.mapErr(ctx, err, "mysql: read reactions")
	}
	return out, nil
}

// scanReactionRows reads rows of reactionColumns and closes them; errors
// unmapped.
func scanReactionRows(rows *sql.Rows) ([]driver.Reaction, error) {
	defer rows.Close()
	var out []driver.Reaction
	for rows.Next() {
		r, err := scanReactionRow(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// scanReactionRow reads the current row: lead's columns, then
// reactionColumns; errors unmapped.
func scanReactionRow(rows *sql.Rows, lead ...any) (driver.Reaction, error) {
	var r driver.Reaction
	var payload, status string
	var attempts, maxAttempts int64
	var code, details sql.NullString
	var failedAt, completedAt sql.NullInt64
	if err := rows.Scan(append(lead, &r.Key, &r.Type, &payload, &status, &attempts, &maxAttempts, &r.SourceCommitSeq,
		&r.CreatedAtMs, &r.AvailableAtMs, &r.LeaseOwner, &r.LeaseExpiresAtMs, &code, &details, &failedAt,
		&r.UpdatedAtMs, &r.Version, &r.SourceClientID, &r.SourceClientCommitID, &completedAt)...); err != nil {
		return r, err
	}
	r.CompletedAtMs = completedAt.Int64
	r.Payload, r.Status = driver.JSON(payload), driver.ReactionStatus(status)
	r.Attempts, r.MaxAttempts = int(attempts), int(maxAttempts)
	if code.Valid {
		r.LastFailure = &driver.ReactionFailure{Code: code.String, Details: driver.JSON(details.String), AtMs: failedAt.Int64}
	}
	return r, nil
}

// markLeased gives a claimed row, read before its lease was written, the
// fields the lease wrote (RX-2): leased, attempts+1, owner, expiry, now.
func markLeased(r *driver.Reaction, owner string, expiry, nowMs int64) {
	r.Status, r.Attempts, r.LeaseOwner, r.LeaseExpiresAtMs, r.UpdatedAtMs =
		driver.ReactionLeased, r.Attempts+1, owner, expiry, nowMs
}
