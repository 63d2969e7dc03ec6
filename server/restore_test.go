package server

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/d1http"
	"github.com/syncstore/syncstore/drivers/d1http/d1test"
	"github.com/syncstore/syncstore/drivers/mysql"
	"github.com/syncstore/syncstore/drivers/postgres"
	"github.com/syncstore/syncstore/drivers/sqlite"
	"github.com/syncstore/syncstore/internal/testdb"
	"github.com/syncstore/syncstore/ssp2"
	"github.com/syncstore/syncstore/sync"
)

// backupDriver is a driver that provisions stores and copies them.
type backupDriver interface {
	driver.Provisioner
	driver.Backuper
}

// backupLanes are lanes() with the driver and base DSN exposed, for the
// whole-store copy the restore procedure starts from.
// provisionForBackup provisions a store on drv under base, dropped when
// t ends, and returns its DSN and the test schema's engine form.
func provisionForBackup(t *testing.T, drv backupDriver, base string) (string, driver.Schema) {
	t.Helper()
	dsn, drop, err := drv.Provision(context.Background(), base)
	if err != nil {
		t.Fatalf("provision: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = drop(ctx)
	})
	sch := testSchema()
	ds, err := sch.DriverSchema()
	if err != nil {
		t.Fatal(err)
	}
	return dsn, ds
}

func backupLanes() map[string]struct {
	drv  backupDriver
	base func(testing.TB) string
} {
	type bl = struct {
		drv  backupDriver
		base func(testing.TB) string
	}
	return map[string]bl{
		"sqlite":   {sqlite.Driver{}, func(t testing.TB) string { return t.TempDir() }},
		"postgres": {postgres.Driver{}, testdb.PostgresServer},
		"mysql":    {mysql.Driver{}, testdb.MySQLServer},
		"d1http": {d1http.Driver{}, func(testing.TB) string {
			d1Once.Do(func() {
				srv := d1test.NewServer("test-token")
				d1Base = "d1://acct?token=test-token&endpoint=" + srv.URL + "&request_timeout_ms=5000"
			})
			return d1Base
		}},
	}
}

