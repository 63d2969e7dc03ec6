package sync_test

import (
	"context"
	"errors"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/sync"
)

// spinQuery runs until its ctx ends (or its Timeout, which only a broken
// limiter waits for).
var spinQuery = sync.Query{SQL: `WITH RECURSIVE r(n) AS (SELECT count(*) FROM notes UNION ALL SELECT n + 1 FROM r WHERE n < 1000000000) SELECT count(*) AS c FROM r`,
	Tables: []string{"notes"}, Limits: sync.QueryLimits{Timeout: 10 * time.Second}}

var smallQuery = sync.Query{SQL: `SELECT count(*) AS c FROM notes`, Tables: []string{"notes"}}

// countingConn counts the authoritative queries that reach the Conn it
// wraps.
type countingConn struct {
	driver.Conn
	calls atomic.Int64
}

func (c *countingConn) AuthoritativeQuery(ctx context.Context, partition string, q driver.Query) (driver.QueryResult, error) {
	c.calls.Add(1)
	return c.Conn.(driver.AuthoritativeQueryConn).AuthoritativeQuery(ctx, partition, q)
}

// slotsConn is a countingConn whose QuerySlots is slots.
type slotsConn struct {
	*countingConn
	slots int
}

func (c slotsConn) QuerySlots() int { return c.slots }

// counted returns a Store over a counting wrapper of a real SQLite Conn,
// its schema ensured.
func counted(t *testing.T) (*sync.Store, *countingConn) {
	t.Helper()
	c := &countingConn{Conn: openSQLite(t).Conn()}
	return ensured(t, c), c
}

// spin starts n spin queries on partition p1 of s; stop cancels them and
// waits; returned counts those that ended.
func spin(s *sync.Store, n int) (returned *atomic.Int64, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	returned = new(atomic.Int64)
	var wg gosync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = s.AuthoritativeQuery(ctx, "p1", spinQuery)
			returned.Add(1)
		}()
	}
	return returned, func() { cancel(); wg.Wait() }
}

func TestQueryConcurrencySettings(t *testing.T) {
	s, c := counted(t)
	if got, want := s.QueryConcurrency(), (sync.QueryConcurrency{PerStore: sync.DefaultQueriesPerStore, PerPartition: sync.DefaultQueriesPerPartition}); got != want {
		t.Errorf("defaults: %+v, want %+v", got, want)
	}
	if err := s.SetQueryConcurrency(sync.QueryConcurrency{PerStore: 3, PerPartition: 5}); err != nil {
		t.Fatal(err)
	}
	if got, want := s.QueryConcurrency(), (sync.QueryConcurrency{PerStore: 3, PerPartition: 3}); got != want {
		t.Errorf("PerPartition above PerStore: %+v, want %+v", got, want)
	}
	for _, bad := range []sync.QueryConcurrency{{PerStore: -1}, {PerPartition: -1}, {PerStore: sync.MaxQueriesPerStore + 1}} {
		if err := s.SetQueryConcurrency(bad); !errors.Is(err, sync.ErrInvalidLimit) {
			t.Errorf("SetQueryConcurrency(%+v) = %v, want invalid_limit", bad, err)
		}
	}
	if got := s.QueryConcurrency().PerStore; got != 3 {
		t.Errorf("a refused setting changed PerStore to %d", got)
	}
	// A driver's QuerySlots caps PerStore.
	capped := sync.OpenConn(slotsConn{c, 2})
	if got, want := capped.QueryConcurrency(), (sync.QueryConcurrency{PerStore: 2, PerPartition: 1}); got != want {
		t.Errorf("under QuerySlots 2: %+v, want %+v", got, want)
	}
}

