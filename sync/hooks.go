package sync

import (
	"context"

	"github.com/syncstore/syncstore/driver"
)

// Hooks observe a Store's calls, for tracing, metrics or logs (set with
// SetHooks). They see each call and its outcome and cannot change either:
// a call's arguments, results and error are what they would be without
// hooks, and so are the Store's capabilities (Capabilities, Supports) and
// its escape hatch (As). The zero value observes nothing, at the cost of
// one atomic load per call and no allocation.
//
// What is reported: one Call for each call of a Store or Tx method that
// reaches the driver — every method of driver.Conn and driver.Tx that
// Store and Tx carry, the capability methods (ScanRowsByIndex,
// AuthoritativeQuery, the admin, blob-refs and reactions methods),
// SubscribeCommits, Push, Pull, PullTo, Prune, RunInTx, the retention
// methods and Close — whoever makes it: the host, a Worker (its
// ClaimReactions, ExtendReactionLease, CompleteReaction and FailReaction
// calls), or the host's code that sync runs (RunInTx's fn,
// PushOptions.Authorize and PlanReactions, a PullSink's methods, whose
// calls report nested in the Call that runs them, with its context). The
// steps a method takes inside — Push's and RunInTx's own Begin and
// Commit, Pull's and Prune's driver reads — are not reported on their
// own: a Push is one Call. Methods that stay in
// memory (Schema, Capabilities, Supports, As, DriverName, Tx.Partition)
// are not reported, nor calls made on Conn() or Tx.Driver() directly.
//
// Calls rejected by validation (group V of docs/contract.md) are
// reported too, with their error: Start runs before the input is
// checked, so Call.Partition may be invalid.
type Hooks struct {
	// Start, if set, is called as a call begins, with the caller's
	// context (context.Background() in place of a nil one, which the call
	// then rejects) and the Call. It returns the context the call runs
	// with — ctx or one derived from it (a trace span's); nil keeps ctx
	// — and end, which sync calls exactly once when the call returns,
	// with the error the call returns (nil on success; an error of
	// CodeInternal when it panics, before the panic goes on). A nil end
	// is allowed.
	//
	// Start and end are called from the goroutines that make the calls,
	// concurrently for concurrent calls: they must be safe for concurrent
	// use, and quick (they run on every call's path). They must not call
	// the Store.
	Start func(ctx context.Context, c Call) (context.Context, func(err error))
}

// Call is one observed call.
type Call struct {
	// Op names the method: "Store." or "Tx." and its Go name, e.g.
	// "Store.Push", "Store.ClaimReactions", "Tx.Commit". Stable: a label
	// for metrics.
	Op string
	// Partition is the partition the call is on, as the caller passed it
	// (a Tx's calls: the Tx's partition); "" for calls on none
	// (EnsureSchema, ListPartitions, ListPartitionRegistry,
	// SubscribeCommits, Close). A partition name is the host's data:
	// never put it into an error message (V-10), and mind its
	// cardinality as a metrics label.
	Partition string
}

// SetHooks sets the hooks observing this Store's calls; Hooks{} removes
// them. Safe for concurrent use; calls already running keep the hooks
// they started with, and a Tx reports to the hooks set when each of its
// calls starts.
func (s *Store) SetHooks(h Hooks) {
	if h.Start == nil {
		s.hooks.Store(nil)
		return
	}
	s.hooks.Store(&h)
}

// observation is one observed call under way; its zero value observes
// nothing.
type observation struct {
	end func(error)
	op  string
}

// observe starts observing the call op on partition: with hooks set it
// calls Start and replaces *ctx with the context Start returns. Each
// method observes itself in one line, with a named error result:
//
//	defer s.observe(&ctx, "Store.X", partition).done(&err)
func (s *Store) observe(ctx *context.Context, op, partition string) observation {
	h := s.hooks.Load()
	if h == nil {
		return observation{}
	}
	in := *ctx
	if in == nil {
		in = context.Background()
	}
	out, end := h.Start(in, Call{Op: op, Partition: partition})
	if out != nil && *ctx != nil {
		*ctx = out
	}
	return observation{end: end, op: op}
}

// observe is Store.observe for a call on the Tx's partition.
func (tx *Tx) observe(ctx *context.Context, op string) observation {
	if tx.store.hooks.Load() == nil {
		return observation{}
	}
	return tx.store.observe(ctx, op, tx.tx.Partition())
}

// done ends the observation with the call's error; deferred, so a panic
// reaches end as CodeInternal and then goes on.
func (o observation) done(err *error) {
	if o.end == nil {
		return
	}
	if r := recover(); r != nil {
		o.end(driver.Errorf(CodeInternal, "%s panicked", o.op))
		panic(r)
	}
	o.end(*err)
}
