package d1http

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/d1http/internal/d1sql"
	"github.com/syncstore/syncstore/internal/rxorder"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// The reactions capability (docs/contract.md RX-1…RX-10), both halves, over the
// SQL of internal/sqlitesql/reactions.go (and internal/d1sql/reactions.go for the
// JSON transport). Input is already valid (sync).
//
// Enqueue is buffered into the push's commit batch, so reactions land
// with the commit and vanish with its rollback (RX-1). Every other
// operation is one batch, which D1 applies atomically and one at a time:
// a claim (dead-letter the exhausted rows, then lease) can therefore never
// lease a row another claim leased (RX-3). Owner operations report their
// changed row count (RX-5). A batch whose answer was lost after it landed
// (see client.write) still reports the truth: owner operations from the
// token's change count, claims by re-reading the rows leased to the owner
// by a claim at the same now and expiry, prunes from a note row.

var (
	_ driver.ReactionsConn       = (*Conn)(nil)
	_ driver.ReactionsTx         = (*Tx)(nil)
	_ driver.ReactionsAcrossConn = (*Conn)(nil)
)

// duePartsBytes bounds the JSON text of one claim's partition list (D1
// limits a value to 2 MB).
const duePartsBytes = 1 << 20

// enqueueChunkBytes bounds the JSON text of one EnqueueReactions
// statement's parameter (D1 limits a value to 2 MB).
const enqueueChunkBytes = 512 << 10

// EnqueueReactions stages reactions as pending rows of the Tx's partition
// with source commit sourceCommitSeq (RX-1): they are sent in the commit
// batch. A key given twice in the Tx (in one call or across calls) fails
// at once with CodeDuplicateReactionKey, stages nothing and leaves the Tx
// usable; a key already stored in the partition fails Commit with
// CodeDuplicateReactionKey, and nothing of the batch is written.
func (t *Tx) EnqueueReactions(ctx context.Context, sourceCommitSeq int64, reactions []driver.ReactionInput) error {
	return t.op(func() error {
		if len(reactions) == 0 {
			return nil
		}
		seen := make(map[string]bool, len(reactions))
		for _, r := range reactions {
			if seen[r.Key] || t.rxKeys[r.Key] {
				return &driver.Error{Code: driver.CodeDuplicateReactionKey, OpIndex: -1,
					Message: "d1http: enqueue reactions: a reaction key is enqueued twice in the transaction", Rule: "RX-1"}
			}
			seen[r.Key] = true
		}
		var stmts []stmt
		for start := 0; start < len(reactions); {
			end, size := start, 0
			for end < len(reactions) && (end == start || size < enqueueChunkBytes) {
				r := reactions[end]
				size += 64 + len(r.Key) + len(r.Type) + 2*len(r.Payload)
				end++
			}
			batch, err := sqlitesql.EncodeReactionBatch(reactions[start:end])
			if err != nil {
				return err
			}
			stmts = append(stmts, st(sqlitesql.EnqueueReactions, t.partition, num(sourceCommitSeq), batch))
			start = end
		}
		t.writes = append(t.writes, stmts...)
		if t.rxKeys == nil {
			t.rxKeys = map[string]bool{}
		}
		for k := range seen {
			t.rxKeys[k] = true
		}
		return nil
	})
}

// duplicateReactionKey turns the primary-key failure of the reactions
// table in a commit batch into CodeDuplicateReactionKey (RX-1); nil when
// err is something else.
func duplicateReactionKey(err error) error {
	if driver.CodeOf(err) != driver.CodeConstraintViolation || !strings.Contains(err.Error(), "_sync_reactions.") {
		return nil
	}
	return &driver.Error{Code: driver.CodeDuplicateReactionKey, OpIndex: -1, Err: err,
		Message: "d1http: commit: a reaction key already exists in the partition; nothing was written", Rule: "RX-1"}
}

