package server

import (
	"context"
	"errors"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/ssp2"
	"github.com/syncstore/syncstore/sync"
)

// blobRefs is the push's blob step (SPEC §5.9.4, §5.9.6, §6.6), run by the
// engine inside the push's Tx for each op that passed its authorization
// and base-version check, before the op's other validation: for an upsert
// of a table with blob_ref columns, every non-NULL reference must name a
// blob the store holds — else the commit is rejected with blob.not_found
// (stored and replayed like any rejection, nothing written) — and the
// row's reference set becomes exactly those blob ids (Tx.SetBlobRefs,
// BLOB-1: in the commit's transaction, gone with its rollback). A delete
// references nothing: the engine clears the row's set itself.
func (r *round) blobRefs(ctx context.Context, tx *sync.Tx, in sync.OpInput) error {
	if in.Op.Op != sync.OpUpsert {
		return nil
	}
	t := r.s.tables[in.Op.Table]
	if len(t.blobCols) == 0 {
		return nil
	}
	ids := make([]string, 0, len(t.blobCols))
	for _, k := range t.blobCols {
		v := in.Op.Values[t.Columns[k].Name]
		if v == nil {
			continue
		}
		raw, ok := v.(driver.JSON)
		if !ok {
			return &sync.Refusal{Code: string(ssp2.CodeBlobNotFound), Message: "the row's blob reference is not a BlobRef (§5.9.1)"}
		}
		ref, err := ssp2.ParseBlobRef(raw)
		if err != nil {
			return &sync.Refusal{Code: string(ssp2.CodeBlobNotFound), Message: "the row's blob reference is not a BlobRef (§5.9.1)"}
		}
		if _, err := r.s.blobs.store.Stat(ctx, in.Partition, ref.BlobID); errors.Is(err, ErrBlobNotFound) {
			return &sync.Refusal{Code: string(ssp2.CodeBlobNotFound), Message: "the row references a blob that was never uploaded (§5.9.6)"}
		} else if err != nil {
			return err
		}
		ids = append(ids, ref.BlobID)
	}
	return tx.SetBlobRefs(ctx, in.Op.Table, in.Op.RowID, ids)
}
