package memdriver

import (
	"context"
	"errors"
	"testing"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/sync"
)

// The conformance suite cannot reach inside a store; these tests check
// what only the driver can: a corrupted stored result (PR-5), that callers
// never share memory with the store (VAL-1), and the DSN rules.

func open(t *testing.T, dsn string) *Conn {
	t.Helper()
	c, err := Driver{}.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.EnsureSchema(context.Background(), conformance.TestSchema()); err != nil {
		t.Fatal(err)
	}
	return c.(*Conn)
}

// TestCorruptResultIsACacheMiss corrupts a stored push result in place and
// expects a retryable cache miss, never a guess (PR-5).
func TestCorruptResultIsACacheMiss(t *testing.T) {
	ctx := context.Background()
	c := open(t, "")
	tx, err := c.Begin(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	r := driver.PushResult{Status: driver.PushRejected, RecordedAtMs: 1, Ops: []driver.OpResult{{Status: driver.OpApplied}}}
	if err := tx.CommitRejected(ctx, "c1", "k1", r); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"not JSON": "{", "unknown status": `{"status":"maybe","recordedAtMs":1,"ops":[]}`} {
		c.s.current("p1").results[resultKey{"c1", "k1"}] = []byte(data)
		_, found, err := c.GetPushResult(ctx, "p1", "c1", "k1")
		if found || !errors.Is(err, driver.ErrIdempotencyCacheMiss) || !driver.IsRetryable(err) {
			t.Errorf("%s: GetPushResult = found %v, %v; want a retryable %s", name, found, err, driver.CodeIdempotencyCacheMiss)
		}
	}
}

// TestValuesAreCopied changes the caller's byte slices and maps after a
// write and after a read; the store must not change (VAL-1).
func TestValuesAreCopied(t *testing.T) {
	ctx := context.Background()
	c := open(t, "")
	x := []byte{1, 2, 3}
	row := driver.Row{ID: "k1", ServerVersion: 1, Scopes: driver.Scopes{"grp": "g"},
		Values: driver.Values{"id": "k1", "grp": "g", "s": nil, "i": nil, "f": nil, "b": nil, "j": nil, "x": x}}
	tx, _ := c.Begin(ctx, "p1")
	if err := tx.UpsertRow(ctx, "kinds", row); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	x[0] = 9
	row.Scopes["grp"] = "changed"
	got, _, err := c.GetRow(ctx, "p1", "kinds", "k1")
	if err != nil {
		t.Fatal(err)
	}
	if b := got.Values["x"].([]byte); b[0] != 1 || got.Scopes["grp"] != "g" {
		t.Fatalf("the store shares the caller's memory: x %v, scopes %v", b, got.Scopes)
	}
	got.Values["x"].([]byte)[0] = 7
	again, _, _ := c.GetRow(ctx, "p1", "kinds", "k1")
	if again.Values["x"].([]byte)[0] != 1 {
		t.Errorf("a read shares the store's memory: x %v", again.Values["x"])
	}
}

// TestDSN checks that one name is one store, "" a private one, and that a
// provisioned store is gone after drop.
func TestDSN(t *testing.T) {
	ctx := context.Background()
	dsn, drop, err := Driver{}.Provision(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	a, b, private := open(t, dsn), open(t, dsn), open(t, "")
	if _, err := a.TouchPartition(ctx, "p1", 1, "e1"); err != nil {
		t.Fatal(err)
	}
	count := func(c *Conn) int {
		ps, err := c.ListPartitions(ctx, "", 10)
		if err != nil {
			t.Fatal(err)
		}
		return len(ps)
	}
	if count(b) != 1 || count(private) != 0 {
		t.Errorf("partitions seen: same DSN %d (want 1), private store %d (want 0)", count(b), count(private))
	}
	if err := drop(ctx); err != nil {
		t.Fatal(err)
	}
	if count(open(t, dsn)) != 0 {
		t.Errorf("a store opened after drop is not empty")
	}
}

// TestRegistered checks that the import is all a host needs to open a
// store by name. (What the driver declares is pinned in one place: the
// harness of conformance_test.go, which the suite checks, ERR-3.)
func TestRegistered(t *testing.T) {
	store, err := sync.Open(Name, "")
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := store.MaxCommitSeq(context.Background(), "p1"); err != nil {
		t.Errorf("a store opened by name does not answer: %v", err)
	}
}
