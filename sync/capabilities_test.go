package sync_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/sync"
)

// Tests of the typed access to blob-refs, admin and authoritative-query:
// ERR-2 without the capability, and validation before the driver is
// called (group V, AQ-1). The capability methods of capConn count their
// calls and forward to the real SQLite Conn when it has the capability,
// so a check that let bad input through is seen as a call.

// plainConn hides every optional capability of a real Conn and of its Tx.
type plainConn struct{ driver.Conn }

type plainTx struct{ driver.Tx }

func (c *plainConn) Begin(ctx context.Context, p string) (driver.Tx, error) {
	tx, err := c.Conn.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return plainTx{tx}, nil
}

// capConn declares blob-refs, admin and authoritative-query over a real
// Conn and counts the calls that reach the driver.
type capConn struct {
	driver.Conn
	calls atomic.Int64
}

type capTx struct {
	driver.Tx
	calls *atomic.Int64
}

func (c *capConn) Begin(ctx context.Context, p string) (driver.Tx, error) {
	tx, err := c.Conn.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return &capTx{Tx: tx, calls: &c.calls}, nil
}

func (t *capTx) SetBlobRefs(ctx context.Context, table, rowID string, ids []string) error {
	t.calls.Add(1)
	if b, ok := t.Tx.(driver.BlobRefsTx); ok {
		return b.SetBlobRefs(ctx, table, rowID, ids)
	}
	return nil
}

func (c *capConn) ListRowsReferencingBlob(ctx context.Context, p, blobID string, limit int) ([]driver.BlobRowRef, error) {
	c.calls.Add(1)
	if b, ok := c.Conn.(driver.BlobRefsConn); ok {
		return b.ListRowsReferencingBlob(ctx, p, blobID, limit)
	}
	return nil, nil
}

func (c *capConn) ListReferencedBlobIDs(ctx context.Context, p, after string, limit int) ([]string, error) {
	c.calls.Add(1)
	if b, ok := c.Conn.(driver.BlobRefsConn); ok {
		return b.ListReferencedBlobIDs(ctx, p, after, limit)
	}
	return nil, nil
}

func (c *capConn) ListClientRecords(ctx context.Context, p string, q driver.ClientRecordQuery) ([]driver.ClientRecord, error) {
	c.calls.Add(1)
	if a, ok := c.Conn.(driver.AdminConn); ok {
		return a.ListClientRecords(ctx, p, q)
	}
	return nil, nil
}

func (c *capConn) ListCommitMeta(ctx context.Context, p string, before int64, limit int) ([]driver.CommitMeta, error) {
	c.calls.Add(1)
	if a, ok := c.Conn.(driver.AdminConn); ok {
		return a.ListCommitMeta(ctx, p, before, limit)
	}
	return nil, nil
}

func (c *capConn) ScopeActivity(ctx context.Context, p, table string, f driver.ScopeFilter, after, through int64) (driver.ScopeActivity, error) {
	c.calls.Add(1)
	if a, ok := c.Conn.(driver.AdminConn); ok {
		return a.ScopeActivity(ctx, p, table, f, after, through)
	}
	return driver.ScopeActivity{}, nil
}

func (c *capConn) RowScopes(ctx context.Context, p, table, id string) (driver.Scopes, bool, error) {
	c.calls.Add(1)
	if a, ok := c.Conn.(driver.AdminConn); ok {
		return a.RowScopes(ctx, p, table, id)
	}
	return nil, false, nil
}

func (c *capConn) ListRows(ctx context.Context, p, table, after string, limit int) ([]driver.Row, error) {
	c.calls.Add(1)
	if a, ok := c.Conn.(driver.AdminConn); ok {
		return a.ListRows(ctx, p, table, after, limit)
	}
	return nil, nil
}