// TestRestoreRotatesEveryEpoch is the restore procedure of
// docs/syncular.md "Backup and restore" (SPEC §2.1's backup restore rule,
// §6.3) on every engine: a store is copied, written to past the copy and
// a client follows it there, with a commit still in its outbox; the copy
// is put back and RotateAllLogEpochs runs before a new server serves it.
// The client ahead of the restored store is then reset (its old epoch is
// refused, nothing of its request processed), bootstraps again on the new
// epoch and finds only the restored rows, and its preserved outbox commit
// is applied once — a retry of it is answered from the idempotency
// record, not applied again.
func TestRestoreRotatesEveryEpoch(t *testing.T) {
	bls := backupLanes()
	forEachLane(t, func(t *testing.T, l lane) {
		bl := bls[l.name]
		ctx := context.Background()
		dsn, ds := provisionForBackup(t, bl.drv, bl.base(t))
		// open starts a server over the store at dsn; stop ends both.
		open := func() (*env, func()) {
			st, err := sync.Open(l.name, dsn)
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			if err := st.EnsureSchema(ctx, ds); err != nil {
				t.Fatalf("EnsureSchema: %v", err)
			}
			e := newEnvOn(t, st, testSchema())
			e.grant("alice", p1)
			e.grant("bob", p1)
			return e, func() {
				e.ts.CloseClientConnections()
				e.ts.Close()
				_ = e.srv.Close()
				if err := st.Close(); err != nil {
					t.Fatalf("close the store: %v", err)
				}
			}
		}
		push := func(e *env, actor, client, epoch, id, row string) *ssp2.PushResult {
			t.Helper()
			m := e.sync(actor, 2, hdr(client, epoch), commit(id, upsert("tasks", row, e.task(row, "p1", row))))
			if h := m.Frames[0].(*ssp2.RespHeader); h.ResetRequired {
				t.Fatalf("push %s: reset", id)
			}
			return framesOf[*ssp2.PushResult](m)[0]
		}
		// pull returns the subscription's next cursor.
		pull := func(e *env, epoch string, cursor int64) int64 {
			t.Helper()
			m := e.sync("alice", 2, hdr("c1", epoch), &ssp2.PullHeader{Accept: 3}, sub("s1", "tasks", p1, cursor))
			if h := m.Frames[0].(*ssp2.RespHeader); h.ResetRequired {
				t.Fatalf("pull: reset")
			}
			return sections(m)[0].end.NextCursor
		}
		rows := func(st *sync.Store) []string {
			t.Helper()
			rs, err := st.ListRows(ctx, "p1", "tasks", "", 100)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range rs {
				ids = append(ids, r.ID)
			}
			return ids
		}

		e, stop := open()
		ep := e.epoch("alice", "c1")
		if r := push(e, "bob", "c2", e.epoch("bob", "c2"), "k-before", "before"); r.Status != ssp2.PushApplied {
			t.Fatalf("push before: %+v", r)
		}
		cur := pull(e, ep, -1)
		backupHead, _ := e.store.MaxCommitSeq(ctx, "p1")
		stop()

		restore, dropCopy, err := bl.drv.Backup(ctx, dsn)
		if err != nil {
			t.Fatalf("Backup: %v", err)
		}
		t.Cleanup(func() { _ = dropCopy(context.Background()) })

		// Past the copy: another commit, which alice follows.
		e, stop = open()
		if r := push(e, "bob", "c2", ep, "k-lost", "lost"); r.Status != ssp2.PushApplied {
			t.Fatalf("push lost: %+v", r)
		}
		ahead := pull(e, ep, cur)
		if ahead <= backupHead {
			t.Fatalf("alice's cursor %d is not past the copy's head %d", ahead, backupHead)
		}
		stop()

		// The procedure: restore, rotate every epoch, then serve.
		if err := restore(ctx); err != nil {
			t.Fatalf("restore: %v", err)
		}
		st, err := sync.Open(l.name, dsn)
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		n, err := RotateAllLogEpochs(ctx, st, time.UnixMilli(1_750_000_000_000))
		if err != nil || n != 1 {
			t.Fatalf("RotateAllLogEpochs = %d, %v; want 1 partition", n, err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		e, stop = open()
		defer stop()
		if got := rows(e.store); !slices.Equal(got, []string{"before"}) {
			t.Fatalf("restored rows %v, want [before]", got)
		}

		// alice, ahead, with her outbox: reset, nothing processed.
		m := e.sync("alice", 2, hdr("c1", ep), commit("k-offline", upsert("tasks", "offline", e.task("offline", "p1", "x"))),
			&ssp2.PullHeader{Accept: 3}, sub("s1", "tasks", p1, ahead))
		h := m.Frames[0].(*ssp2.RespHeader)
		if !h.ResetRequired || h.LogEpoch == ep || h.LogEpoch == "" || len(m.Frames) != 1 {
			t.Fatalf("the client ahead of the restore was not reset: %+v (%d frames)", h, len(m.Frames))
		}
		if head, _ := e.store.MaxCommitSeq(ctx, "p1"); head != backupHead {
			t.Fatalf("the reset response processed the push: head %d, want %d", head, backupHead)
		}
		ep2 := h.LogEpoch
		// Bootstrap again on the new epoch, the outbox replayed with it.
		m = e.sync("alice", 2, hdr("c1", ep2), commit("k-offline", upsert("tasks", "offline", e.task("offline", "p1", "x"))),
			&ssp2.PullHeader{Accept: 3}, sub("s1", "tasks", p1, -1))
		if h := m.Frames[0].(*ssp2.RespHeader); h.ResetRequired {
			t.Fatalf("the new epoch was refused: %+v", h)
		}
		if r := framesOf[*ssp2.PushResult](m)[0]; r.Status != ssp2.PushApplied {
			t.Fatalf("the preserved outbox: %+v, want applied", r)
		}
		if s := sections(m)[0]; !s.start.Bootstrap {
			t.Fatalf("the pull after the reset is not a bootstrap: %+v", s.start)
		}
		// A retry of the same commit is the stored result, not a second apply.
		if r := push(e, "alice", "c1", ep2, "k-offline", "offline"); r.Status != ssp2.PushCached {
			t.Fatalf("the outbox retried: %+v, want cached", r)
		}
		if got := rows(e.store); !slices.Equal(got, []string{"before", "offline"}) {
			t.Fatalf("rows %v, want [before offline]", got)
		}
		if head, _ := e.store.MaxCommitSeq(ctx, "p1"); head != backupHead+1 {
			t.Fatalf("head %d, want %d: the outbox applied once", head, backupHead+1)
		}
	})
}
