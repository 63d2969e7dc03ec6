package sync

import (
	"context"
	"errors"
	gosync "sync"
	"time"

	"github.com/syncstore/syncstore/driver"
)

// QueryConcurrency bounds how many authoritative queries a Store runs at
// once (AQ-7): at most PerStore of the Store's queries, and at most
// PerPartition of one partition's, run on the engine at the same time; a
// query past either waits for a slot, and the wait counts against its
// QueryLimits.Timeout. Zero fields are the defaults
// (DefaultQueriesPerStore, DefaultQueriesPerPartition). A driver whose
// queries share connections with pushes and pulls caps PerStore below its
// pool (driver.QuerySlotsConn): postgres at half of pool_max_conns.
type QueryConcurrency struct {
	// PerStore bounds the queries of the Store running at once, over
	// every partition. 0: DefaultQueriesPerStore.
	PerStore int
	// PerPartition bounds the queries of one partition running at once.
	// 0: DefaultQueriesPerPartition. A value above PerStore acts as
	// PerStore.
	PerPartition int
}

// The defaults and maximum of QueryConcurrency (AQ-7).
const (
	DefaultQueriesPerStore     = 4
	DefaultQueriesPerPartition = 1
	MaxQueriesPerStore         = 1024
)

// queryGrace is how long after a query's Timeout sync lets the driver
// report its engine's own time-limit error before it cancels the call's
// context (which also ends a wait for a connection inside the driver).
const queryGrace = time.Second

// SetQueryConcurrency sets the Store's authoritative-query concurrency
// (AQ-7) for the queries that start after it; queries already running or
// waiting keep the slots of the setting they started under. A negative
// field, or one above MaxQueriesPerStore → CodeInvalidLimit, and the
// setting in force stays. Safe for concurrent use.
func (s *Store) SetQueryConcurrency(c QueryConcurrency) error {
	bad := func(field string, v int) error {
		return driver.Errorf(CodeInvalidLimit, "SetQueryConcurrency: %s is %d; want 0 (the default) or 1…%d (V-5, AQ-7)", field, v, MaxQueriesPerStore)
	}
	switch {
	case c.PerStore < 0 || c.PerStore > MaxQueriesPerStore:
		return bad("PerStore", c.PerStore)
	case c.PerPartition < 0 || c.PerPartition > MaxQueriesPerStore:
		return bad("PerPartition", c.PerPartition)
	}
	s.queries.Store(newQueryLimiter(c, s.conn))
	return nil
}

// QueryConcurrency returns the limits in force: the setting's with its
// defaults filled in and PerStore capped by the driver's QuerySlots.
func (s *Store) QueryConcurrency() QueryConcurrency {
	l := s.queryLimiter()
	return QueryConcurrency{PerStore: cap(l.store), PerPartition: l.perPartition}
}

// queryLimiter returns the Store's limiter, made with the defaults on
// first use.
func (s *Store) queryLimiter() *queryLimiter {
	if l := s.queries.Load(); l != nil {
		return l
	}
	s.queries.CompareAndSwap(nil, newQueryLimiter(QueryConcurrency{}, s.conn))
	return s.queries.Load()
}

// queryLimiter hands out query slots: one of the store's and one of the
// partition's. Waiters are served in arrival order per channel.
type queryLimiter struct {
	store        chan struct{}
	perPartition int
	mu           gosync.Mutex
	parts        map[string]*partitionSlots // partitions with a query running or waiting
}

type partitionSlots struct {
	slots chan struct{}
	refs  int // queries running or waiting
}

func newQueryLimiter(c QueryConcurrency, conn driver.Conn) *queryLimiter {
	store, part := c.PerStore, c.PerPartition
	if store == 0 {
		store = DefaultQueriesPerStore
	}
	if qs, ok := conn.(driver.QuerySlotsConn); ok {
		store = min(store, max(qs.QuerySlots(), 1))
	}
	if part == 0 {
		part = DefaultQueriesPerPartition
	}
	part = min(part, store)
	return &queryLimiter{store: make(chan struct{}, store), perPartition: part, parts: map[string]*partitionSlots{}}
}