// ClaimReactions leases due reactions in one batch (RX-2, RX-3): the due
// rows at their attempts cap are dead-lettered first (RX-4), then up to
// req.Limit other due rows are leased in claim order. The result is sorted
// by createdAt, then key.
func (c *Conn) ClaimReactions(ctx context.Context, partition string, req driver.ClaimRequest) ([]driver.Reaction, error) {
	types, err := sqlitesql.EncodeTypes(req.Types)
	if err != nil {
		return nil, err
	}
	expiry := req.NowMs + req.LeaseMs
	a, err := c.write(ctx, "d1http: claim reactions",
		st(sqlitesql.ClaimDeadLetterExhausted, partition, num(req.NowMs), types, sqlitesql.ExhaustedCode),
		st(d1sql.D1ClaimLease, partition, num(req.NowMs), req.Limit, types, req.Owner, num(expiry)))
	if err != nil {
		return nil, err
	}
	var rows [][]json.RawMessage
	if a.lost {
		// The claim landed but its answer was lost: the rows it leased are
		// the rows leased to the owner by a claim at this now and expiry.
		if rows, err = c.rows(ctx, "d1http: claim reactions", d1sql.D1ClaimRecover, partition, num(expiry), req.Owner, num(req.NowMs), req.Limit); err != nil {
			return nil, err
		}
	} else {
		rows = a.res[1].Results.Rows
	}
	out, err := decodeReactions(rows)
	if err != nil {
		return nil, err
	}
	rxorder.Sort(out) // RX-2
	return out, nil
}

// ClaimDueReactions leases due reactions across partitions (RX-12) in one
// batch — one D1 request whatever the number of partitions, a partition
// list being one JSON parameter (D1 binds at most 100): the due rows at
// their attempts cap are dead-lettered first (RX-4), then up to req.Limit
// other due rows are leased, ranked fairly between partitions. D1 runs
// one batch at a time, so two claims never lease the same row (RX-3). A
// claim whose answer was lost is recovered as ClaimReactions' is. The
// result is sorted by partition, createdAt, key.
func (c *Conn) ClaimDueReactions(ctx context.Context, req driver.DueClaimRequest) ([]driver.PartitionReaction, error) {
	// A list whose JSON would pass D1's 2,000,000-byte bound on one value
	// (10,000 names of 255 bytes do) is claimed in parts of at most
	// duePartsBytes, one batch each, the limit carried over: fair within
	// a part, earlier parts first.
	if size := 0; req.Partitions != nil {
		for i, p := range req.Partitions {
			if size += len(p) + 8; size > duePartsBytes && i > 0 {
				head, tail := req, req
				head.Partitions, tail.Partitions = req.Partitions[:i], req.Partitions[i:]
				out, err := c.ClaimDueReactions(ctx, head)
				if err != nil || len(out) >= req.Limit {
					return out, err
				}
				tail.Limit -= len(out)
				more, err := c.ClaimDueReactions(ctx, tail)
				if err != nil && len(out) == 0 {
					return nil, err
				}
				// With rows of the first part leased, they are handed
				// over and the failed part is left to the next claim.
				out = append(out, more...)
				rxorder.SortAcross(out)
				return out, nil
			}
		}
	}
	types, err := sqlitesql.EncodeTypes(req.Types)
	if err != nil {
		return nil, err
	}
	parts, err := sqlitesql.EncodeTypes(req.Partitions)
	if err != nil {
		return nil, err
	}
	expiry := req.NowMs + req.LeaseMs
	a, err := c.write(ctx, "d1http: claim due reactions",
		st(sqlitesql.ClaimDeadLetterExhaustedAcross, num(req.NowMs), types, sqlitesql.ExhaustedCode, parts),
		st(d1sql.D1ClaimLeaseAcross, num(req.NowMs), req.Limit, types, req.Owner, num(expiry), parts))
	if err != nil {
		return nil, err
	}
	var rows [][]json.RawMessage
	if a.lost {
		if rows, err = c.rows(ctx, "d1http: claim due reactions", d1sql.D1ClaimRecoverAcross, num(expiry), req.Owner, num(req.NowMs), req.Limit); err != nil {
			return nil, err
		}
	} else {
		rows = a.res[1].Results.Rows
	}
	out := make([]driver.PartitionReaction, 0, len(rows))
	for _, r := range rows {
		if len(r) == 0 {
			return nil, driver.Errorf(driver.CodeInternal, "d1http: a claimed reaction has no columns")
		}
		p, err := rawString(r[0])
		if err != nil {
			return nil, err
		}
		rs, err := decodeReactions([][]json.RawMessage{r[1:]})
		if err != nil {
			return nil, err
		}
		out = append(out, driver.PartitionReaction{Partition: p, Reaction: rs[0]})
	}
	rxorder.SortAcross(out) // RX-12
	return out, nil
}