func (c *capConn) AuthoritativeQuery(ctx context.Context, p string, q driver.Query) (driver.QueryResult, error) {
	c.calls.Add(1)
	if a, ok := c.Conn.(driver.AuthoritativeQueryConn); ok {
		return a.AuthoritativeQuery(ctx, p, q)
	}
	return driver.QueryResult{}, nil
}

// capCall is one call of a capability method through a Store.
type capCall struct {
	name string
	cap  driver.Capability
	call func(ctx context.Context, s *sync.Store) error
}

// capCalls calls every method once with valid input.
func capCalls() []capCall {
	return []capCall{
		{"Tx.SetBlobRefs", driver.CapBlobRefs, func(ctx context.Context, s *sync.Store) error {
			tx, err := s.Begin(ctx, "p1")
			if err != nil {
				return err
			}
			defer func() { _ = tx.Rollback(context.Background()) }()
			return tx.SetBlobRefs(ctx, "notes", "n1", []string{"b1"})
		}},
		{"ListRowsReferencingBlob", driver.CapBlobRefs, func(ctx context.Context, s *sync.Store) error {
			_, err := s.ListRowsReferencingBlob(ctx, "p1", "b1", 10)
			return err
		}},
		{"ListReferencedBlobIDs", driver.CapBlobRefs, func(ctx context.Context, s *sync.Store) error {
			_, err := s.ListReferencedBlobIDs(ctx, "p1", "", 10)
			return err
		}},
		{"ListClientRecords", driver.CapAdmin, func(ctx context.Context, s *sync.Store) error {
			_, err := s.ListClientRecords(ctx, "p1", driver.ClientRecordQuery{Limit: 10})
			return err
		}},
		{"ListCommitMeta", driver.CapAdmin, func(ctx context.Context, s *sync.Store) error {
			_, err := s.ListCommitMeta(ctx, "p1", 0, 10)
			return err
		}},
		{"ScopeActivity", driver.CapAdmin, func(ctx context.Context, s *sync.Store) error {
			_, err := s.ScopeActivity(ctx, "p1", "notes", driver.ScopeFilter{"project": {"p7"}}, 0, 10)
			return err
		}},
		{"RowScopes", driver.CapAdmin, func(ctx context.Context, s *sync.Store) error {
			_, _, err := s.RowScopes(ctx, "p1", "notes", "n1")
			return err
		}},
		{"AuthoritativeQuery", driver.CapAuthoritativeQuery, func(ctx context.Context, s *sync.Store) error {
			_, err := s.AuthoritativeQuery(ctx, "p1", driver.Query{SQL: "SELECT id FROM notes", Tables: []string{"notes"}})
			return err
		}},
	}
}

func TestCapabilitiesUnsupported(t *testing.T) {
	base := openSQLite(t)
	s := ensured(t, &plainConn{base.Conn()})
	for _, c := range capCalls() {
		err := c.call(t.Context(), s)
		var e *sync.Error
		if !errors.As(err, &e) || e.Code != sync.CodeUnsupported || e.Capability != c.cap {
			t.Errorf("%s without the capability = %v; want CodeUnsupported with Capability %s", c.name, err, c.cap)
			continue
		}
		if !strings.Contains(e.Message, string(c.cap)) || e.Rule != "ERR-2" {
			t.Errorf("%s: message %q does not name %q, or rule %q is not ERR-2", c.name, e.Message, c.cap, e.Rule)
		}
	}
}

func TestCapabilitiesValidInputReachesTheDriver(t *testing.T) {
	base := openSQLite(t)
	cc := &capConn{Conn: base.Conn()}
	s := ensured(t, cc)
	for _, c := range capCalls() {
		before := cc.calls.Load()
		if err := c.call(t.Context(), s); err != nil && driver.CodeOf(err) == "" {
			t.Errorf("%s: untyped error %v", c.name, err)
		}
		if cc.calls.Load() != before+1 {
			t.Errorf("%s with valid input did not reach the driver", c.name)
		}
	}
}

