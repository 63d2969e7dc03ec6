package conformance_test

import (
	"context"
	"regexp"
	gosync "sync"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// TestSuiteCatchesBrokenCapabilities runs the cases of one capability
// group against a wrapper of the SQLite driver that breaks one rule of
// that group, and checks that exactly that rule fails:
// one wrapper per group of index-lookup, blob-refs, admin and
// authoritative-query. Each wrapper declares only the capability it
// breaks; the unbroken SQLite driver passing the same cases is checked by
// the driver's own TestConformance.
func TestSuiteCatchesBrokenCapabilities(t *testing.T) {
	broken := []struct {
		name  string
		cap   driver.Capability
		match string
		wrap  func(driver.Conn) driver.Conn
		want  []string // rule IDs that must fail, sorted
	}{
		{"index-lookup-ignores-after-row-id", driver.CapIndexLookup, "^IXL-",
			func(c driver.Conn) driver.Conn { return &ixlIgnoresAfter{connWrap{c}, c.(driver.IndexLookupConn)} },
			[]string{"IXL-1"}},
		{"blob-refs-empty-set-keeps-refs", driver.CapBlobRefs, "^BLOB-",
			func(c driver.Conn) driver.Conn { return &blobEmptyIsNoop{connWrap{c}, c.(driver.BlobRefsConn)} },
			[]string{"BLOB-1"}},
		{"admin-commit-meta-cursor-off-by-one", driver.CapAdmin, "^ADM-",
			func(c driver.Conn) driver.Conn { return &admInclusiveCursor{connWrap{c}, c.(driver.AdminConn)} },
			[]string{"ADM-1"}},
		{"admin-client-records-paged-by-time-only", driver.CapAdmin, "^ADM-",
			func(c driver.Conn) driver.Conn {
				return &admRecordsByTime{admInclusiveCursor{connWrap{c}, c.(driver.AdminConn)}}
			},
			[]string{"ADM-2"}},
		{"query-reads-across-partitions", driver.CapAuthoritativeQuery, "^AQ-",
			func(c driver.Conn) driver.Conn {
				return &aqAcrossPartitions{connWrap: connWrap{c}, q: c.(driver.AuthoritativeQueryConn), parts: map[string]bool{}}
			},
			[]string{"AQ-2"}},
		{"query-buffers-past-its-result-bounds", driver.CapAuthoritativeQuery, "^AQ-6/(rows|result-bytes)-bound$",
			func(c driver.Conn) driver.Conn {
				return &aqIgnoresResultBounds{connWrap: connWrap{c}, q: c.(driver.AuthoritativeQueryConn)}
			},
			[]string{"AQ-6"}},
		{"leases-refresh-mints-a-new-id", driver.CapLeases, "^LEASE-",
			func(c driver.Conn) driver.Conn { return &leaseNoRefresh{connWrap{c}, c.(driver.LeasesConn)} },
			[]string{"LEASE-2", "LEASE-3", "LEASE-4"}},
		{"leases-revoked-id-comes-back", driver.CapLeases, "^LEASE-",
			func(c driver.Conn) driver.Conn { return &leaseResurrects{connWrap{c}, c.(driver.LeasesConn)} },
			[]string{"LEASE-3", "LEASE-4"}},
		{"leases-survive-a-rotation", driver.CapLeases, "^LEASE-",
			func(c driver.Conn) driver.Conn {
				return &leaseSurvivesRotation{connWrap: connWrap{c}, LeasesConn: c.(driver.LeasesConn), issued: map[[2]string]bool{}}
			},
			[]string{"LEASE-5"}},
	}
	list := make([]brokenDriver, 0, len(broken))
	for _, b := range broken {
		list = append(list, brokenDriver{name: b.name, wrap: b.wrap, want: b.want,
			caps: []driver.Capability{b.cap}, match: regexp.MustCompile(b.match)})
	}
	runBroken(t, list)
}

// ---- index lookup ignores AfterRowID (IXL-1); its Tx half is intact ----

type ixlIgnoresAfter struct {
	connWrap
	ix driver.IndexLookupConn
}

// Begin returns the SQLite Tx itself, with its intact index-lookup half.
func (c *ixlIgnoresAfter) Begin(ctx context.Context, p string) (driver.Tx, error) {
	return c.Conn.Begin(ctx, p)
}

func (c *ixlIgnoresAfter) ScanRowsByIndex(ctx context.Context, p string, q driver.IndexQuery) ([]driver.Row, error) {
	q.AfterRowID = ""
	return c.ix.ScanRowsByIndex(ctx, p, q)
}

// ---- SetBlobRefs with an empty set keeps the old set (BLOB-1) ----

type blobEmptyIsNoop struct {
	connWrap
	b driver.BlobRefsConn
}

type blobNoopTx struct {
	txWrap
	b driver.BlobRefsTx
}

func (c *blobEmptyIsNoop) Begin(ctx context.Context, p string) (driver.Tx, error) {
	tx, err := c.Conn.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return &blobNoopTx{txWrap{tx}, tx.(driver.BlobRefsTx)}, nil
}

func (c *blobEmptyIsNoop) ListRowsReferencingBlob(ctx context.Context, p, blobID string, limit int) ([]driver.BlobRowRef, error) {
	return c.b.ListRowsReferencingBlob(ctx, p, blobID, limit)
}

func (c *blobEmptyIsNoop) ListReferencedBlobIDs(ctx context.Context, p, after string, limit int) ([]string, error) {
	return c.b.ListReferencedBlobIDs(ctx, p, after, limit)
}

func (t *blobNoopTx) SetBlobRefs(ctx context.Context, table, rowID string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	return t.b.SetBlobRefs(ctx, table, rowID, ids)
}

// ---- ListCommitMeta treats beforeSeq as inclusive (ADM-1) ----

type admInclusiveCursor struct {
	connWrap
	a driver.AdminConn
}

func (c *admInclusiveCursor) ListClientRecords(ctx context.Context, p string, q driver.ClientRecordQuery) ([]driver.ClientRecord, error) {
	return c.a.ListClientRecords(ctx, p, q)
}

func (c *admInclusiveCursor) ListCommitMeta(ctx context.Context, p string, before int64, limit int) ([]driver.CommitMeta, error) {
	if before > 0 {
		before++
	}
	return c.a.ListCommitMeta(ctx, p, before, limit)
}

func (c *admInclusiveCursor) ScopeActivity(ctx context.Context, p, table string, f driver.ScopeFilter, after, through int64) (driver.ScopeActivity, error) {
	return c.a.ScopeActivity(ctx, p, table, f, after, through)
}

func (c *admInclusiveCursor) RowScopes(ctx context.Context, p, table, id string) (driver.Scopes, bool, error) {
	return c.a.RowScopes(ctx, p, table, id)
}

func (c *admInclusiveCursor) ListRows(ctx context.Context, p, table, after string, limit int) ([]driver.Row, error) {
	return c.a.ListRows(ctx, p, table, after, limit)
}

// ---- ListClientRecords pages by time alone (ADM-2) ----

// admRecordsByTime keeps only the position's time: the next page starts
// below it, so records that share the last time of a page are skipped.
type admRecordsByTime struct{ admInclusiveCursor }

func (c *admRecordsByTime) ListClientRecords(ctx context.Context, p string, q driver.ClientRecordQuery) ([]driver.ClientRecord, error) {
	if q.AfterClientID != "" {
		q.AfterClientID = "\x01" // below every client id: (t, any id) is skipped
	}
	return c.a.ListClientRecords(ctx, p, q)
}

// ListCommitMeta is the SQLite driver's own (admInclusiveCursor breaks it).
func (c *admRecordsByTime) ListCommitMeta(ctx context.Context, p string, before int64, limit int) ([]driver.CommitMeta, error) {
	return c.a.ListCommitMeta(ctx, p, before, limit)
}

// ---- rows and result bytes bounds ignored (AQ-6) ----

// aqIgnoresResultBounds models a driver that reads every row the engine
// gives and never applies the host's MaxRows or MaxResultBytes (its time
// bound stays, so the suite still ends).
type aqIgnoresResultBounds struct {
	connWrap
	q driver.AuthoritativeQueryConn
}

func (c *aqIgnoresResultBounds) AuthoritativeQuery(ctx context.Context, p string, q driver.Query) (driver.QueryResult, error) {
	q.Limits.MaxRows, q.Limits.MaxResultBytes = driver.MaxQueryMaxRows, driver.MaxQueryMaxResultBytes
	return c.q.AuthoritativeQuery(ctx, p, q)
}

// ---- a schema-qualified name reads every partition (AQ-2) ----

// aqAcrossPartitions models the classic flaw of a driver that restricts a
// query by rewriting unqualified table names: "main.todos" slips past the
// rewrite and reads every partition. It runs such a query on every
// partition it has seen and concatenates the rows.
type aqAcrossPartitions struct {
	connWrap
	q     driver.AuthoritativeQueryConn
	mu    gosync.Mutex
	parts map[string]bool
}

var aqMainDot = regexp.MustCompile(`(?i)\bmain\.`)

func (c *aqAcrossPartitions) Begin(ctx context.Context, p string) (driver.Tx, error) {
	c.mu.Lock()
	c.parts[p] = true
	c.mu.Unlock()
	return c.Conn.Begin(ctx, p)
}

func (c *aqAcrossPartitions) AuthoritativeQuery(ctx context.Context, p string, q driver.Query) (driver.QueryResult, error) {
	if !aqMainDot.MatchString(q.SQL) {
		return c.q.AuthoritativeQuery(ctx, p, q)
	}
	q.SQL = aqMainDot.ReplaceAllString(q.SQL, "")
	res, err := c.q.AuthoritativeQuery(ctx, p, q)
	if err != nil {
		return res, err
	}
	c.mu.Lock()
	var others []string
	for other := range c.parts {
		if other != p {
			others = append(others, other)
		}
	}
	c.mu.Unlock()
	for _, other := range others {
		more, err := c.q.AuthoritativeQuery(ctx, other, q)
		if err != nil {
			return driver.QueryResult{}, err
		}
		res.Rows = append(res.Rows, more.Rows...)
	}
	return res, nil
}

// ---- IssueLease never refreshes: every issue stores the fresh id (LEASE-2) ----

type leaseNoRefresh struct {
	connWrap
	driver.LeasesConn
}

func (c *leaseNoRefresh) IssueLease(ctx context.Context, p, client string, g driver.LeaseGrant) (driver.Lease, error) {
	if old, found, err := c.LeasesConn.GetLease(ctx, p, client); err == nil && found && !old.Revoked {
		if _, err := c.LeasesConn.RevokeLease(ctx, p, old.LeaseID); err != nil {
			return driver.Lease{}, err
		}
	}
	return c.LeasesConn.IssueLease(ctx, p, client, g)
}

// ---- IssueLease hands a revoked id back to its client (LEASE-3) ----

type leaseResurrects struct {
	connWrap
	driver.LeasesConn
}

func (c *leaseResurrects) IssueLease(ctx context.Context, p, client string, g driver.LeaseGrant) (driver.Lease, error) {
	if old, found, err := c.LeasesConn.GetLease(ctx, p, client); err == nil && found && old.Revoked && old.ActorID == g.ActorID {
		g.LeaseID = old.LeaseID
	}
	return c.LeasesConn.IssueLease(ctx, p, client, g)
}

// ---- a log epoch rotation leaves the partition's leases as they were
// (LEASE-5): the wrapper puts back, after the rotation, every lease it saw
// issued in the partition, revoked ones revoked — the store before LEASE-5 ----

type leaseSurvivesRotation struct {
	connWrap
	driver.LeasesConn
	mu     gosync.Mutex
	issued map[[2]string]bool // (partition, client id)
}

func (c *leaseSurvivesRotation) IssueLease(ctx context.Context, p, client string, g driver.LeaseGrant) (driver.Lease, error) {
	c.mu.Lock()
	c.issued[[2]string{p, client}] = true
	c.mu.Unlock()
	return c.LeasesConn.IssueLease(ctx, p, client, g)
}

func (c *leaseSurvivesRotation) RotatePartitionLogEpoch(ctx context.Context, p, epoch string, atMs int64) (driver.PartitionEntry, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	kept := map[string]driver.Lease{}
	for k := range c.issued {
		if k[0] != p {
			continue
		}
		if l, found, err := c.LeasesConn.GetLease(ctx, p, k[1]); err == nil && found {
			kept[k[1]] = l
		}
	}
	e, err := c.connWrap.RotatePartitionLogEpoch(ctx, p, epoch, atMs)
	if err != nil {
		return e, err
	}
	for client, l := range kept {
		g := driver.LeaseGrant{LeaseID: l.LeaseID, ActorID: l.ActorID, AllowedScopes: l.AllowedScopes, IssuedAtMs: l.IssuedAtMs, ExpiresAtMs: l.ExpiresAtMs}
		if _, err := c.LeasesConn.IssueLease(ctx, p, client, g); err != nil {
			return e, err
		}
		if l.Revoked {
			if _, err := c.LeasesConn.RevokeLease(ctx, p, l.LeaseID); err != nil {
				return e, err
			}
		}
	}
	return e, nil
}
