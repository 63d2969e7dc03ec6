package d1http

import (
	"context"
	"encoding/json"

	"github.com/syncstore/syncstore/driver"
	d "github.com/syncstore/syncstore/internal/sqlitedialect"
)

// ReadCommitWindow returns the commits selected by q, oldest first
// (WIN-1…WIN-7), as drivers/sqlite does with the same SQL: candidates
// only from the change-scope index for the filter key with the fewest
// values (WIN-7), in rounds bounded by WindowBound, so no answer holds
// more than about LimitChanges candidates per value. Row versions and times
// come back as text (VAL-1). Errors: CodeUnknownTable.
func (c *Conn) ReadCommitWindow(ctx context.Context, partition string, q driver.WindowQuery) ([]driver.Commit, error) {
	if _, err := c.table(q.Table); err != nil {
		return nil, err
	}
	if q.LimitChanges < 1 {
		return nil, driver.Errorf(driver.CodeInvalidLimit, "window limit must be 1…10000 (V-5)")
	}
	key, empty, ok := d.PickKey(q.Filter)
	if !ok {
		return nil, driver.Errorf(driver.CodeScanRequiresScope, "window read requires a scope filter (V-6)")
	}
	if empty || q.ThroughSeq <= q.AfterSeq {
		return nil, nil
	}
	w := &windowReader{q: q, match: d.NewMatcher(q.Filter, key)}
	// Every read goes in rounds bounded by WindowBound (one value included):
	// an HTTP answer cannot be cut short the way a cursor can.
	vals := q.Filter[key]
	list, err := d.JSONList(vals)
	if err != nil {
		return nil, err
	}
	for after := q.AfterSeq; after < q.ThroughSeq && !w.done; {
		args := []any{partition, q.Table, key, list, num(after), num(q.ThroughSeq)}
		rows, err := c.rows(ctx, "d1http: read commit window", d.WindowBound, append(args, q.LimitChanges)...)
		if err != nil {
			return nil, err
		}
		through := q.ThroughSeq
		if len(rows) == 1 && string(rows[0][0]) != "null" {
			if b, err := rawInt(rows[0][0]); err == nil && b < through {
				through = b
			}
		}
		args[5] = num(through)
		page, err := c.rows(ctx, "d1http: read commit window", d.D1Window(d.WindowList), args...)
		if err != nil {
			return nil, err
		}
		if err := w.read(page); err != nil {
			return nil, err
		}
		after = through
	}
	return w.out, nil
}

// windowReader groups candidate changes into commits and applies the
// stop rule across reads of consecutive seq ranges.
type windowReader struct {
	q       driver.WindowQuery
	match   d.Matcher
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
		sc, err := d.DecodeScopes(scopes)
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
