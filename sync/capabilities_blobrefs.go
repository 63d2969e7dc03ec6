package sync

import (
	"context"

	"github.com/syncstore/syncstore/driver"
)

// Typed access to the blob-refs capability (docs/contract.md BLOB-1): which
// rows reference which blobs. Input is validated (group V) before the
// driver is called; a driver without the capability → CodeUnsupported
// with Capability "blob-refs" (ERR-2).

// idBlob is a blob id: an id under V-2.
var (
	idBlob      = idKind{"blob id", MaxIDBytes, "V-2"}
	idAfterBlob = idKind{"afterBlobID", MaxIDBytes, "V-2"}
)

// blobRefs returns the driver's blob-refs Conn half, or the ERR-2 error.
func (s *Store) blobRefs(op string) (driver.BlobRefsConn, error) {
	b, ok := s.conn.(driver.BlobRefsConn)
	if !ok {
		return nil, s.unsupported(op, CapBlobRefs)
	}
	return b, nil
}

// SetBlobRefs replaces the set of blob ids the row (table, rowID) of the
// Tx's partition references (BLOB-1): an empty or nil list clears it, a
// repeated id counts once; deleting the row clears it too. It lands with
// the Tx's Commit and vanishes with its Rollback. Checks: a known table
// (CodeUnknownTable, SCH-8); rowID and every blob id 1…255 bytes of valid
// UTF-8 without NUL (CodeInvalidArgument, V-2). The driver's Tx lacking
// the blob-refs Tx half → CodeUnsupported (ERR-2).
func (tx *Tx) SetBlobRefs(ctx context.Context, table, rowID string, blobIDs []string) (err error) {
	defer tx.observe(&ctx, "Tx.SetBlobRefs").done(&err)
	if err := checkCtx(ctx, "Tx.SetBlobRefs"); err != nil {
		return err
	}
	const op = "Tx.SetBlobRefs"
	b, ok := tx.tx.(driver.BlobRefsTx)
	if !ok {
		return tx.store.unsupported(op, CapBlobRefs)
	}
	if _, err := tx.schema.table(op, table); err != nil {
		return err
	}
	if err := idRow.check(op, rowID); err != nil {
		return err
	}
	for _, id := range blobIDs {
		if err := idBlob.check(op, id); err != nil {
			return err
		}
	}
	return b.SetBlobRefs(ctx, table, rowID, blobIDs)
}

// ListRowsReferencingBlob is a capability call (BLOB-1), made beside the
// engine: for a blob store's garbage collector.
//
// ListRowsReferencingBlob returns the existing rows of partition that
// reference blobID, each with its table, id and current scopes, at most
// limit (BLOB-1; no order is promised). Checks: V-1 partition, V-2 blob
// id, limit 1…10,000 (CodeInvalidLimit, V-5).
func (s *Store) ListRowsReferencingBlob(ctx context.Context, partition, blobID string, limit int) (_ []BlobRowRef, err error) {
	defer s.observe(&ctx, "Store.ListRowsReferencingBlob", partition).done(&err)
	if err := checkCtx(ctx, "ListRowsReferencingBlob"); err != nil {
		return *new([]BlobRowRef), err
	}
	const op = "ListRowsReferencingBlob"
	b, err := s.blobRefs(op)
	if err != nil {
		return nil, err
	}
	if err := firstErr(idPartition.check(op, partition), idBlob.check(op, blobID), checkLimit(op, "limit", limit, MaxLimit)); err != nil {
		return nil, err
	}
	return b.ListRowsReferencingBlob(ctx, partition, blobID, limit)
}

// ListReferencedBlobIDs is a capability call (BLOB-1), made beside the
// engine: for a blob store's garbage collector.
//
// ListReferencedBlobIDs returns the distinct blob ids referenced in
// partition that are greater than afterBlobID ("" = from the start),
// ascending bytewise, at most limit: paging by the last id returns every
// id once (BLOB-1). Checks: V-1 partition, afterBlobID "" or V-2, limit
// 1…10,000 (V-5).
func (s *Store) ListReferencedBlobIDs(ctx context.Context, partition, afterBlobID string, limit int) (_ []string, err error) {
	defer s.observe(&ctx, "Store.ListReferencedBlobIDs", partition).done(&err)
	if err := checkCtx(ctx, "ListReferencedBlobIDs"); err != nil {
		return *new([]string), err
	}
	const op = "ListReferencedBlobIDs"
	b, err := s.blobRefs(op)
	if err != nil {
		return nil, err
	}
	if err := firstErr(idPartition.check(op, partition), idAfterBlob.checkOptional(op, afterBlobID),
		checkLimit(op, "limit", limit, MaxLimit)); err != nil {
		return nil, err
	}
	return b.ListReferencedBlobIDs(ctx, partition, afterBlobID, limit)
}
