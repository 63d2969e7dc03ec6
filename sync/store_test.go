package sync_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/syncstore/syncstore/driver"
	_ "github.com/syncstore/syncstore/drivers/sqlite" // registers "sqlite"
	"github.com/syncstore/syncstore/sync"
)

// notesSchema: notes(id pk, proj scope project, body; index by_body).
func notesSchema() driver.Schema {
	return driver.Schema{Version: 1, Tables: []driver.Table{{
		Name: "notes",
		Columns: []driver.Column{{Name: "id", Type: driver.TypeString}, {Name: "proj", Type: driver.TypeString},
			{Name: "body", Type: driver.TypeString}},
		PrimaryKey: "id",
		Scopes:     []driver.Scope{{Variable: "project", Column: "proj"}},
		Indexes:    []driver.Index{{Name: "by_body", Columns: []string{"body"}}},
	}}}
}

func note(id string) driver.Row {
	v := driver.Values{"id": id, "proj": "p7", "body": "body " + id}
	t, _ := notesSchema().Table("notes")
	return driver.Row{ID: id, ServerVersion: 1, Values: v, Scopes: sync.ScopesOf(t, v)}
}

// openSQLite opens a real SQLite store in the test's temp dir through the
// registry; the schema is not ensured.
func openSQLite(t *testing.T) *sync.Store {
	t.Helper()
	s, err := sync.Open("sqlite", filepath.Join(t.TempDir(), "store.db"))
	if err != nil {
		t.Fatalf("Open(sqlite): %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// ensured wraps conn in a Store with notesSchema ensured.
func ensured(t *testing.T, conn driver.Conn) *sync.Store {
	t.Helper()
	s := sync.OpenConn(conn)
	if err := s.EnsureSchema(t.Context(), notesSchema()); err != nil {
		t.Fatalf("EnsureSchema: %v", err)
	}
	return s
}

// writeNote upserts note(id) and appends a commit recording it.
func writeNote(ctx context.Context, tx *sync.Tx, id string) error {
	r := note(id)
	if err := tx.UpsertRow(ctx, "notes", r); err != nil {
		return err
	}
	_, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c", ClientCommitID: id, ActorID: "a", CreatedAtMs: 1,
		Changes: []driver.Change{{Table: "notes", RowID: id, Op: driver.OpUpsert, Scopes: r.Scopes, Values: r.Values, RowVersion: 1}}})
	return err
}

func expectMaxSeq(t *testing.T, s *sync.Store, want int64) {
	t.Helper()
	got, err := s.MaxCommitSeq(t.Context(), "p1")
	if err != nil || got != want {
		t.Errorf("MaxCommitSeq = %d, %v; want %d", got, err, want)
	}
}

func expectRow(t *testing.T, s *sync.Store, id string, want bool) {
	t.Helper()
	_, ok, err := s.GetRow(t.Context(), "p1", "notes", id)
	if err != nil || ok != want {
		t.Errorf("GetRow(%s) found=%v err=%v; want found=%v", id, ok, err, want)
	}
}

func TestOpenRegisteredSQLite(t *testing.T) {
	if !slices.Contains(sync.Drivers(), "sqlite") {
		t.Fatalf("Drivers() = %q, missing sqlite", sync.Drivers())
	}
	s := openSQLite(t)
	if s.DriverName() != "sqlite" {
		t.Errorf("DriverName() = %q", s.DriverName())
	}
	if _, ok := s.Schema(); ok {
		t.Errorf("Schema() before EnsureSchema reports one")
	}
	if !slices.Equal(s.Capabilities(), driver.ConnCapabilities(s.Conn())) {
		t.Errorf("Capabilities() = %v; the Conn declares %v", s.Capabilities(), driver.ConnCapabilities(s.Conn()))
	}
	if err := s.EnsureSchema(t.Context(), notesSchema()); err != nil {
		t.Fatal(err)
	}
	got, ok := s.Schema()
	if d := cmp.Diff(notesSchema(), got); !ok || d != "" {
		t.Errorf("Schema() = %v (-want +got):\n%s", ok, d)
	}
	if sync.OpenConn(s.Conn()).DriverName() != "" {
		t.Errorf("OpenConn's DriverName is not empty")
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestEnsureSchemaCompilesFirstAndKeepsPrevious(t *testing.T) {
	ctx := t.Context()
	s := openSQLite(t)
	bad := notesSchema()
	bad.Tables[0].Name = "sync_notes"
	if err := s.EnsureSchema(ctx, bad); !errors.Is(err, sync.ErrSchemaInvalid) {
		t.Fatalf("EnsureSchema(invalid) = %v; want ErrSchemaInvalid", err)
	}
	if _, _, err := s.Conn().GetRow(ctx, "p1", "notes", "x"); !errors.Is(err, sync.ErrUnknownTable) {
		t.Errorf("the driver saw the invalid schema: GetRow = %v; want unknown_table", err)
	}
	if err := s.EnsureSchema(ctx, notesSchema()); err != nil {
		t.Fatal(err)
	}
	other := notesSchema()
	other.Tables[0].Columns = append(other.Tables[0].Columns, driver.Column{Name: "extra", Type: driver.TypeInteger, Nullable: true})
	if err := s.EnsureSchema(ctx, other); !errors.Is(err, sync.ErrSchemaMismatch) {
		t.Fatalf("EnsureSchema(same version, other layout) = %v; want ErrSchemaMismatch", err)
	}
	got, _ := s.Schema()
	if d := cmp.Diff(notesSchema(), got); d != "" {
		t.Errorf("a failed EnsureSchema replaced the Store's schema (-want +got):\n%s", d)
	}
}

// hidingConn hides every optional capability of the Conn it wraps, and
// hides the Tx halves from the Txs it begins.
type hidingConn struct{ driver.Conn }

func (c hidingConn) Begin(ctx context.Context, p string) (driver.Tx, error) {
	tx, err := c.Conn.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return struct{ driver.Tx }{tx}, nil
}

func TestScanRowsByIndexUnsupported(t *testing.T) {
	ctx := t.Context()
	base := openSQLite(t)
	s := ensured(t, hidingConn{base.Conn()})
	if len(s.Capabilities()) != 0 || s.Supports(driver.CapIndexLookup) {
		t.Fatalf("Capabilities() = %v through a wrapper that hides them", s.Capabilities())
	}
	q := driver.IndexQuery{Table: "notes", Index: "by_body", Values: []any{"x"}, Limit: 10}
	_, err := s.ScanRowsByIndex(ctx, "p1", q)
	expectUnsupported(t, "Store.ScanRowsByIndex", err, "sync_test.hidingConn")
	err = s.RunInTx(ctx, "p1", func(ctx context.Context, tx *sync.Tx) error {
		_, err := tx.ScanRowsByIndex(ctx, q)
		return err
	})
	expectUnsupported(t, "Tx.ScanRowsByIndex", err, "sync_test.hidingConn")
}

func TestScanRowsByIndexSupported(t *testing.T) {
	ctx := t.Context()
	base := openSQLite(t)
	if !base.Supports(driver.CapIndexLookup) {
		t.Skip("the SQLite driver does not declare index-lookup")
	}
	q := driver.IndexQuery{Table: "notes", Index: "by_body", Values: []any{"x"}, Limit: 10}
	named := ensured(t, base.Conn())
	if err := named.RunInTx(ctx, "p1", func(ctx context.Context, tx *sync.Tx) error { return writeNote(ctx, tx, "n1") }); err != nil {
		t.Fatal(err)
	}
	q.Values = []any{"body n1"}
	rows, err := named.ScanRowsByIndex(ctx, "p1", q)
	if err != nil || len(rows) != 1 || rows[0].ID != "n1" {
		t.Errorf("ScanRowsByIndex = %v, %v; want row n1", rows, err)
	}
}

func expectUnsupported(t *testing.T, what string, err error, label string) {
	t.Helper()
	var e *sync.Error
	if !errors.As(err, &e) || e.Code != sync.CodeUnsupported || e.Capability != driver.CapIndexLookup {
		t.Fatalf("%s = %v; want CodeUnsupported with Capability index-lookup", what, err)
	}
	for _, want := range []string{"index-lookup", label} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("%s message %q does not name %q", what, e.Message, want)
		}
	}
	if e.Rule != "ERR-2" {
		t.Errorf("%s rule %q, want ERR-2", what, e.Rule)
	}
}

func TestOpenConnNilPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Errorf("OpenConn(nil) did not panic")
		}
	}()
	sync.OpenConn(nil)
}

