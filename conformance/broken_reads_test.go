package conformance_test

import (
	"context"
	"regexp"

	"testing"

	"github.com/syncstore/syncstore/driver"
)

// TestReadCasesCatchBrokenDrivers runs the cases of LOG, CR-6 and ADM-3
// against wrappers of the SQLite driver that each break one promise of
// whole-commit reads, client-cursor acks or the admin row listing, and
// checks that the broken rule fails and nothing else does.
func TestReadCasesCatchBrokenDrivers(t *testing.T) {
	logs, acks, rows := regexp.MustCompile(`^LOG-`), regexp.MustCompile(`^CR-6/`), regexp.MustCompile(`^ADM-3/`)
	admin := []driver.Capability{driver.CapAdmin}
	broken := []brokenDriver{
		// LOG-1 (each commit whole) and the race case, which compares every
		// read with the model, read at small limits too.
		{name: "log-splits-the-commit-at-the-limit", want: []string{"LOG-2"}, also: []string{"LOG-1", "LOG-3"}, match: logs,
			wrap: func(c driver.Conn) driver.Conn { return &logSplit{connWrap{c}} }},
		{name: "log-reads-one-table", want: []string{"LOG-1"}, also: []string{"LOG-2", "LOG-3"}, match: logs,
			wrap: func(c driver.Conn) driver.Conn { return &logOneTable{connWrap{c}} }},
		{name: "log-serves-expired-cursors-from-the-horizon", want: []string{"LOG-3"}, match: logs,
			wrap: func(c driver.Conn) driver.Conn { return &logServeExpired{connWrap{c}} }},
		{name: "log-keeps-empty-commits", want: []string{"LOG-1"}, also: []string{"LOG-2", "LOG-3"}, match: logs,
			wrap: func(c driver.Conn) driver.Conn { return &logKeepsEmpty{connWrap{c}} }},
		{name: "ack-lowers-the-cursor", want: []string{"CR-6"}, match: acks,
			wrap: func(c driver.Conn) driver.Conn { return &ackSets{connWrap{c}} }},
		{name: "ack-ignores-the-actor", want: []string{"CR-6"}, match: acks,
			wrap: func(c driver.Conn) driver.Conn { return &ackAnyActor{connWrap{c}} }},
		{name: "ack-past-the-head", want: []string{"CR-6"}, match: acks,
			wrap: func(c driver.Conn) driver.Conn { return &ackPastHead{connWrap{c}} }},
		{name: "ack-rewrites-the-record-it-read", want: []string{"CR-6"}, match: acks,
			wrap: func(c driver.Conn) driver.Conn { return &ackGetPut{connWrap{c}} }},
		{name: "list-rows-after-inclusive", caps: admin, want: []string{"ADM-3"}, match: rows,
			wrap: func(c driver.Conn) driver.Conn { return &rowsInclusive{admForward{connWrap{c}, c.(driver.AdminConn)}} }},
		{name: "list-rows-of-the-first-scope-only", caps: admin, want: []string{"ADM-3"}, match: rows,
			wrap: func(c driver.Conn) driver.Conn { return &rowsOneScope{admForward{connWrap{c}, c.(driver.AdminConn)}} }},
	}
	runBroken(t, broken)
}

// ---- LOG-2: the last commit is cut at the limit ----

type logSplit struct{ connWrap }

func (c *logSplit) ReadCommits(ctx context.Context, p string, q driver.CommitsQuery) ([]driver.Commit, error) {
	out, err := c.Conn.ReadCommits(ctx, p, q)
	n := 0
	for i := range out {
		if n+len(out[i].Changes) > q.LimitChanges {
			out[i].Changes = out[i].Changes[:q.LimitChanges-n]
			return out[:i+1], err
		}
		n += len(out[i].Changes)
	}
	return out, err
}

// ---- LOG-1: a window read in disguise, changes of todos only ----

