package d1http

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/d1http/internal/d1sql"
	"github.com/syncstore/syncstore/internal/sqlitesql"
	"github.com/syncstore/syncstore/internal/txstate"
)

// Guarded writes (driver.GuardedBeginner, GW-1…GW-3; PUSH-9): a push is
// written without reading its rows first, so that — its Begin served from
// the Conn's last commit in the partition — it is ONE request, its Commit
// batch. Each guard is a statement of that batch, placed before the
// writes it guards: it sees the Tx's earlier writes (TX-3) and, when it
// does not hold, fails the whole batch: nothing is written.

var (
	_ driver.GuardedBeginner = (*Conn)(nil)
	_ driver.GuardedTx       = (*Tx)(nil)
)

// BeginGuarded is Begin (driver.GuardedBeginner): it sends nothing when
// the Conn knows the partition's stamp and max seq.
func (c *Conn) BeginGuarded(ctx context.Context, partition string) (driver.GuardedTx, error) {
	return txstate.Guarded(c.Begin(ctx, partition))
}

// UpsertRowGuarded stages UpsertRow(table, row) on the guard that the row
// is at version base (0: no row) and, for base > 0, that its scope columns
// hold row's scope values (GW-1). Nothing is read: the guard goes into the
// batch and a row that fails it fails Commit, nothing written (GW-2).
// Adjacent guarded creates (base 0) of a table are ONE multi-row INSERT
// without ON CONFLICT (D1Upserts.InsertSQL): a row present fails it on the
// primary key — no statement more than W1's upsert. Adjacent guarded
// updates share ONE guard statement (d1sql.D1RowGuard) before their ONE
// multi-row upsert. A row already in the statement starts a new one, so
// every guard sees the rows written before it. Unlike UpsertRow, it does
// not read the table's unique indexes: a collision fails Commit with
// CodeConstraintViolation, nothing written. Errors: those of UpsertRow;
// CodeInvalidArgument for base < 0.
func (t *Tx) UpsertRowGuarded(ctx context.Context, table string, row driver.Row, base int64) error {
	return t.op(func() error {
		x, u, err := t.c.tableUpserts(table)
		if err != nil {
			return err
		}
		if base < 0 {
			return driver.Errorf(driver.CodeInvalidArgument, "d1http: a guarded upsert's base version %d is negative", base)
		}
		args, err := d1sql.D1RowArgs(x, t.partition, row)
		if err != nil {
			return err
		}
		if err := checkRowSize(x, row, args[1].(string)); err != nil {
			return err
		}
		if base == 0 {
			if slices.Contains(t.run.ids, row.ID) || !t.extendRun(x, u, args, row.ID, true) {
				t.newRun(x, u, args, row.ID, true)
			}
			t.guardNoTombstone(x, row.ID)
		} else {
			entry, err := d1sql.D1RowGuardEntry(x, row, base)
			if err != nil {
				return err
			}
			t.stageGuarded(x, u, args, row.ID, entry)
		}
		t.ov.put(table, row)
		t.afterRowWrite(x, row.ID, false)
		return nil
	})
}

// stageGuarded stages the upsert of one row (args: D1RowArgs) as
// stageUpsert does, and its guard entry into the guard statement before
// that upsert (adding one when the upsert has none yet). A row whose id
// the upsert already holds starts a new one: its guard must see that
// earlier write. The caller holds the Tx's lock.
func (t *Tx) stageGuarded(x *sqlitesql.Table, u *d1sql.D1Upserts, args []any, id string, entry []byte) {
	if slices.Contains(t.run.ids, id) || !t.extendRun(x, u, args, id, false) {
		t.newRun(x, u, args, id, false)
	}
	r := &t.run
	if r.guard == nil {
		t.writes = slices.Insert(t.writes, r.at, st(u.Guard(), t.partition, ""))
		r.at++
		r.guard = append(append(make([]byte, 0, 256), '['), entry...)
	} else {
		r.guard = append(append(r.guard, ','), entry...)
	}
	t.writes[r.at-1].Params[1] = string(r.guard) + "]"
}

// PutPushResultGuarded stages r on the guard that no result is stored or
// staged under the key (GW-3): one staged in the Tx fails now with
// CodeWriteConflict; the result is inserted without ON CONFLICT
// (d1sql.D1InsertPushResultGuarded), so a stored one fails Commit with
// CodeWriteConflict, nothing written.
func (t *Tx) PutPushResultGuarded(ctx context.Context, clientID, clientCommitID string, r driver.PushResult) error {
	return txstate.PutPushResult(ctx, r, t.opCtx, func(text []byte) error {
		key := [2]string{clientID, clientCommitID}
		if _, ok := t.ov.results[key]; ok {
			return driver.Errorf(driver.CodeWriteConflict, "d1http: a push result is staged under the key (GW-3)")
		}
		t.writes = append(t.writes, st(d1sql.D1InsertPushResultGuarded, t.partition, clientID, clientCommitID, string(text)))
		t.ov.results[key] = r
		return nil
	})
}

// guardNoTombstone adds id to the guard of the create run it was just
// staged in (GW-1: base 0 is a row id with no row and no tombstone,
// ROW-5): one statement before the run, d1sql.D1GuardNoTombstones, whose
// JSON array of ids grows with the run.
func (t *Tx) guardNoTombstone(x *sqlitesql.Table, id string) {
	r := &t.run
	q, _ := json.Marshal(id)
	if r.guard == nil {
		t.writes = slices.Insert(t.writes, r.at, st(d1sql.D1GuardNoTombstones, t.partition, x.Def.Name, ""))
		r.at++
		r.guard = append(append(make([]byte, 0, 256), '['), q...)
	} else {
		r.guard = append(append(r.guard, ','), q...)
	}
	t.writes[r.at-1].Params[2] = string(r.guard) + "]"
}