// CompleteReaction marks a reaction leased to owner completed (RX-5).
func (c *Conn) CompleteReaction(ctx context.Context, partition, key, owner string, nowMs int64) (bool, error) {
	return c.writeChanged(ctx, "d1http: complete reaction", st(sqlitesql.CompleteReaction, partition, key, owner, num(nowMs)))
}

// ExtendReactionLease moves the lease of a reaction leased to owner to
// nowMs + leaseMs (RX-5).
func (c *Conn) ExtendReactionLease(ctx context.Context, partition, key, owner string, nowMs, leaseMs int64) (bool, error) {
	return c.writeChanged(ctx, "d1http: extend reaction lease",
		st(sqlitesql.ExtendReactionLease, partition, key, owner, num(nowMs), num(nowMs+leaseMs)))
}

// FailReaction records a failed attempt of a reaction leased to owner:
// pending at RetryAtMs with Retry, else dead letter at NowMs (RX-6).
func (c *Conn) FailReaction(ctx context.Context, partition, key, owner string, req driver.FailRequest) (bool, error) {
	var details any
	if req.Details != "" {
		details = string(req.Details)
	}
	if req.Retry {
		return c.writeChanged(ctx, "d1http: fail reaction", st(sqlitesql.FailReactionRetry, partition, key, owner,
			num(req.NowMs), num(req.RetryAtMs), req.Code, details))
	}
	return c.writeChanged(ctx, "d1http: fail reaction", st(sqlitesql.FailReactionDead, partition, key, owner, num(req.NowMs), req.Code, details))
}

// RetryReaction turns a dead letter into pending with attempts 0 (RX-7).
func (c *Conn) RetryReaction(ctx context.Context, partition, key string, nowMs int64) (bool, error) {
	return c.writeChanged(ctx, "d1http: retry reaction", st(sqlitesql.RetryReaction, partition, key, num(nowMs)))
}

// ListReactions lists reactions newest first (createdAt desc, key desc),
// each status read from its list index, at most q.Limit (RX-8).
func (c *Conn) ListReactions(ctx context.Context, partition string, q driver.ReactionListQuery) ([]driver.Reaction, error) {
	args, err := sqlitesql.ListArgs(partition, q)
	if err != nil {
		return nil, err
	}
	if q.AfterKey != "" {
		args[len(args)-1] = num(q.AfterCreatedAtMs) // exact beyond 2^53 in JSON (VAL-1)
	}
	rows, err := c.rows(ctx, "d1http: list reactions", d1sql.D1ListReactions, args...)
	if err != nil {
		return nil, err
	}
	return decodeReactions(rows)
}

// GetReaction reads one reaction by its primary key (RX-11).
func (c *Conn) GetReaction(ctx context.Context, partition, key string) (driver.Reaction, bool, error) {
	rows, err := c.rows(ctx, "d1http: read a reaction", d1sql.D1GetReaction, partition, key)
	if err != nil {
		return driver.Reaction{}, false, err
	}
	rs, err := decodeReactions(rows)
	if err != nil || len(rs) == 0 {
		return driver.Reaction{}, false, err
	}
	return rs[0], true, nil
}