// A query that cannot get a slot within its Timeout is the time bound,
// and never reaches the driver (AQ-7).
func TestQueryQueuedPastTimeoutNeverReachesTheDriver(t *testing.T) {
	s, c := counted(t)
	if err := s.SetQueryConcurrency(sync.QueryConcurrency{PerStore: 1}); err != nil {
		t.Fatal(err)
	}
	returned, stop := spin(s, 1)
	defer stop()
	for c.calls.Load() < 1 { // readiness: the spin query holds the one slot
		time.Sleep(5 * time.Millisecond)
	}
	q := smallQuery
	q.Limits.Timeout = 100 * time.Millisecond
	_, err := s.AuthoritativeQuery(t.Context(), "p2", q)
	var le *sync.QueryLimitError
	if !errors.As(err, &le) || le.Bound != driver.BoundTime || le.Limit != 100 {
		t.Errorf("queued past its Timeout: %v, want query_limit (time, 100 ms)", err)
	}
	if n := c.calls.Load(); n != 1 {
		t.Errorf("driver calls: %d, want 1 (the spin query only)", n)
	}
	if returned.Load() != 0 {
		t.Errorf("the spin query ended first: its slot was not held")
	}
	// The caller's ctx ending while it waits is unavailable, not a bound.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.AuthoritativeQuery(ctx, "p2", smallQuery); !errors.Is(err, sync.ErrUnavailable) {
		t.Errorf("ctx ended while waiting: %v, want unavailable", err)
	}
}

// With PerPartition 2, eight running queries of p1 leave p2 a slot.
func TestQueryPartitionLimitLeavesOtherPartitions(t *testing.T) {
	s, c := counted(t)
	if err := s.SetQueryConcurrency(sync.QueryConcurrency{PerStore: 4, PerPartition: 2}); err != nil {
		t.Fatal(err)
	}
	returned, stop := spin(s, 8)
	defer stop()
	for c.calls.Load() < 2 { // readiness: p1 holds its two slots
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := s.AuthoritativeQuery(t.Context(), "p2", smallQuery); err != nil {
		t.Fatalf("p2's query: %v", err)
	}
	if n := returned.Load(); n != 0 {
		t.Errorf("p2's query returned after %d of p1's queries ended", n)
	}
	if n := c.calls.Load(); n != 3 {
		t.Errorf("driver calls: %d, want 3 (p1's two slots and p2's query)", n)
	}
}

// A query the engine stops at its Timeout names the caller's Timeout,
// not what was left of it after waiting for a slot.
func TestQueryTimeBoundNamesTheCallersTimeout(t *testing.T) {
	s, c := counted(t)
	if err := s.SetQueryConcurrency(sync.QueryConcurrency{PerStore: 1}); err != nil {
		t.Fatal(err)
	}
	first, second := spinQuery, spinQuery
	first.Limits.Timeout, second.Limits.Timeout = 300*time.Millisecond, 900*time.Millisecond
	done := make(chan error, 1)
	go func() { _, err := s.AuthoritativeQuery(t.Context(), "p1", first); done <- err }()
	for c.calls.Load() < 1 { // readiness: the first holds the one slot
		time.Sleep(5 * time.Millisecond)
	}
	// The second waits for the first's slot, then the engine stops it at
	// what is left of its 900 ms.
	_, err := s.AuthoritativeQuery(t.Context(), "p1", second)
	var le *sync.QueryLimitError
	if !errors.As(err, &le) || le.Bound != driver.BoundTime || le.Limit != 900 {
		t.Errorf("the second spin query under Timeout 900 ms: %v, want query_limit (time, 900 ms)", err)
	}
	if n := c.calls.Load(); n != 2 {
		t.Errorf("driver calls: %d, want 2", n)
	}
	if err := <-done; !errors.As(err, &le) || le.Limit != 300 {
		t.Errorf("the first spin query under Timeout 300 ms: %v, want query_limit (time, 300 ms)", err)
	}
}

// ERR-4: after Close an authoritative query fails with sync.storage.closed at
// once — it waited, before, for the slot a query still running at Close
// held, its whole Timeout, and reported the time bound.
func TestQueryAfterCloseIsClosedNotQueued(t *testing.T) {
	s, c := counted(t)
	_, stop := spin(s, 1)
	defer stop()
	for c.calls.Load() < 1 { // readiness: the spin query holds p1's slot
		time.Sleep(5 * time.Millisecond)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	q := smallQuery
	q.Limits.Timeout = 300 * time.Millisecond
	if _, err := s.AuthoritativeQuery(t.Context(), "p1", q); !errors.Is(err, sync.ErrClosed) {
		t.Errorf("AuthoritativeQuery after Close: %v, want sync.storage.closed (ERR-4)", err)
	}
}
