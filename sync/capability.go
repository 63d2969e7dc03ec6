package sync

import (
	"context"
	"fmt"

	"github.com/syncstore/syncstore/driver"
)

// This file is capability access: each optional capability of a driver is
// reached through a Store or Tx method that validates like the core ones
// and returns CodeUnsupported, naming the capability and the driver, when
// the driver lacks it (ERR-2) — never a panic, never a silent empty
// result. Index lookup is the model for the capabilities that follow.

// unsupported returns the ERR-2 error for capability c on the Store's
// driver.
func (s *Store) unsupported(op string, c Capability) error {
	e := driver.Errorf(CodeUnsupported, "%s: capability %s is not implemented by driver %s (ERR-2)", op, c, s.driverLabel())
	e.Capability = c
	return e
}

// driverLabel names the driver in messages: the registered name, else the
// Conn's Go type.
func (s *Store) driverLabel() string {
	if s.name != "" {
		return fmt.Sprintf("%q", s.name)
	}
	return fmt.Sprintf("%T", s.conn)
}

// ScanRowsByIndex is a capability call (IXL), made beside the engine: a
// host's own lookup of one partition.
//
// ScanRowsByIndex returns the rows of partition whose index columns equal
// q.Values position by position (nil matches NULL), ascending bytewise by
// id, after q.AfterRowID, at most q.Limit (IXL-1). Capability
// index-lookup: without it → CodeUnsupported with Capability set (ERR-2).
// Input is checked in IXL-2's order after V-1: unknown table
// (CodeUnknownTable), limit outside 1…1,000 (CodeInvalidLimit), undeclared
// index (CodeIndexNotFound), wrong value count
// (CodeIndexValueCountMismatch), value of the wrong type
// (CodeInvalidValue); then AfterRowID ("" or V-2).
func (s *Store) ScanRowsByIndex(ctx context.Context, partition string, q IndexQuery) (_ []Row, err error) {
	defer s.observe(&ctx, "Store.ScanRowsByIndex", partition).done(&err)
	if err := checkCtx(ctx, "ScanRowsByIndex"); err != nil {
		return *new([]Row), err
	}
	const op = "ScanRowsByIndex"
	ixl, ok := s.reader(ctx).(driver.IndexLookupConn)
	if !ok {
		return nil, s.unsupported(op, CapIndexLookup)
	}
	if err := idPartition.check(op, partition); err != nil {
		return nil, err
	}
	if err := s.schema.Load().checkIndexQuery(op, q); err != nil {
		return nil, err
	}
	return ixl.ScanRowsByIndex(ctx, partition, q)
}

// ScanRowsByIndex is Store.ScanRowsByIndex inside the Tx: the lookup sees
// the Tx's staged upserts, moves and deletes (IXL-3). A driver lacking
// either half of index-lookup → CodeUnsupported (ERR-2).
func (tx *Tx) ScanRowsByIndex(ctx context.Context, q IndexQuery) (_ []Row, err error) {
	defer tx.observe(&ctx, "Tx.ScanRowsByIndex").done(&err)
	if err := checkCtx(ctx, "Tx.ScanRowsByIndex"); err != nil {
		return *new([]Row), err
	}
	const op = "Tx.ScanRowsByIndex"
	ixl, ok := tx.tx.(driver.IndexLookupTx)
	if !ok || !tx.store.Supports(CapIndexLookup) { // both halves (ERR-3)
		return nil, tx.store.unsupported(op, CapIndexLookup)
	}
	if err := tx.schema.checkIndexQuery(op, q); err != nil {
		return nil, err
	}
	return ixl.ScanRowsByIndex(ctx, q)
}