// acquire waits for a slot of partition's and then one of the store's
// (so a partition's queued queries never hold store slots), until ctx
// ends or closed is closed (then errQuerySlotClosed). It returns the
// release func, or ctx's error.
func (l *queryLimiter) acquire(ctx context.Context, partition string, closed <-chan struct{}) (func(), error) {
	l.mu.Lock()
	ps := l.parts[partition]
	if ps == nil {
		ps = &partitionSlots{slots: make(chan struct{}, l.perPartition)}
		l.parts[partition] = ps
	}
	ps.refs++
	l.mu.Unlock()
	unref := func() {
		l.mu.Lock()
		if ps.refs--; ps.refs == 0 {
			delete(l.parts, partition)
		}
		l.mu.Unlock()
	}
	select {
	case ps.slots <- struct{}{}:
	case <-ctx.Done():
		unref()
		return nil, ctx.Err()
	case <-closed:
		unref()
		return nil, errQuerySlotClosed
	}
	select {
	case l.store <- struct{}{}:
	case <-ctx.Done():
		<-ps.slots
		unref()
		return nil, ctx.Err()
	case <-closed:
		<-ps.slots
		unref()
		return nil, errQuerySlotClosed
	}
	return func() {
		<-l.store
		<-ps.slots
		unref()
	}, nil
}

// errQuerySlotClosed ends a wait for a query slot when the Store closes.
var errQuerySlotClosed = errors.New("sync: the Store closed")

// closedQuery is the error of a query the Store refuses once closed (ERR-4).
func closedQuery() error {
	return driver.Errorf(CodeClosed, "AuthoritativeQuery: the Store is closed (ERR-4)")
}

// runQuery runs q on aq under the Store's query slots (AQ-7): the wait
// for a slot and the driver's call, wait for a connection included, fit
// in q's Timeout. A query that gets no slot within its Timeout returns
// the time bound without reaching the driver; the driver gets the
// Timeout left, and a call still running queryGrace past the deadline is
// cancelled and reported as the time bound.
func (s *Store) runQuery(ctx context.Context, aq driver.AuthoritativeQueryConn, partition string, q Query) (QueryResult, error) {
	lim := q.Limits.WithDefaults()
	deadline := time.Now().Add(lim.Timeout)
	timeBound := func(cause error, what string) error {
		return driver.NewQueryLimitError(driver.BoundTime, lim.TimeoutMillis(), cause, "sync: authoritative query "+what)
	}
	select {
	case <-s.closed:
		return QueryResult{}, closedQuery()
	default:
	}
	wctx, cancel := context.WithDeadline(ctx, deadline)
	release, err := s.queryLimiter().acquire(wctx, partition, s.closed)
	cancel()
	if errors.Is(err, errQuerySlotClosed) {
		return QueryResult{}, closedQuery()
	}
	if err != nil {
		if ctx.Err() != nil {
			return QueryResult{}, driver.Wrap(CodeUnavailable, ctx.Err(), "AuthoritativeQuery: the context ended while waiting for a query slot")
		}
		return QueryResult{}, timeBound(nil, "waited its whole Timeout for a query slot (AQ-7)")
	}
	defer release()
	left := time.Until(deadline)
	if left < time.Millisecond {
		return QueryResult{}, timeBound(nil, "waited its whole Timeout for a query slot (AQ-7)")
	}
	q.Limits.Timeout = left
	dctx, cancel := context.WithDeadline(ctx, deadline.Add(queryGrace))
	defer cancel()
	res, err := aq.AuthoritativeQuery(dctx, partition, q)
	if err != nil && ctx.Err() == nil && dctx.Err() != nil && driver.CodeOf(err) != CodeQueryLimit {
		return QueryResult{}, timeBound(nil, "ran past its Timeout, waiting for a connection included (AQ-7)")
	}
	// The driver's own time bound names the Timeout it was given (what
	// was left after the wait); the caller's error names the caller's.
	var le *driver.QueryLimitError
	if errors.As(err, &le) && le.Bound == driver.BoundTime && le.Limit != lim.TimeoutMillis() {
		var cause error
		if e, ok := le.Unwrap().(*driver.Error); ok {
			cause = e.Err
		}
		return QueryResult{}, timeBound(cause, "ran past its Timeout on the engine")
	}
	return res, err
}