type logOneTable struct{ connWrap }

func (c *logOneTable) ReadCommits(ctx context.Context, p string, q driver.CommitsQuery) ([]driver.Commit, error) {
	out, err := c.Conn.ReadCommits(ctx, p, q)
	var kept []driver.Commit
	for _, cm := range out {
		var chs []driver.Change
		for _, ch := range cm.Changes {
			if ch.Table == "todos" {
				chs = append(chs, ch)
			}
		}
		if len(chs) > 0 {
			cm.Changes = chs
			kept = append(kept, cm)
		}
	}
	return kept, err
}

// ---- LOG-3: a cursor below the horizon is served from the horizon ----

type logServeExpired struct{ connWrap }

func (c *logServeExpired) ReadCommits(ctx context.Context, p string, q driver.CommitsQuery) ([]driver.Commit, error) {
	out, err := c.Conn.ReadCommits(ctx, p, q)
	if driver.CodeOf(err) != driver.CodeCursorExpired {
		return out, err
	}
	hz, herr := c.Conn.HorizonSeq(ctx, p)
	if herr != nil {
		return nil, herr
	}
	q.AfterSeq, q.ThroughSeq = hz, max(q.ThroughSeq, hz)
	return c.Conn.ReadCommits(ctx, p, q)
}

// ---- LOG-1: commits without changes are returned, empty ----

type logKeepsEmpty struct{ connWrap }

func (c *logKeepsEmpty) ReadCommits(ctx context.Context, p string, q driver.CommitsQuery) ([]driver.Commit, error) {
	out, err := c.Conn.ReadCommits(ctx, p, q)
	if err != nil || len(out) == 0 {
		return out, err
	}
	// The commit before the first one returned, if it lies in the range,
	// comes back empty: an empty commit "kept".
	if prev := out[0].Seq - 1; prev > q.AfterSeq {
		out = append([]driver.Commit{{Seq: prev}}, out...)
	}
	return out, nil
}

// ---- CR-6: the ack sets the cursor instead of raising it ----

type ackSets struct{ connWrap }

func (c *ackSets) AckClientCursor(ctx context.Context, p, clientID, actorID string, cursor, atMs int64) (bool, error) {
	rec, found, err := c.Conn.GetClientRecord(ctx, p, clientID)
	if err != nil || !found || rec.ActorID != actorID {
		return false, err
	}
	if ok, err := c.Conn.AckClientCursor(ctx, p, clientID, actorID, cursor, atMs); !ok || err != nil {
		return ok, err
	}
	rec, _, err = c.Conn.GetClientRecord(ctx, p, clientID)
	if err != nil {
		return false, err
	}
	rec.Cursor = cursor
	return true, c.Conn.PutClientRecord(ctx, p, rec)
}

// ---- CR-6: the ack raises the record whatever actor it is bound to ----

type ackAnyActor struct{ connWrap }

func (c *ackAnyActor) AckClientCursor(ctx context.Context, p, clientID, actorID string, cursor, atMs int64) (bool, error) {
	rec, found, err := c.Conn.GetClientRecord(ctx, p, clientID)
	if err != nil || !found {
		return false, err
	}
	return c.Conn.AckClientCursor(ctx, p, clientID, rec.ActorID, cursor, atMs)
}

// ---- CR-6: the ack does not check the cursor against the head ----

type ackPastHead struct{ connWrap }

func (c *ackPastHead) AckClientCursor(ctx context.Context, p, clientID, actorID string, cursor, atMs int64) (bool, error) {
	if ok, err := c.Conn.AckClientCursor(ctx, p, clientID, actorID, cursor, atMs); ok || err != nil {
		return ok, err
	}
	rec, found, err := c.Conn.GetClientRecord(ctx, p, clientID)
	if err != nil || !found || rec.ActorID != actorID {
		return false, err
	}
	rec.Cursor, rec.UpdatedAtMs = max(rec.Cursor, cursor), max(rec.UpdatedAtMs, atMs)
	return true, c.Conn.PutClientRecord(ctx, p, rec)
}

