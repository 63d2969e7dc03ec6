package d1http

import (
	"context"
	"encoding/json"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/d1http/internal/d1sql"
	"github.com/syncstore/syncstore/internal/commitwindow"
	"github.com/syncstore/syncstore/internal/sqlitesql"
	"github.com/syncstore/syncstore/internal/storelayout"
)

// ReadCommitWindow returns the commits selected by q, oldest first
// (WIN-1…WIN-7), with the SQL of drivers/sqlite: candidates only from the
// change-scope index for the filter key with the fewest values (WIN-7),
// in rounds cut by WindowBound, so no answer holds more than about
// LimitChanges candidates per value. Each round is one request: a batch,
// which D1 runs as one transaction, of the partition's counters and
// WindowRound (the bound and the candidates up to it in one statement).
// The cursor is checked against the counters of every round's own
// snapshot: AfterSeq below the horizon → CodeCursorExpired (HZ-4), beyond
// the head → CodeCursorAhead (WIN-8), and nothing is returned; so a prune
// that lands between two rounds fails the read instead of leaving a gap.
// Row versions and times come back as text (VAL-1). Errors:
// CodeUnknownTable, CodeCursorExpired, CodeCursorAhead.
func (c *Conn) ReadCommitWindow(ctx context.Context, partition string, q driver.WindowQuery) ([]driver.Commit, error) {
	const what = "d1http: read commit window"
	key, empty, err := commitwindow.Key(q, c.state.Table)
	if err != nil {
		return nil, err
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	if empty {
		// Nothing can match; the cursor is still checked (one request).
		maxSeq, horizon, err := c.partitionSeqs(ctx, partition)
		if err != nil {
			return nil, err
		}
		return nil, driver.CheckWindowCursor(q.AfterSeq, horizon, maxSeq)
	}
	list, err := storelayout.JSONList(q.Filter[key])
	if err != nil {
		return nil, err
	}
	w := commitwindow.New("d1http", q, key)
	for after := q.AfterSeq; !w.Done(); {
		res, err := c.cl.read(ctx, what, st(sqlitesql.SelectPartitionSeqs, partition),
			st(d1sql.D1Window(sqlitesql.WindowRound), partition, q.Table, key, list, num(after), num(q.ThroughSeq), q.LimitChanges))
		if err != nil {
			return nil, err
		}
		maxSeq, horizon, err := decodeSeqs(res[0].Results.Rows)
		if err != nil {
			return nil, err
		}
		if err := driver.CheckWindowCursor(q.AfterSeq, horizon, maxSeq); err != nil {
			return nil, err
		}
		rows := res[1].Results.Rows
		if len(rows) == 0 {
			break // no candidate left in (after, ThroughSeq]
		}
		bound, err := rawInt(rows[0][0])
		if err != nil {
			return nil, driver.Errorf(driver.CodeInternal, "%s: the round's bound is not an integer", what)
		}
		page := make([][]json.RawMessage, len(rows))
		for i, r := range rows {
			page[i] = r[1:]
		}
		if err := windowRead(w, page); err != nil {
			return nil, err
		}
		if string(rows[0][0]) == "null" || bound >= q.ThroughSeq {
			break // the round reached ThroughSeq
		}
		after = bound
	}
	return w.Commits(), nil
}

// windowRead feeds w the candidates of one round (rows ordered by seq,
// idx; whole commits only) until the stop rule is met (WIN-4).
func windowRead(w *commitwindow.Grouper, rows [][]json.RawMessage) error {
	bad := func() error { return driver.Errorf(driver.CodeInternal, "d1http: stored change is malformed") }
	for _, r := range rows {
		if len(r) != 11 {
			return bad()
		}
		seq, err := rawInt(r[0])
		if err != nil {
			return bad()
		}
		start, stop := w.Next(seq)
		if stop {
			return nil
		}
		if start {
			var meta driver.Commit
			err := firstErr(
				func() (e error) { meta.ClientID, e = rawString(r[7]); return },
				func() (e error) { meta.ClientCommitID, e = rawString(r[8]); return },
				func() (e error) { meta.ActorID, e = rawString(r[9]); return },
				func() (e error) { meta.CreatedAtMs, e = rawInt(r[10]); return },
			)
			if err != nil {
				return bad()
			}
			w.Start(seq, meta)
		}
		var rowID, op, scopes, vals string
		var version int64
		err = firstErr(
			func() (e error) { rowID, e = rawString(r[2]); return },
			func() (e error) { op, e = rawString(r[3]); return },
			func() (e error) { scopes, e = rawString(r[4]); return },
			func() (e error) { version, e = rawInt(r[6]); return },
		)
		if err != nil {
			return bad()
		}
		hasVals := string(r[5]) != "null"
		if hasVals && op == string(driver.OpUpsert) {
			if vals, err = rawString(r[5]); err != nil {
				return bad()
			}
		}
		if err := w.Change(rowID, op, scopes, []byte(vals), hasVals, version); err != nil {
			return err
		}
	}
	w.End()
	return nil
}
