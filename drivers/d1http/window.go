package d1http

import (
	"context"
	"encoding/json"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/d1http/internal/d1sql"
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
	if _, err := c.table(q.Table); err != nil {
		return nil, err
	}
	key, empty, ok := storelayout.PickKey(q.Filter)
	if !ok {
		return nil, driver.Errorf(driver.CodeScanRequiresScope, "window read requires a scope filter (V-6)")
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
	w := &windowReader{q: q, match: storelayout.NewMatcher(q.Filter, key)}
	for after := q.AfterSeq; !w.done; {
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
		if err := w.read(page); err != nil {
			return nil, err
		}
		if string(rows[0][0]) == "null" || bound >= q.ThroughSeq {
			break // the round reached ThroughSeq
		}
		after = bound
	}
	return w.out, nil
}

// windowReader groups candidate changes into commits and applies the
// stop rule across reads of consecutive seq ranges.
type windowReader struct {
	q       driver.WindowQuery
	match   storelayout.Matcher
	out     []driver.Commit
	matched int
	done    bool
}

// read appends the commits of one candidate result (rows ordered by seq,
// idx) until the stop rule is met (WIN-4).
func (w *windowReader) read(rows [][]json.RawMessage) error {
	var cur *driver.Commit
	flush := func() {
		if cur != nil && len(cur.Changes) > 0 {
			w.out = append(w.out, *cur)
		}
		cur = nil
	}
	bad := func() error { return driver.Errorf(driver.CodeInternal, "d1http: stored change is malformed") }
	for _, r := range rows {
		if len(r) != 11 {
			return bad()
		}
		seq, err := rawInt(r[0])
		if err != nil {
			return bad()
		}
		if cur == nil || cur.Seq != seq {
			flush()
			if w.matched >= w.q.LimitChanges {
				w.done = true
				return nil
			}
			meta := driver.Commit{Seq: seq}
			err := firstErr(
				func() (e error) { meta.ClientID, e = rawString(r[7]); return },
				func() (e error) { meta.ClientCommitID, e = rawString(r[8]); return },
				func() (e error) { meta.ActorID, e = rawString(r[9]); return },
				func() (e error) { meta.CreatedAtMs, e = rawInt(r[10]); return },
			)
			if err != nil {
				return bad()
			}
			cur = &meta
		}
		var rowID, op, scopes string
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
		sc, err := storelayout.DecodeScopes(scopes)
		if err != nil {
			return err
		}
		if !w.match.Match(sc) {
			continue
		}
		ch := driver.Change{Table: w.q.Table, RowID: rowID, Op: driver.Op(op), Scopes: sc}
		if ch.Op == driver.OpUpsert {
			ch.RowVersion = version
			if string(r[5]) != "null" {
				vals, err := rawString(r[5])
				if err != nil {
					return bad()
				}
				if ch.Values, err = driver.DecodeValues([]byte(vals)); err != nil {
					return driver.Wrap(driver.CodeInternal, err, "d1http: decode stored change values")
				}
			}
		}
		cur.Changes = append(cur.Changes, ch)
		w.matched++
	}
	flush()
	if w.matched >= w.q.LimitChanges {
		w.done = true
	}
	return nil
}