// ---- CR-6: an ack made of a read and a write of the whole record ----

// ackGetPut reads the record, then writes it back with the cursor and
// time raised. It models the race a get+put has with a Pull's write: after
// its read it looks again, a bounded number of times, until the record it
// read has been replaced, and then writes its stale copy over the new one.
type ackGetPut struct{ connWrap }

func (c *ackGetPut) AckClientCursor(ctx context.Context, p, clientID, actorID string, cursor, atMs int64) (bool, error) {
	rec, found, err := c.Conn.GetClientRecord(ctx, p, clientID)
	if err != nil || !found || rec.ActorID != actorID {
		return false, err
	}
	head, err := c.Conn.MaxCommitSeq(ctx, p)
	if err != nil || cursor > head {
		return false, err
	}
	for range 200 {
		now, _, err := c.Conn.GetClientRecord(ctx, p, clientID)
		if err != nil {
			return false, err
		}
		if now.WireVersion != rec.WireVersion || now.UpdatedAtMs != rec.UpdatedAtMs {
			break
		}
	}
	rec.Cursor, rec.UpdatedAtMs = max(rec.Cursor, cursor), max(rec.UpdatedAtMs, atMs)
	return true, c.Conn.PutClientRecord(ctx, p, rec)
}

// ---- ADM-3: the admin forwarder, and two broken listings ----

// admForward forwards the admin capability to the SQLite driver's.
type admForward struct {
	connWrap
	a driver.AdminConn
}

func (c *admForward) ListClientRecords(ctx context.Context, p string, q driver.ClientRecordQuery) ([]driver.ClientRecord, error) {
	return c.a.ListClientRecords(ctx, p, q)
}

func (c *admForward) ListCommitMeta(ctx context.Context, p string, before int64, limit int) ([]driver.CommitMeta, error) {
	return c.a.ListCommitMeta(ctx, p, before, limit)
}

func (c *admForward) ScopeActivity(ctx context.Context, p, table string, f driver.ScopeFilter, after, through int64) (driver.ScopeActivity, error) {
	return c.a.ScopeActivity(ctx, p, table, f, after, through)
}

func (c *admForward) RowScopes(ctx context.Context, p, table, id string) (driver.Scopes, bool, error) {
	return c.a.RowScopes(ctx, p, table, id)
}

func (c *admForward) ListRows(ctx context.Context, p, table, after string, limit int) ([]driver.Row, error) {
	return c.a.ListRows(ctx, p, table, after, limit)
}

// rowsInclusive lists the row named by afterRowID again.
type rowsInclusive struct{ admForward }

func (c *rowsInclusive) ListRows(ctx context.Context, p, table, after string, limit int) ([]driver.Row, error) {
	out, err := c.a.ListRows(ctx, p, table, after, limit)
	if err != nil || after == "" {
		return out, err
	}
	r, found, err := c.Conn.GetRow(ctx, p, table, after)
	if err != nil || !found {
		return out, err
	}
	out = append([]driver.Row{r}, out...)
	return out[:min(len(out), limit)], nil
}

// rowsOneScope lists only the rows sharing the first row's scopes, as a
// scan of one scope would.
type rowsOneScope struct{ admForward }

func (c *rowsOneScope) ListRows(ctx context.Context, p, table, after string, limit int) ([]driver.Row, error) {
	out, err := c.a.ListRows(ctx, p, table, after, limit)
	if err != nil || len(out) == 0 {
		return out, err
	}
	var kept []driver.Row
	for _, r := range out {
		if len(r.Scopes) == len(out[0].Scopes) && scopesEqual(r.Scopes, out[0].Scopes) {
			kept = append(kept, r)
		}
	}
	return kept, nil
}

func scopesEqual(a, b driver.Scopes) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