// TestConcurrentStoreUse runs writers, readers and policy changes on one
// Store at once (run with -race).
func TestConcurrentStoreUse(t *testing.T) {
	ctx := t.Context()
	s := ensured(t, openSQLite(t).Conn())
	const writers, each = 4, 5
	var wg gosync.WaitGroup
	errs := make(chan error, writers*each*2)
	for w := range writers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range each {
				errs <- s.RunInTx(ctx, "p1", func(ctx context.Context, tx *sync.Tx) error {
					return writeNote(ctx, tx, fmt.Sprintf("w%d-%d", w, i))
				})
			}
		}()
		go func() {
			defer wg.Done()
			for range each {
				s.SetRetryPolicy(sync.RetryPolicy{MaxAttempts: 5})
				_, err := s.ScanRows(ctx, "p1", driver.ScanQuery{Table: "notes", Filter: driver.ScopeFilter{"project": {"p7"}}, Limit: 100})
				errs <- err
				_, _ = s.Schema()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	expectMaxSeq(t, s, writers*each)
}

// deadline bounds a call that would hang if a Tx were left open.
func deadline(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// A nil context is refused before it reaches the driver, and the store
// keeps working: database/sql would panic holding its pool lock.
func TestNilContextIsRefusedAndStoreKeepsWorking(t *testing.T) {
	s := openSQLite(t)
	var nilCtx context.Context // the point of the test
	if err := s.RunInTx(nilCtx, "p1", func(context.Context, *sync.Tx) error { return nil }); !errors.Is(err, driver.ErrInvalidArgument) {
		t.Fatalf("RunInTx(nil ctx) = %v; want invalid_argument", err)
	}
	if _, err := s.Begin(nilCtx, "p1"); !errors.Is(err, driver.ErrInvalidArgument) {
		t.Fatalf("Begin(nil ctx) = %v; want invalid_argument", err)
	}
	if _, err := s.MaxCommitSeq(nilCtx, "p1"); !errors.Is(err, driver.ErrInvalidArgument) {
		t.Fatalf("MaxCommitSeq(nil ctx) = %v; want invalid_argument", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.RunInTx(ctx, "p1", func(context.Context, *sync.Tx) error { return nil }); err != nil {
		t.Fatalf("RunInTx after nil-ctx calls: %v", err)
	}
}

// Values of index-key columns (scope and declared-index columns) are
// bounded like ids, so every engine refuses the same rows; other string
// columns are not.
func TestKeyColumnValuesAreBounded(t *testing.T) {
	s := openSQLite(t)
	ctx := context.Background()
	schema := driver.Schema{Version: 1, Tables: []driver.Table{{Name: "docs", PrimaryKey: "id",
		Columns: []driver.Column{{Name: "id", Type: driver.TypeString}, {Name: "project", Type: driver.TypeString},
			{Name: "email", Type: driver.TypeString}, {Name: "body", Type: driver.TypeString}},
		Scopes:  []driver.Scope{{Variable: "project", Column: "project"}},
		Indexes: []driver.Index{{Name: "by_email", Columns: []string{"email"}}}}}}
	if err := s.EnsureSchema(ctx, schema); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("k", sync.MaxKeyValueBytes+1)
	ok := strings.Repeat("k", sync.MaxKeyValueBytes)
	row := func(project, email, body string) driver.Row {
		return driver.Row{ID: "d1", ServerVersion: 1, Scopes: driver.Scopes{"project": project},
			Values: driver.Values{"id": "d1", "project": project, "email": email, "body": body}}
	}
	for name, tc := range map[string]struct {
		r      driver.Row
		column string
	}{
		"scope": {row(long, "e", "b"), "project"}, "index": {row("p", long, "b"), "email"},
	} {
		err := s.RunInTx(ctx, "p1", func(ctx context.Context, tx *sync.Tx) error { return tx.UpsertRow(ctx, "docs", tc.r) })
		var e *driver.Error
		if !errors.As(err, &e) || e.Code != driver.CodeInvalidValue || e.Column != tc.column || strings.Contains(e.Message, long) {
			t.Errorf("%s: UpsertRow with a %d-byte key value = %v; want invalid_value naming %s, not the value", name, len(long), err, tc.column)
		}
	}
	big := strings.Repeat("b", 1<<20)
	if err := s.RunInTx(ctx, "p1", func(ctx context.Context, tx *sync.Tx) error {
		return tx.UpsertRow(ctx, "docs", row(ok, ok, big))
	}); err != nil {
		t.Fatalf("a %d-byte key value and a 1 MiB non-key value must be accepted: %v", len(ok), err)
	}
}
