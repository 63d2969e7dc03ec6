package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/commitwindow"
	"github.com/syncstore/syncstore/internal/sqlrows"
	"github.com/syncstore/syncstore/internal/storelayout"
)

// reads are the Conn's reads on a transaction (nil: committed data).
func (c *Conn) reads() sqlrows.Reads[*sql.Tx] {
	return sqlrows.Reads[*sql.Tx]{Row: c.getRow, Rows: c.scanRows, PushResult: c.getPushResult, Index: c.scanRowsByIndex}
}

// getRow reads one row on tx (nil: committed data).
func (c *Conn) getRow(ctx context.Context, tx *sql.Tx, partition, table, id string) (driver.Row, bool, error) {
	x, err := c.state.Table(table)
	if err != nil {
		return driver.Row{}, false, err
	}
	dest := x.scanDest()
	err = c.queryRow(ctx, tx, x.get, []any{partition, id}, dest...)
	if err == sql.ErrNoRows {
		return driver.Row{}, false, nil
	}
	if err != nil {
		return driver.Row{}, false, err
	}
	row, err := x.decodeRow(dest)
	if err != nil {
		return driver.Row{}, false, err
	}
	return row, true, nil
}

// scanRows runs a scan on tx (nil: committed data), SCAN-1…SCAN-5.
// Candidates come from the scope index of the driving filter key (the one
// with the fewest values), walked in id order from AfterRowID: one value
// is one index range read that stops at the limit; a list of values is a
// UNION ALL of such ranges, each stopping at the limit, merged and cut to
// the limit — the cost is bounded by values × limit, never by the table.
// The other keys are IN predicates. Errors: CodeUnknownTable.
func (c *Conn) scanRows(ctx context.Context, tx *sql.Tx, partition string, q driver.ScanQuery) ([]driver.Row, error) {
	x, err := c.state.Table(q.Table)
	if err != nil {
		return nil, err
	}
	key, empty, ok := storelayout.PickKey(q.Filter)
	if !ok {
		return nil, driver.Errorf(driver.CodeScanRequiresScope, "scan requires a scope filter (V-6)")
	}
	if empty {
		return nil, nil
	}
	for k := range q.Filter {
		if _, known := x.scopes[k]; !known {
			return nil, nil
		}
	}
	query, args, err := c.scanSQL(x, partition, q, key)
	if err != nil {
		return nil, err
	}
	return c.readRows(ctx, tx, x, query, args, "mysql: scan rows")
}