// PruneReactions deletes at most req.Limit terminal reactions, oldest
// first, in one batch, and counts them per status (RX-9). It touches
// nothing but reactions (RX-10).
func (c *Conn) PruneReactions(ctx context.Context, partition string, req driver.ReactionPruneRequest) (map[driver.ReactionStatus]int64, error) {
	note := "note-" + newToken()
	a, err := c.write(ctx, "d1http: prune reactions",
		st(d1sql.D1PruneCompleted, partition, num(req.CompletedBeforeMs), num(req.DeadLetterBeforeMs), req.Limit),
		st(d1sql.D1PruneNote, note, time.Now().UnixMilli()),
		st(d1sql.D1PruneDeadLetters, partition, num(req.DeadLetterBeforeMs), req.Limit, note))
	if err != nil {
		return nil, err
	}
	if !a.lost {
		return map[driver.ReactionStatus]int64{driver.ReactionCompleted: a.res[0].Meta.Changes,
			driver.ReactionDeadLetter: a.res[2].Meta.Changes}, nil
	}
	rows, err := c.rows(ctx, "d1http: prune reactions", d1sql.D1NoteCount, note)
	if err != nil {
		return nil, err
	}
	if len(rows) != 1 {
		return nil, driver.Errorf(driver.CodeInternal, "d1http: prune reactions: the batch landed but its note is missing")
	}
	completed, err := rawInt(rows[0][0])
	if err != nil {
		return nil, driver.Errorf(driver.CodeInternal, "d1http: prune reactions: malformed note")
	}
	return map[driver.ReactionStatus]int64{driver.ReactionCompleted: completed, driver.ReactionDeadLetter: a.n}, nil
}

// writeChanged sends one statement as a batch and reports whether it
// changed a row (the owner operations' true/false, RX-5), also when the
// answer was lost after the batch landed.
func (c *Conn) writeChanged(ctx context.Context, what string, s stmt) (bool, error) {
	a, err := c.write(ctx, what, s)
	if err != nil {
		return false, err
	}
	if a.lost {
		return a.n == 1, nil
	}
	return a.res[0].Meta.Changes == 1, nil
}

// decodeReactions decodes rows of d1sql.D1ReactionColumns.
func decodeReactions(rows [][]json.RawMessage) ([]driver.Reaction, error) {
	out := make([]driver.Reaction, 0, len(rows))
	for _, r := range rows {
		if len(r) != 19 {
			return nil, driver.Errorf(driver.CodeInternal, "d1http: a stored reaction has %d columns, want 19", len(r))
		}
		var x driver.Reaction
		var payload, status string
		var attempts, maxAttempts int64
		err := firstErr(
			func() (e error) { x.Key, e = rawString(r[0]); return },
			func() (e error) { x.Type, e = rawString(r[1]); return },
			func() (e error) { payload, e = rawString(r[2]); return },
			func() (e error) { status, e = rawString(r[3]); return },
			func() (e error) { attempts, e = rawInt(r[4]); return },
			func() (e error) { maxAttempts, e = rawInt(r[5]); return },
			func() (e error) { x.SourceCommitSeq, e = rawInt(r[6]); return },
			func() (e error) { x.CreatedAtMs, e = rawInt(r[7]); return },
			func() (e error) { x.AvailableAtMs, e = rawInt(r[8]); return },
			func() (e error) { x.LeaseOwner, e = rawString(r[9]); return },
			func() (e error) { x.LeaseExpiresAtMs, e = rawInt(r[10]); return },
			func() error {
				if string(r[11]) == "null" {
					return nil
				}
				f := &driver.ReactionFailure{}
				code, err := rawString(r[11])
				if err != nil {
					return err
				}
				f.Code = code
				if string(r[12]) != "null" {
					details, err := rawString(r[12])
					if err != nil {
						return err
					}
					f.Details = driver.JSON(details)
				}
				if f.AtMs, err = rawInt(r[13]); err != nil {
					return err
				}
				x.LastFailure = f
				return nil
			},
			func() (e error) { x.UpdatedAtMs, e = rawInt(r[14]); return },
			func() (e error) { x.Version, e = rawInt(r[15]); return },
			func() (e error) { x.SourceClientID, e = rawString(r[16]); return },
			func() (e error) { x.SourceClientCommitID, e = rawString(r[17]); return },
			func() (e error) { x.CompletedAtMs, e = rawInt(r[18]); return },
		)
		if err != nil {
			return nil, driver.Errorf(driver.CodeInternal, "d1http: a stored reaction is malformed")
		}
		x.Payload, x.Status = driver.JSON(payload), driver.ReactionStatus(status)
		x.Attempts, x.MaxAttempts = int(attempts), int(maxAttempts)
		out = append(out, x)
	}
	return out, nil
}
