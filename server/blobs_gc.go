package server

import (
	"context"
	"errors"
	"time"

	"github.com/syncstore/syncstore/sync"
)

// DefaultBlobGrace is the grace period SPEC §5.9.2 suggests for the
// orphan sweep: an unreferenced blob younger than this is kept (its
// upload may still be waiting for the push that references it).
const DefaultBlobGrace = 24 * time.Hour

// blobSweepPage is how many blobs and referenced ids a sweep reads at
// once.
const blobSweepPage = 1000

// BlobSweep is what a sweep did.
type BlobSweep struct {
	// Scanned counts the blobs looked at, Deleted those removed.
	Scanned, Deleted int
	// Done is true when the sweep reached the partition's last blob;
	// false when it stopped at maxDelete (call again to go on).
	Done bool
}

// SweepOrphanBlobs deletes from blobs the blobs of partition that no row
// of store references (the reference index, capability blob-refs,
// BLOB-1) and that were stored before uploadedBeforeMs (epoch ms), at
// most maxDelete of them (1…1,000,000) — SPEC §5.9.2's host-scheduled
// sweep; nothing else ever deletes a blob. It walks the store's blobs and
// the index's referenced ids side by side in id order (one page of each
// at a time, 1,000 entries), and re-reads a candidate's referencing rows
// right before deleting it. A blob referenced by a push that commits
// between that re-read and the delete would be lost: the grace period
// (uploadedBeforeMs well before now, DefaultBlobGrace) is what makes that
// window unreachable in practice — a blob is referenced within its
// upload→push window, or by a client re-using an old id, which the
// sweep's re-read usually catches. Errors: a store without blob-refs →
// sync.CodeUnsupported; a failing BlobStore's error as is.
func SweepOrphanBlobs(ctx context.Context, store *sync.Store, blobs BlobStore, partition string, uploadedBeforeMs int64, maxDelete int) (BlobSweep, error) {
	var out BlobSweep
	if store == nil || blobs == nil {
		return out, errors.New("server: SweepOrphanBlobs: nil store or blob store")
	}
	if maxDelete < 1 || maxDelete > 1_000_000 {
		return out, errors.New("server: SweepOrphanBlobs: maxDelete must be 1…1,000,000")
	}
	var (
		after, refAfter string
		refs            []string
		refsDone        bool
	)
	// referenced reports whether id is in the index, advancing the
	// referenced-ids cursor (ids arrive ascending, as the blobs do).
	referenced := func(id string) (bool, error) {
		for {
			if len(refs) == 0 && !refsDone {
				page, err := store.ListReferencedBlobIDs(ctx, partition, refAfter, blobSweepPage)
				if err != nil {
					return false, err
				}
				refs, refsDone = page, len(page) < blobSweepPage
				if len(page) > 0 {
					refAfter = page[len(page)-1]
				}
			}
			if len(refs) == 0 || refs[0] >= id {
				return len(refs) > 0 && refs[0] == id, nil
			}
			refs = refs[1:]
		}
	}
	for {
		page, err := blobs.List(ctx, partition, after, blobSweepPage)
		if err != nil {
			return out, err
		}
		for _, b := range page {
			after = b.ID
			out.Scanned++
			isRef, err := referenced(b.ID)
			if err != nil {
				return out, err
			}
			if isRef || b.CreatedAtMs >= uploadedBeforeMs {
				continue
			}
			rows, err := store.ListRowsReferencingBlob(ctx, partition, b.ID, 1)
			if err != nil {
				return out, err
			}
			if len(rows) > 0 {
				continue
			}
			if err := blobs.Delete(ctx, partition, b.ID); err != nil {
				return out, err
			}
			out.Deleted++
			if out.Deleted == maxDelete {
				return out, nil
			}
		}
		if len(page) < blobSweepPage {
			out.Done = true
			return out, nil
		}
	}
}

// SweepOrphanBlobs is the package's SweepOrphanBlobs over the server's
// store and blob store, with uploadedBeforeMs = now − grace by the
// server's clock (grace ≥ 0; DefaultBlobGrace is the SPEC's). It fails
// when blobs are off.
func (s *Server) SweepOrphanBlobs(ctx context.Context, partition string, grace time.Duration, maxDelete int) (BlobSweep, error) {
	if s.blobs == nil {
		return BlobSweep{}, errors.New("server: blobs are off (Config.Blobs is nil)")
	}
	if grace < 0 {
		return BlobSweep{}, errors.New("server: SweepOrphanBlobs: negative grace")
	}
	return SweepOrphanBlobs(ctx, s.store, s.blobs.store, partition, s.cfg.Now().Add(-grace).UnixMilli(), maxDelete)
}