// scanSQL returns the page query of a scan driven by filter key key (see
// scanRows) and its arguments.
func (c *Conn) scanSQL(x *table, partition string, q driver.ScanQuery, key string) (string, []any, error) {
	t := x.def
	pk := quoteIdent(t.PrimaryKey)
	col := x.scopes[key]
	from := " FROM " + quoteIdent(t.Name) + " FORCE INDEX (" + quoteIdent(scopeIndexName(t, col)) + ")"
	// others are the predicates of the other filter keys, with their args.
	var others strings.Builder
	var otherArgs []any
	for _, o := range x.others[key] {
		vals, present := q.Filter[o]
		if !present {
			continue
		}
		vals = dedupe(vals)
		if len(vals) > maxInlineValues {
			list, err := storelayout.JSONList(vals)
			if err != nil {
				return "", nil, err
			}
			others.WriteString(" AND " + quoteIdent(x.scopes[o]) + " IN (SELECT " + jsonAlias + "." + jsonValueColumn + " FROM " + c.jsonValues() + ")")
			otherArgs = append(otherArgs, list)
			continue
		}
		others.WriteString(" AND " + quoteIdent(x.scopes[o]) + " IN (" + qmarks(len(vals)) + ")")
		for _, v := range vals {
			otherArgs = append(otherArgs, v)
		}
	}
	branch := "SELECT " + x.sel + from + " WHERE " + quoteIdent(partitionColumn) + " = ? AND " + quoteIdent(col) + " = ? AND " +
		pk + " > ?" + others.String() + " ORDER BY " + pk + " LIMIT ?"
	branchArgs := func(v string) []any {
		return append(append([]any{partition, v, q.AfterRowID}, otherArgs...), int64(q.Limit))
	}
	vals := dedupe(q.Filter[key])
	var query string
	var args []any
	switch {
	case len(vals) == 1:
		query, args = branch, branchArgs(vals[0])
	case len(vals) <= maxInlineValues:
		// Each value's index range, cut at the limit, then merged: the
		// cost is bounded by values × limit.
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = "(" + branch + ")"
			args = append(args, branchArgs(v)...)
		}
		query = "SELECT * FROM (" + strings.Join(parts, " UNION ALL ") + ") AS u ORDER BY " + pk + " LIMIT ?"
		args = append(args, int64(q.Limit))
	default:
		// A long list travels as one JSON parameter; each value is an
		// index lookup, the matches after AfterRowID are sorted.
		list, err := storelayout.JSONList(vals)
		if err != nil {
			return "", nil, err
		}
		query = "SELECT " + x.sel + " FROM " + c.jsonValues() + " STRAIGHT_JOIN " + quoteIdent(t.Name) + " FORCE INDEX (" +
			quoteIdent(scopeIndexName(t, col)) + ") ON " + quoteIdent(partitionColumn) + " = ? AND " + quoteIdent(col) +
			" = " + jsonAlias + "." + jsonValueColumn + " AND " + pk + " > ?" + " WHERE TRUE" + others.String() + " ORDER BY " + pk + " LIMIT ?"
		args = append(append([]any{list, partition, q.AfterRowID}, otherArgs...), int64(q.Limit))
	}
	return query, args, nil
}

// maxInlineValues is the longest value list bound as one parameter per
// value; a longer one is bound as one JSON array (jsonValues), so any
// length works (V-6) within MySQL's 65,535 parameters.
const maxInlineValues = 32

// jsonValueColumn is the column of jsonValues' rows and jsonAlias their
// table's alias; both "_sync" prefixed, so they never collide with an
// application column or table (SCH-2): a table named "j" joined to a list
// aliased j was "not unique table/alias" (SCAN-1/tables-named-like-sql-aliases).
const (
	jsonValueColumn = "_sync_v"
	jsonAlias       = "_sync_j"
)

// jsonValues returns a table expression aliased jsonAlias with one row per string of
// the JSON array bound to its one parameter, in the NO PAD binary
// collation. 1,024 characters are kept: a longer value could not equal a
// stored scope value (≤ 255 characters, ≤ 1,020 bytes) once truncated
// either.
func (c *Conn) jsonValues() string {
	return "JSON_TABLE(?, '$[*]' COLUMNS (" + jsonValueColumn + " VARCHAR(1024) CHARACTER SET utf8mb4 COLLATE " + c.coll + " PATH '$')) AS " + jsonAlias
}

