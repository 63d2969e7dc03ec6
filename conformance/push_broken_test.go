package conformance_test

import (
	"context"
	"errors"
	"maps"
	"regexp"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// TestPushCasesCatchBrokenDrivers runs the PUSH cases (sync.Store.Push
// over a driver) against wrappers of the SQLite driver that each break
// one promise Push relies on, and checks that exactly the expected rules
// fail: the engine is only as right as the driver
// under it, and the suite says which rule a driver breaks.
func TestPushCasesCatchBrokenDrivers(t *testing.T) {
	match := regexp.MustCompile(`^PUSH-[0-9]+/`)
	runBroken(t, []brokenDriver{
		// A Tx that never sees stored results (TX-3, PR-3): every retry
		// applies again, a reused key is never noticed, hooks run for
		// replays, a landed commit whose answer was lost is applied twice.
		{name: "tx-blind-to-push-results", match: match, want: []string{"PUSH-1", "PUSH-2", "PUSH-6", "PUSH-7"},
			also: []string{"PUSH-9", "PUSH-10", "PUSH-11", "PUSH-12", "PUSH-13", "PUSH-15", "PUSH-17"},
			wrap: func(c driver.Conn) driver.Conn { return &blindResults{connWrap{c}} }},
		// A Tx whose GetRow reports an older server version than stored
		// (ROW-2): base checks and version bumps go wrong.
		{name: "tx-row-version-off-by-one", match: match, want: []string{"PUSH-3", "PUSH-4"},
			also: []string{"PUSH-1", "PUSH-5", "PUSH-6", "PUSH-7", "PUSH-9", "PUSH-10", "PUSH-11", "PUSH-12", "PUSH-13", "PUSH-17", "PUSH-18"},
			wrap: func(c driver.Conn) driver.Conn { return &staleVersions{connWrap{c}} }},
		// CommitRejected that commits what the Tx staged (TX-8): a commit
		// rejected after some of its ops were written is half applied.
		{name: "commit-rejected-keeps-writes", match: match, want: []string{"PUSH-5"}, also: []string{"PUSH-6", "PUSH-9", "PUSH-11", "PUSH-12"},
			wrap: func(c driver.Conn) driver.Conn { return &rejectKeepsWrites{connWrap{c}} }},
		// A Tx whose reads miss its own writes (TX-3): they read what is
		// committed. The hooks then judge the partition without the
		// commit's earlier ops (PUSH-10, PUSH-11) or without the commit
		// they are asked about (PUSH-12).
		{name: "tx-reads-miss-own-writes", match: match, want: []string{"PUSH-10", "PUSH-11", "PUSH-12"},
			wrap: func(c driver.Conn) driver.Conn { return &committedReads{connWrap{c}} }},
		// A driver.PushBeginner that files each row under the next key:
		// its own case fails, and so do the pushes that trust it. (caps
		// not nil: runBroken then adds no wrapper of its own, which would
		// hide BeginPush.)
		{name: "push-beginner-rows-shifted", match: match, want: []string{"PUSH-3"}, caps: []driver.Capability{},
			also: []string{"PUSH-1", "PUSH-2", "PUSH-4", "PUSH-5", "PUSH-6", "PUSH-7", "PUSH-9", "PUSH-11", "PUSH-12", "PUSH-17"},
			wrap: func(c driver.Conn) driver.Conn { return &shiftedPushReads{connWrap{c}} }},
		// A driver that forgets its tombstones (ROW-5): a re-created row
		// is numbered from 1 again, and a stale update lands on it.
		{name: "tombstone-forgotten", match: match, want: []string{"PUSH-18"}, also: []string{"PUSH-4", "PUSH-10"},
			wrap: func(c driver.Conn) driver.Conn { return &forgetsTombstones{connWrap{c}} }},
		// An engine that caps one bound value at 2,000,000 bytes, under a
		// driver that binds a commit's change log as one value and a row
		// over the cap as it is: a push within 4 MiB fails as internal.
		{name: "one-value-capped-at-2MB", match: match, want: []string{"PUSH-17"},
			wrap: func(c driver.Conn) driver.Conn { return &cappedValues{connWrap{c}} }},
	})
}

// cappedValues fails, as an engine error, a Tx write that binds more than
// 2,000,000 bytes of values in one value: a row, or a commit's changes
// taken together.
type cappedValues struct{ connWrap }

type cappedValuesTx struct{ txWrap }

const cappedValueBytes = 2_000_000

func (c *cappedValues) Begin(ctx context.Context, p string) (driver.Tx, error) {
	tx, err := c.Conn.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return &cappedValuesTx{txWrap{tx}}, nil
}

func (t *cappedValuesTx) UpsertRow(ctx context.Context, table string, row driver.Row) error {
	if b, err := driver.EncodeValues(row.Values); err == nil && len(b) > cappedValueBytes {
		return driver.Errorf(driver.CodeInternal, "broken: string or blob too big")
	}
	return t.Tx.UpsertRow(ctx, table, row)
}

func (t *cappedValuesTx) AppendCommit(ctx context.Context, in driver.CommitInput) (int64, error) {
	n := 0
	for _, ch := range in.Changes {
		b, _ := driver.EncodeValues(ch.Values)
		n += len(b)
	}
	if n > cappedValueBytes {
		return 0, driver.Errorf(driver.CodeInternal, "broken: string or blob too big")
	}
	return t.Tx.AppendCommit(ctx, in)
}

// TestGuardedCasesCatchBrokenDrivers runs the GW and PUSH cases against a
// guarded driver made of SQLite and guards checked by reading first —
// correct, so nothing may fail — and against two that each drop one
// guard, whose rules must fail: the GW cases can fail, and a guarded push
// (PUSH-9) is only as right as its guards.
func TestGuardedCasesCatchBrokenDrivers(t *testing.T) {
	match := regexp.MustCompile(`^(PUSH|GW)-[0-9]+/`)
	push := []string{"PUSH-1", "PUSH-2", "PUSH-3", "PUSH-4", "PUSH-5", "PUSH-6", "PUSH-7", "PUSH-10", "PUSH-11", "PUSH-12", "PUSH-13", "PUSH-14"}
	runBroken(t, []brokenDriver{
		{name: "guarded-by-reading", match: match, caps: []driver.Capability{},
			wrap: func(c driver.Conn) driver.Conn { return &readGuarded{connWrap: connWrap{c}} }},
		// A row guard that checks nothing: creates over rows, stale
		// updates and scope moves land as if the rows were as assumed.
		{name: "guard-ignores-the-row", match: match, caps: []driver.Capability{}, want: []string{"GW-2", "PUSH-9"}, also: append(push, "PUSH-18"),
			wrap: func(c driver.Conn) driver.Conn { return &readGuarded{connWrap: connWrap{c}, skipRow: true} }},
		// A row guard that checks the row as stored, not as the Tx left
		// it: a guard over a row the Tx wrote fails, and a stale second
		// update of one row in a push lands (PUSH-10).
		{name: "guard-sees-only-stored-rows", match: match, caps: []driver.Capability{}, want: []string{"GW-1", "GW-2", "PUSH-10"}, also: push,
			wrap: func(c driver.Conn) driver.Conn { return &readGuarded{connWrap: connWrap{c}, storedOnly: true} }},
		// A result guard that checks nothing: the result is kept (first
		// writer wins) but the Tx's writes land — a replay over deleted
		// rows is applied again.
		{name: "guard-ignores-the-stored-result", match: match, caps: []driver.Capability{}, want: []string{"GW-3", "PUSH-9"}, also: push,
			wrap: func(c driver.Conn) driver.Conn { return &readGuarded{connWrap: connWrap{c}, skipResult: true} }},
	})
}

// readGuarded is a driver.GuardedBeginner over a Conn without guarded
// writes: each guard is checked by reading in the Tx before the write
// (correct, if no faster than reading first), unless skipped.
type readGuarded struct {
	connWrap
	skipRow, skipResult bool
	// storedOnly: a row guard reads the row outside the Tx.
	storedOnly bool
}

func (c *readGuarded) BeginGuarded(ctx context.Context, p string) (driver.GuardedTx, error) {
	tx, err := c.Conn.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return &readGuardedTx{txWrap{tx}, c}, nil
}

type readGuardedTx struct {
	txWrap
	c *readGuarded
}

func (t *readGuardedTx) UpsertRowGuarded(ctx context.Context, table string, row driver.Row, base int64) error {
	get := t.GetRow
	if t.c.storedOnly {
		get = func(ctx context.Context, table, id string) (driver.Row, bool, error) {
			return t.c.Conn.GetRow(ctx, t.Partition(), table, id)
		}
	}
	cur, found, err := get(ctx, table, row.ID)
	if err != nil {
		return err
	}
	if !t.c.skipRow && (cur.ServerVersion != base || (found && !maps.Equal(cur.Scopes, row.Scopes))) {
		return driver.Errorf(driver.CodeWriteConflict, "broken: the row is not as guarded")
	}
	if !t.c.skipRow && base == 0 { // GW-1: base 0 is no row and no tombstone (ROW-5)
		if v, err := t.RowTombstone(ctx, table, row.ID); err != nil || v != 0 {
			return errors.Join(err, driver.Errorf(driver.CodeWriteConflict, "broken: the row id has a tombstone"))
		}
	}
	return t.UpsertRow(ctx, table, row)
}

func (t *readGuardedTx) PutPushResultGuarded(ctx context.Context, clientID, clientCommitID string, r driver.PushResult) error {
	_, found, err := t.GetPushResult(ctx, clientID, clientCommitID)
	if err != nil {
		return err
	}
	if found && !t.c.skipResult {
		return driver.Errorf(driver.CodeWriteConflict, "broken: a result is stored")
	}
	return t.PutPushResult(ctx, clientID, clientCommitID, r)
}

type blindResults struct{ connWrap }

func (c *blindResults) Begin(ctx context.Context, p string) (driver.Tx, error) {
	tx, err := c.Conn.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return blindResultsTx{txWrap{tx}}, nil
}

type blindResultsTx struct{ txWrap }

func (blindResultsTx) GetPushResult(context.Context, string, string) (driver.PushResult, bool, error) {
	return driver.PushResult{}, false, nil
}

type staleVersions struct{ connWrap }

func (c *staleVersions) Begin(ctx context.Context, p string) (driver.Tx, error) {
	tx, err := c.Conn.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return staleVersionsTx{txWrap{tx}}, nil
}

type staleVersionsTx struct{ txWrap }

func (t staleVersionsTx) GetRow(ctx context.Context, table, id string) (driver.Row, bool, error) {
	r, found, err := t.Tx.GetRow(ctx, table, id)
	if found {
		r.ServerVersion--
	}
	return r, found, err
}

type rejectKeepsWrites struct{ connWrap }

func (c *rejectKeepsWrites) Begin(ctx context.Context, p string) (driver.Tx, error) {
	tx, err := c.Conn.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return rejectKeepsWritesTx{txWrap{tx}}, nil
}

type rejectKeepsWritesTx struct{ txWrap }

func (t rejectKeepsWritesTx) CommitRejected(ctx context.Context, clientID, clientCommitID string, r driver.PushResult) error {
	if err := t.Tx.PutPushResult(ctx, clientID, clientCommitID, r); err != nil {
		return err
	}
	return t.Tx.Commit(ctx)
}

type shiftedPushReads struct{ connWrap }

func (c *shiftedPushReads) BeginPush(ctx context.Context, p, clientID, commitID string, keys []driver.RowKey) (driver.Tx, driver.PushRead, error) {
	tx, read, err := c.Conn.(driver.PushBeginner).BeginPush(ctx, p, clientID, commitID, keys)
	if err != nil {
		return nil, read, err
	}
	if n := len(read.Rows); n > 1 {
		read.Rows = append(read.Rows[1:], read.Rows[0])
		read.Found = append(read.Found[1:], read.Found[0])
	}
	return txWrap{tx}, read, nil
}

type committedReads struct{ connWrap }

func (c *committedReads) Begin(ctx context.Context, p string) (driver.Tx, error) {
	tx, err := c.Conn.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return committedReadsTx{txWrap{tx}, c.Conn}, nil
}

type committedReadsTx struct {
	txWrap
	conn driver.Conn
}

func (t committedReadsTx) GetRow(ctx context.Context, table, id string) (driver.Row, bool, error) {
	return t.conn.GetRow(ctx, t.Partition(), table, id)
}

func (t committedReadsTx) ScanRows(ctx context.Context, q driver.ScanQuery) ([]driver.Row, error) {
	return t.conn.ScanRows(ctx, t.Partition(), q)
}

// forgetsTombstones is a driver whose Tx reads every row id as never
// deleted (RowTombstone 0): as if DeleteRow kept no tombstone.
type forgetsTombstones struct{ connWrap }

func (c *forgetsTombstones) Begin(ctx context.Context, p string) (driver.Tx, error) {
	tx, err := c.Conn.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return forgetsTombstonesTx{txWrap{tx}}, nil
}

type forgetsTombstonesTx struct{ txWrap }

func (forgetsTombstonesTx) RowTombstone(context.Context, string, string) (int64, error) {
	return 0, nil
}