func TestCapabilitiesValidation(t *testing.T) {
	base := openSQLite(t)
	cc := &capConn{Conn: base.Conn()}
	s := ensured(t, cc)
	ctx := t.Context()
	long := strings.Repeat("x", sync.MaxIDBytes+1)
	q := func(sql string, tables []string, args ...any) func() error {
		return func() error {
			_, err := s.AuthoritativeQuery(ctx, "p1", driver.Query{SQL: sql, Args: args, Tables: tables})
			return err
		}
	}
	setRefs := func(table, row string, ids ...string) func() error {
		return func() error {
			tx, err := s.Begin(ctx, "p1")
			if err != nil {
				return err
			}
			defer func() { _ = tx.Rollback(context.Background()) }()
			return tx.SetBlobRefs(ctx, table, row, ids)
		}
	}
	notes := []string{"notes"}
	for _, c := range []struct {
		name string
		call func() error
		want driver.Code
	}{
		{"AuthoritativeQuery negative MaxRows", func() error {
			_, err := s.AuthoritativeQuery(ctx, "p1", driver.Query{SQL: "SELECT id FROM notes", Tables: notes, Limits: driver.QueryLimits{MaxRows: -1}})
			return err
		}, driver.CodeInvalidLimit},
		{"AuthoritativeQuery Timeout over 10 min", func() error {
			_, err := s.AuthoritativeQuery(ctx, "p1", driver.Query{SQL: "SELECT id FROM notes", Tables: notes,
				Limits: driver.QueryLimits{Timeout: driver.MaxQueryTimeout + time.Second}})
			return err
		}, driver.CodeInvalidLimit},
		{"SetBlobRefs unknown table", setRefs("nope", "n1", "b1"), driver.CodeUnknownTable},
		{"SetBlobRefs empty row id", setRefs("notes", "", "b1"), driver.CodeInvalidArgument},
		{"SetBlobRefs empty blob id", setRefs("notes", "n1", "b1", ""), driver.CodeInvalidArgument},
		{"SetBlobRefs blob id with NUL", setRefs("notes", "n1", "a\x00b"), driver.CodeInvalidArgument},
		{"SetBlobRefs long blob id", setRefs("notes", "n1", long), driver.CodeInvalidArgument},
		{"ListRowsReferencingBlob empty partition", func() error {
			_, err := s.ListRowsReferencingBlob(ctx, "", "b1", 10)
			return err
		}, driver.CodeInvalidArgument},
		{"ListRowsReferencingBlob empty blob id", func() error {
			_, err := s.ListRowsReferencingBlob(ctx, "p1", "", 10)
			return err
		}, driver.CodeInvalidArgument},
		{"ListRowsReferencingBlob limit 0", func() error {
			_, err := s.ListRowsReferencingBlob(ctx, "p1", "b1", 0)
			return err
		}, driver.CodeInvalidLimit},
		{"ListReferencedBlobIDs invalid UTF-8 cursor", func() error {
			_, err := s.ListReferencedBlobIDs(ctx, "p1", "\xff", 10)
			return err
		}, driver.CodeInvalidArgument},
		{"ListReferencedBlobIDs limit 10001", func() error {
			_, err := s.ListReferencedBlobIDs(ctx, "p1", "", sync.MaxLimit+1)
			return err
		}, driver.CodeInvalidLimit},
		{"ListClientRecords limit -1", func() error {
			_, err := s.ListClientRecords(ctx, "p1", driver.ClientRecordQuery{Limit: -1})
			return err
		}, driver.CodeInvalidLimit},
		{"ListClientRecords time without a client id", func() error {
			_, err := s.ListClientRecords(ctx, "p1", driver.ClientRecordQuery{AfterUpdatedAtMs: 7, Limit: 10})
			return err
		}, driver.CodeInvalidArgument},
		{"ListClientRecords position with NUL", func() error {
			_, err := s.ListClientRecords(ctx, "p1", driver.ClientRecordQuery{AfterUpdatedAtMs: 7, AfterClientID: "c\x00", Limit: 10})
			return err
		}, driver.CodeInvalidArgument},
		{"ListClientRecords position with the server-command prefix", func() error {
			_, err := s.ListClientRecords(ctx, "p1", driver.ClientRecordQuery{AfterClientID: sync.RemoteCommandPrefix + "x", Limit: 10})
			return err
		}, driver.CodeInvalidClientID},
		{"ListCommitMeta negative cursor", func() error {
			_, err := s.ListCommitMeta(ctx, "p1", -1, 10)
			return err
		}, driver.CodeInvalidArgument},
		{"ScopeActivity unknown table", func() error {
			_, err := s.ScopeActivity(ctx, "p1", "nope", driver.ScopeFilter{"project": {"p7"}}, 0, 1)
			return err
		}, driver.CodeUnknownTable},
		{"ScopeActivity no filter keys", func() error {
			_, err := s.ScopeActivity(ctx, "p1", "notes", driver.ScopeFilter{}, 0, 1)
			return err
		}, driver.CodeScanRequiresScope},
		{"ScopeActivity through below after", func() error {
			_, err := s.ScopeActivity(ctx, "p1", "notes", driver.ScopeFilter{"project": {"p7"}}, 5, 4)
			return err
		}, driver.CodeInvalidArgument},
		{"RowScopes empty row id", func() error {
			_, _, err := s.RowScopes(ctx, "p1", "notes", "")
			return err
		}, driver.CodeInvalidArgument},
		{"query with no table", q("SELECT 1", nil), driver.CodeQueryInvalid},
		{"query of an unknown table", q("SELECT id FROM nope", []string{"notes", "nope"}), driver.CodeUnknownTable},
		{"query empty text", q("", notes), driver.CodeQueryInvalid},
		{"query text with NUL", q("SELECT id FROM notes\x00; DELETE FROM notes", notes), driver.CodeQueryInvalid},
		{"query text not UTF-8", q("SELECT '\xff' FROM notes", notes), driver.CodeQueryInvalid},
		{"query text too long", q("SELECT id FROM notes WHERE id = '"+strings.Repeat("x", sync.MaxQueryBytes)+"'", notes), driver.CodeQueryInvalid},
		{"query NaN bind value", q("SELECT id FROM notes WHERE ? IS NULL", notes, math.NaN()), driver.CodeQueryInvalid},
		{"query int bind value", q("SELECT id FROM notes WHERE id = ?", notes, 7), driver.CodeQueryInvalid},
		{"query invalid JSON bind value", q("SELECT id FROM notes WHERE id = ?", notes, driver.JSON("{")), driver.CodeQueryInvalid},
		{"query bind value with NUL", q("SELECT id FROM notes WHERE id = ?", notes, "a\x00"), driver.CodeQueryInvalid},
	} {
		before := cc.calls.Load()
		expectCodeErr(t, c.name, c.call(), c.want)
		if cc.calls.Load() != before {
			t.Errorf("%s: bad input reached the driver", c.name)
		}
	}
	// A filter key with an empty list matches nothing, without the driver.
	before := cc.calls.Load()
	act, err := s.ScopeActivity(ctx, "p1", "notes", driver.ScopeFilter{"project": {}}, 0, 10)
	if err != nil || act != (driver.ScopeActivity{}) || cc.calls.Load() != before {
		t.Errorf("ScopeActivity with an empty value list = %v, %v (driver called: %v); want zero, nil, not called",
			act, err, cc.calls.Load() != before)
	}
}

func expectCodeErr(t *testing.T, what string, err error, want driver.Code) {
	t.Helper()
	if got := driver.CodeOf(err); got != want {
		t.Errorf("%s: error %v (code %q), want %q", what, err, got, want)
	}
	if err != nil && strings.Contains(err.Error(), "p1") {
		t.Errorf("%s: message %q names the partition (V-10)", what, err.Error())
	}
}