// dedupe returns vs without repeated values, order kept.
func dedupe(vs []string) []string {
	seen := make(map[string]bool, len(vs))
	out := vs[:0:0]
	for _, v := range vs {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// getPushResult reads a stored push result on tx (nil: committed data);
// an undecodable one is CodeIdempotencyCacheMiss (PR-5, via
// driver.DecodePushResult).
func (c *Conn) getPushResult(ctx context.Context, tx *sql.Tx, partition, clientID, clientCommitID string) (driver.PushResult, bool, error) {
	var text []byte
	err := c.queryRow(ctx, tx, selectPushResult, []any{partition, clientID, clientCommitID}, &text)
	if err == sql.ErrNoRows {
		return driver.PushResult{}, false, nil
	}
	if err != nil {
		return driver.PushResult{}, false, err
	}
	res, err := driver.DecodePushResult(text)
	if err != nil {
		return driver.PushResult{}, false, err
	}
	return res, true, nil
}

// readSeq runs a one-value sequence query; no row (or NULL) reads as 0.
func (c *Conn) readSeq(ctx context.Context, tx *sql.Tx, q string, args ...any) (int64, error) {
	var v sql.NullInt64
	err := c.queryRow(ctx, tx, q, args, &v)
	if err == sql.ErrNoRows {
		return 0, nil
	}
	return v.Int64, err
}

// MaxCommitSeq returns the highest committed seq, 0 if none (SEQ-5). It
// is kept in _sync_partitions, so pruning never lowers it.
func (c *Conn) MaxCommitSeq(ctx context.Context, partition string) (int64, error) {
	return c.readSeq(ctx, nil, selectMaxSeq, partition)
}

// HorizonSeq returns the partition's pruning horizon, 0 by default (HZ-1).
func (c *Conn) HorizonSeq(ctx context.Context, partition string) (int64, error) {
	return c.readSeq(ctx, nil, selectHorizon, partition)
}

// CommitSeqBefore returns the largest retained seq created strictly
// before atMs, else 0 (HZ-3).
func (c *Conn) CommitSeqBefore(ctx context.Context, partition string, atMs int64) (int64, error) {
	return c.readSeq(ctx, nil, commitSeqBefore, partition, atMs)
}

// SetHorizonSeq raises the horizon to seq (HZ-1): a seq at or below the
// current horizon is a no-op; a seq above MaxCommitSeq →
// CodeInvalidHorizon. max_seq only grows, so checking it first is safe;
// the horizon lives in its own table, so this never waits for a Tx of
// the partition.
func (c *Conn) SetHorizonSeq(ctx context.Context, partition string, seq int64) error {
	maxSeq, err := c.MaxCommitSeq(ctx, partition)
	if err != nil {
		return err
	}
	if raise, err := commitwindow.RaiseHorizon(seq, maxSeq, 0); !raise {
		return err
	}
	return c.execRetry(ctx, "mysql: set horizon", raiseHorizon, partition, seq)
}

// PruneCommitsThrough deletes the commits ≤ seq with their changes and
// change-scope entries in one transaction and returns how many commits it
// removed; seq > horizon → CodeInvalidHorizon. Change-scope entries are
// deleted by their primary-key prefix (table, variable, value) with
// seq ≤ bound, one statement per distinct scope of the pruned changes:
// the cost follows what is pruned, never the store. Rows, push results,
// client records and max seq are untouched (HZ-2).
func (c *Conn) PruneCommitsThrough(ctx context.Context, partition string, seq int64) (int64, error) {
	horizon, err := c.HorizonSeq(ctx, partition)
	if err != nil {
		return 0, err
	}
	if seq > horizon {
		return 0, driver.Errorf(driver.CodeInvalidHorizon, "prune bound %d is past the horizon %d (HZ-2)", seq, horizon)
	}
	var n int64
	err = c.writeTx(ctx, "mysql: prune commits", func(tx *sql.Tx) error {
		type key struct{ tbl, variable, value string }
		groups := map[key]bool{}
		rows, err := c.query(ctx, tx, selectPrunedScopes, []any{partition, seq}, "mysql: prune commits")
		if err != nil {
			return err
		}
		for rows.Next() {
			var tbl string
			var scopes []byte
			if err := rows.Scan(&tbl, &scopes); err != nil {
				rows.Close()
				return err
			}
			sc, err := storelayout.DecodeScopes(string(scopes))
			if err != nil {
				rows.Close()
				return err
			}
			for k, v := range sc {
				groups[key{tbl, k, v}] = true
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for g := range groups {
			if _, err := c.exec(ctx, tx, pruneChangeScopes, partition, g.tbl, g.variable, g.value, seq); err != nil {
				return err
			}
		}
		if _, err := c.exec(ctx, tx, pruneChanges, partition, seq); err != nil {
			return err
		}
		res, err := c.exec(ctx, tx, pruneCommits, partition, seq)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// encodeScopes encodes a change's scopes as the JSON object stored in
// _sync_changes.scopes.
func encodeScopes(s driver.Scopes) ([]byte, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, driver.Wrap(driver.CodeInternal, err, "encode change scopes")
	}
	return b, nil
}
